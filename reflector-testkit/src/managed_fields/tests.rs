//! Tests of the managed-fields bookkeeping.

use super::*;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};

fn paths(set: &FieldSet) -> Vec<String> {
    set.paths()
        .iter()
        .map(|p| crate::field_set::path_string(p))
        .collect()
}

#[test]
fn field_set_keys_containers_and_strips_server_metadata() {
    let info = ResourceInfo::of::<Pod>(true);
    let scope = Scope::new(&info, false);
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}],
                 "tolerations": [{"key": "k"}]}});
    let set = scope.field_set(&pod).unwrap();
    assert_eq!(
        paths(&set),
        [
            ".metadata.labels.a",
            r#".spec.containers[name="c"]"#,
            r#".spec.containers[name="c"].image"#,
            r#".spec.containers[name="c"].name"#,
            r#".spec.containers[name="c"].ports[containerPort=80,protocol="TCP"]"#,
            r#".spec.containers[name="c"].ports[containerPort=80,protocol="TCP"].containerPort"#,
            ".spec.tolerations",
        ]
    );
    let nameless = json!({"spec": {"containers": [{"image": "i"}]}});
    let error = scope.field_set(&nameless).unwrap_err();
    assert!(
        error.starts_with(".spec.containers: element 0: associative list"),
        "{error}"
    );
}

#[test]
fn compare_marks_new_maps_as_added_and_changed_leaves_as_modified() {
    let info = ResourceInfo::of::<ConfigMap>(false);
    let scope = Scope::new(&info, false);
    let old = json!({"metadata": {}, "data": {"a": "1", "gone": "x"}});
    let new = json!({"metadata": {"labels": {"l": "v"}}, "data": {"a": "2"}});
    let c = compare(&scope, &old, &new);
    assert_eq!(paths(&c.added), [".metadata.labels", ".metadata.labels.l"]);
    assert_eq!(paths(&c.modified), [".data.a"]);
    assert_eq!(paths(&c.removed), [".data.gone"]);
}
