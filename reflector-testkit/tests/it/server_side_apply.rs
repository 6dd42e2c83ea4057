//! Server-side apply and `managedFields` over HTTP, with kube's `Patch::Apply` as kube-rs
//! users write it, checked against the real fieldmanager's answers (issue 21, row 3), and
//! the protobuf answers (row 13).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{Widget, WidgetSpec, WidgetStatus, serve_widgets, status_of};

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn api(server: &ApiServer) -> Api<DynamicObject> {
    let resource = kube::api::ApiResource::erase::<ConfigMap>(&());
    Api::namespaced_with(server.client_without_retries(), "default", &resource)
}

/// Applies `config` with `params`; the answer as JSON.
async fn apply_with(
    server: &ApiServer,
    params: &PatchParams,
    config: Value,
) -> Result<Value, kube::Error> {
    let name = config["metadata"]["name"].as_str().unwrap().to_owned();
    let object = api(server)
        .patch(&name, params, &Patch::Apply(config))
        .await?;
    Ok(serde_json::to_value(object).unwrap())
}

async fn apply(server: &ApiServer, manager: &str, config: Value) -> Result<Value, kube::Error> {
    apply_with(server, &PatchParams::apply(manager), config).await
}

async fn force_apply(server: &ApiServer, manager: &str, config: Value) -> Value {
    let params = PatchParams::apply(manager).force();
    apply_with(server, &params, config).await.unwrap()
}

/// `managedFields` as `(manager, operation, subresource, fieldsV1)`.
fn owners(object: &Value) -> Vec<(String, String, String, Value)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    let text = |f: &str| e[f].as_str().unwrap_or_default().to_owned();
                    (
                        text("manager"),
                        text("operation"),
                        text("subresource"),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn owner(manager: &str, operation: &str, fields: Value) -> (String, String, String, Value) {
    (
        manager.to_owned(),
        operation.to_owned(),
        String::new(),
        fields,
    )
}

fn last_status(server: &ApiServer) -> u16 {
    server.request_log().last().map(|e| e.status).unwrap()
}

#[tokio::test]
async fn apply_creates_an_absent_object_and_a_repeated_apply_changes_nothing() {
    let server = ApiServer::start().await.unwrap();
    let config = config_map("cm", json!({"a": "1"}));
    let created = apply(&server, "mgr", config.clone()).await.unwrap();
    assert_eq!(last_status(&server), 201);
    assert_eq!(created["data"], json!({"a": "1"}));
    let entry = &created["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "mgr");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    assert!(
        entry["time"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{entry}"
    );
    assert_eq!(
        created["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let again = apply(&server, "mgr", config).await.unwrap();
    assert_eq!(last_status(&server), 200);
    assert_eq!(
        again["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"],
        "a no-op apply bumps nothing"
    );
    let changed = apply(&server, "mgr", config_map("cm", json!({"a": "2"})))
        .await
        .unwrap();
    assert_ne!(
        changed["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(changed["data"], json!({"a": "2"}));
}

#[tokio::test]
async fn a_second_manager_conflicts_with_the_real_message_and_causes() {
    let server = ApiServer::start().await.unwrap();
    apply(&server, "mgr-a", config_map("cm", json!({"key": "1"})))
        .await
        .unwrap();
    let status = status_of(apply(&server, "mgr-b", config_map("cm", json!({"key": "2"}))).await);
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        r#"Apply failed with 1 conflict: conflict with "mgr-a": .data.key"#
    );
    let causes = status.details.unwrap().causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].message, r#"conflict with "mgr-a""#);
    assert_eq!(causes[0].field, ".data.key");

    // An `Update` owner is named with its apiVersion; several fields are listed.
    let post = PostParams {
        field_manager: Some("creator".to_owned()),
        ..PostParams::default()
    };
    let object: DynamicObject =
        serde_json::from_value(config_map("other", json!({"a": "1", "b": "1"}))).unwrap();
    let created = api(&server).create(&post, &object).await.unwrap();
    let created = serde_json::to_value(created).unwrap();
    assert_eq!(
        owners(&created),
        [owner(
            "creator",
            "Update",
            json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
        )]
    );
    let config = config_map("other", json!({"a": "2", "b": "2"}));
    let status = status_of(apply(&server, "mgr", config).await);
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"creator\" using v1:\n- .data.a\n- .data.b"
    );
    let fields: Vec<_> = status
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| (c.message, c.field))
        .collect();
    let using = r#"conflict with "creator" using v1"#.to_owned();
    assert_eq!(
        fields,
        [
            (using.clone(), ".data.a".to_owned()),
            (using, ".data.b".to_owned())
        ]
    );
}

#[tokio::test]
async fn force_takes_ownership_and_moves_the_field() {
    let server = ApiServer::start().await.unwrap();
    apply(
        &server,
        "mgr-a",
        config_map("cm", json!({"key": "1", "mine": "a"})),
    )
    .await
    .unwrap();
    let forced = force_apply(&server, "mgr-b", config_map("cm", json!({"key": "2"}))).await;
    assert_eq!(forced["data"], json!({"key": "2", "mine": "a"}));
    assert_eq!(
        owners(&forced),
        [
            owner("mgr-a", "Apply", json!({"f:data": {"f:mine": {}}})),
            owner("mgr-b", "Apply", json!({"f:data": {"f:key": {}}})),
        ]
    );
    // A manager that loses its last field disappears.
    let forced = force_apply(
        &server,
        "mgr-b",
        config_map("cm", json!({"key": "3", "mine": "b"})),
    )
    .await;
    assert_eq!(
        owners(&forced),
        [owner(
            "mgr-b",
            "Apply",
            json!({"f:data": {"f:key": {}, "f:mine": {}}})
        )]
    );
}

#[tokio::test]
async fn equal_values_are_owned_together_and_stay_while_one_owner_applies_them() {
    let server = ApiServer::start().await.unwrap();
    apply(&server, "mgr-a", config_map("cm", json!({"key": "1"})))
        .await
        .unwrap();
    let shared = apply(&server, "mgr-b", config_map("cm", json!({"key": "1"})))
        .await
        .unwrap();
    let both = json!({"f:data": {"f:key": {}}});
    // mgr-b's apply changed nothing, so its entry has no time and sorts first, as the
    // real server's (which orders by operation, then time, then manager).
    assert_eq!(
        owners(&shared),
        [
            owner("mgr-b", "Apply", both.clone()),
            owner("mgr-a", "Apply", both.clone())
        ]
    );
    assert!(
        shared["metadata"]["managedFields"][0].get("time").is_none(),
        "{shared}"
    );
    // mgr-a stops applying it: mgr-b still owns it, so it stays.
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
    let kept = apply(&server, "mgr-a", config.clone()).await.unwrap();
    assert_eq!(kept["data"], json!({"key": "1"}));
    assert_eq!(owners(&kept), [owner("mgr-b", "Apply", both)]);
    // mgr-b stops too: now it goes.
    let gone = apply(&server, "mgr-b", config).await.unwrap();
    assert!(gone.get("data").is_none(), "{gone}");
    assert!(gone["metadata"].get("managedFields").is_none(), "{gone}");
}

#[tokio::test]
async fn reapplying_without_a_field_removes_it_but_not_what_others_set() {
    let server = ApiServer::start().await.unwrap();
    let mut config = config_map("cm", json!({"a": "1", "b": "1"}));
    config["metadata"]["labels"] = json!({"app": "x"});
    apply(&server, "mgr", config).await.unwrap();
    // Another writer adds a key with a merge patch (an `Update` owner).
    let patch = PatchParams {
        field_manager: Some("editor".to_owned()),
        ..PatchParams::default()
    };
    api(&server)
        .patch("cm", &patch, &Patch::Merge(json!({"data": {"c": "1"}})))
        .await
        .unwrap();
    let pruned = apply(&server, "mgr", config_map("cm", json!({"a": "1"})))
        .await
        .unwrap();
    assert_eq!(pruned["data"], json!({"a": "1", "c": "1"}));
    assert!(pruned["metadata"].get("labels").is_none(), "{pruned}");
    assert_eq!(
        owners(&pruned),
        [
            owner("mgr", "Apply", json!({"f:data": {"f:a": {}}})),
            owner("editor", "Update", json!({"f:data": {"f:c": {}}})),
        ]
    );
}

#[tokio::test]
async fn managed_fields_follow_create_update_patch_apply_and_status_writes() {
    let (server, widgets) = serve_widgets().await;
    let mut widget = Widget::new("w", WidgetSpec { replicas: 1 });
    widget.metadata.labels = Some([("app".to_owned(), "w".to_owned())].into());
    let post = |manager: &str| PostParams {
        field_manager: Some(manager.to_owned()),
        ..PostParams::default()
    };
    let created = widgets.create(&post("creator"), &widget).await.unwrap();
    let value = serde_json::to_value(&created).unwrap();
    assert_eq!(
        owners(&value),
        [owner(
            "creator",
            "Update",
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                   "f:spec": {".": {}, "f:replicas": {}}})
        )]
    );
    // A replace by another manager takes the field it changed.
    let mut replaced = created.clone();
    replaced.spec.replicas = 2;
    let replaced = widgets
        .replace("w", &post("updater"), &replaced)
        .await
        .unwrap();
    let value = serde_json::to_value(&replaced).unwrap();
    assert_eq!(
        owners(&value),
        [
            owner(
                "creator",
                "Update",
                json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {}})
            ),
            owner("updater", "Update", json!({"f:spec": {"f:replicas": {}}})),
        ]
    );
    // A status write is its own entry, with `subresource: status`.
    let status_patch = PatchParams {
        field_manager: Some("status-writer".to_owned()),
        ..PatchParams::default()
    };
    let patched = widgets
        .patch_status(
            "w",
            &status_patch,
            &Patch::Merge(json!({"status": {"ready": 2}})),
        )
        .await
        .unwrap();
    let value = serde_json::to_value(&patched).unwrap();
    let status_entry = owners(&value)
        .into_iter()
        .find(|o| o.0 == "status-writer")
        .unwrap();
    assert_eq!(status_entry.1, "Update");
    assert_eq!(status_entry.2, "status");
    assert_eq!(
        status_entry.3,
        json!({"f:status": {".": {}, "f:ready": {}}})
    );
    // The same manager's later update merges into its entry; a write without
    // `fieldManager` is owned by the user agent's product name.
    let mut request = http::Request::builder()
        .method("PATCH")
        .uri("/apis/testkit.example.com/v1/namespaces/default/widgets/w")
        .header("content-type", "application/merge-patch+json")
        .header("user-agent", "my-tool/1.2 (linux)")
        .body(br#"{"metadata":{"annotations":{"n":"1"}}}"#.to_vec())
        .unwrap();
    request
        .headers_mut()
        .insert("accept", http::HeaderValue::from_static("application/json"));
    let patched: Value = server
        .client_without_retries()
        .request(request)
        .await
        .unwrap();
    let by_agent = owners(&patched)
        .into_iter()
        .find(|o| o.0 == "my-tool")
        .unwrap();
    assert_eq!(
        by_agent.3,
        json!({"f:metadata": {"f:annotations": {".": {}, "f:n": {}}}})
    );
    // An apply of the value another manager set shares it; one that changes it conflicts.
    let config = json!({"apiVersion": "testkit.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"replicas": 2}});
    let applied = widgets
        .patch("w", &PatchParams::apply("applier"), &Patch::Apply(config))
        .await
        .unwrap();
    let value = serde_json::to_value(&applied).unwrap();
    assert_eq!(
        owners(&value)[0],
        owner("applier", "Apply", json!({"f:spec": {"f:replicas": {}}}))
    );
    let config = json!({"apiVersion": "testkit.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"replicas": 3}});
    let status = status_of(
        widgets
            .patch("w", &PatchParams::apply("other"), &Patch::Apply(config))
            .await,
    );
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"applier\":\n- .spec.replicas\nconflicts with \"updater\" using testkit.example.com/v1:\n- .spec.replicas"
    );
    // Status by apply on the subresource.
    let config = json!({"apiVersion": "testkit.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "status": {"ready": 5}});
    let applied = widgets
        .patch_status(
            "w",
            &PatchParams::apply("status-applier").force(),
            &Patch::Apply(config),
        )
        .await
        .unwrap();
    assert_eq!(applied.status, Some(WidgetStatus { ready: 5 }));
    let value = serde_json::to_value(&applied).unwrap();
    let entry = owners(&value)
        .into_iter()
        .find(|o| o.0 == "status-applier")
        .unwrap();
    assert_eq!((entry.1.as_str(), entry.2.as_str()), ("Apply", "status"));
    assert_eq!(entry.3, json!({"f:status": {"f:ready": {}}}));
    // The forced apply took `.status.ready`; status-writer keeps `.status` itself,
    // which its write added.
    let status_writer = owners(&value)
        .into_iter()
        .find(|o| o.0 == "status-writer")
        .unwrap();
    assert_eq!(status_writer.3, json!({"f:status": {}}));
}

#[tokio::test]
async fn apply_without_field_manager_is_the_real_422() {
    let server = ApiServer::start().await.unwrap();
    let result = apply_with(
        &server,
        &PatchParams::default(),
        config_map("cm", json!({})),
    )
    .await;
    let status = status_of(result);
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert_eq!(
        status.message,
        r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
    );
    let details = status.details.unwrap();
    assert_eq!(
        (details.kind.as_str(), details.group.as_str()),
        ("PatchOptions", "meta.k8s.io")
    );
    assert_eq!(details.causes[0].reason, "FieldValueRequired");
    assert_eq!(details.causes[0].field, "fieldManager");
    // `force` is for apply only (checked before the object is looked up, as the real
    // `ValidatePatchOptions`).
    let request = http::Request::builder()
        .method("PATCH")
        .uri("/api/v1/namespaces/default/configmaps/absent?force=true")
        .header("content-type", "application/merge-patch+json")
        .body(b"{}".to_vec())
        .unwrap();
    let status = status_of(
        server
            .client_without_retries()
            .request::<Value>(request)
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        r#"PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch"#
    );
}

#[tokio::test]
async fn keyed_lists_merge_by_key_and_atomic_lists_are_replaced() {
    // A Deployment's Pod template: a Pod's own spec may not add containers once created.
    let server = ApiServer::start().await.unwrap();
    server.register_resource::<Deployment>();
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        server.client_without_retries(),
        "default",
        &kube::api::ApiResource::erase::<Deployment>(&()),
    );
    let deployment = |containers: Value, tolerations: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p"},
            "spec": {"template": {"spec": {"containers": containers, "tolerations": tolerations}}}})
    };
    let template_spec = |deployment: &DynamicObject| {
        serde_json::from_value::<k8s_openapi::api::core::v1::PodSpec>(
            deployment.data["spec"]["template"]["spec"].clone(),
        )
        .unwrap()
    };
    let first = deployment(
        json!([{"name": "a", "image": "a:1"}]),
        json!([{"key": "x"}]),
    );
    deployments
        .patch("p", &PatchParams::apply("mgr-a"), &Patch::Apply(first))
        .await
        .unwrap();
    let second = deployment(
        json!([{"name": "b", "image": "b:1"}]),
        json!([{"key": "x"}]),
    );
    let merged = deployments
        .patch("p", &PatchParams::apply("mgr-b"), &Patch::Apply(second))
        .await
        .unwrap();
    let names: Vec<_> = template_spec(&merged)
        .containers
        .iter()
        .map(|c| c.name.clone())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let value = serde_json::to_value(&merged).unwrap();
    let b_fields = json!({"f:spec": {"f:template": {"f:spec": {
        "f:containers": {r#"k:{"name":"b"}"#: {".": {}, "f:image": {}, "f:name": {}}},
        "f:tolerations": {}}}}});
    assert_eq!(owners(&value)[1], owner("mgr-b", "Apply", b_fields));
    // Changing a's image or the (atomic) tolerations conflicts with mgr-a.
    let third = deployment(
        json!([{"name": "a", "image": "a:2"}]),
        json!([{"key": "y"}]),
    );
    let status = status_of(
        deployments
            .patch("p", &PatchParams::apply("mgr-b"), &Patch::Apply(third))
            .await,
    );
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"mgr-a\":\n- .spec.template.spec.containers[name=\"a\"].image\n- .spec.template.spec.tolerations"
    );
    // Forced, mgr-b's container b (applied before, not now, owned by no one else) goes.
    let third = deployment(
        json!([{"name": "a", "image": "a:2"}]),
        json!([{"key": "y"}]),
    );
    let forced = deployments
        .patch(
            "p",
            &PatchParams::apply("mgr-b").force(),
            &Patch::Apply(third),
        )
        .await
        .unwrap();
    let spec = template_spec(&forced);
    let images: Vec<_> = spec
        .containers
        .iter()
        .map(|c| c.image.clone().unwrap_or_default())
        .collect();
    assert_eq!(images, ["a:2"]);
    assert_eq!(spec.tolerations.unwrap()[0].key.as_deref(), Some("y"));
}

#[tokio::test]
async fn a_resource_version_in_the_applied_config_is_a_precondition() {
    let server = ApiServer::start().await.unwrap();
    let created = apply(&server, "mgr", config_map("cm", json!({"a": "1"})))
        .await
        .unwrap();
    let mut stale = config_map("cm", json!({"a": "2"}));
    stale["metadata"]["resourceVersion"] = json!("1");
    let status = status_of(apply(&server, "mgr", stale).await);
    assert_eq!(status.code, 409);
    assert!(
        status.message.contains("the object has been modified"),
        "{}",
        status.message
    );
    let mut fresh = config_map("cm", json!({"a": "2"}));
    fresh["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    assert_eq!(
        apply(&server, "mgr", fresh).await.unwrap()["data"]["a"],
        "2"
    );
}

#[tokio::test]
async fn a_yaml_body_as_kubectl_sends_it_applies() {
    let server = ApiServer::start().await.unwrap();
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  creationTimestamp: null\ndata:\n  key: value\n";
    let request = http::Request::builder()
        .method("PATCH")
        .uri("/api/v1/namespaces/default/configmaps/cm?fieldManager=kubectl&force=false")
        .header("content-type", "application/apply-patch+yaml")
        .body(yaml.as_bytes().to_vec())
        .unwrap();
    let created: Value = server
        .client_without_retries()
        .request(request)
        .await
        .unwrap();
    assert_eq!(created["data"], json!({"key": "value"}));
    assert_eq!(
        owners(&created),
        [owner("kubectl", "Apply", json!({"f:data": {"f:key": {}}}))]
    );
}

#[tokio::test]
async fn fields_of_an_object_without_managed_fields_belong_to_before_first_apply() {
    let server = ApiServer::start().await.unwrap();
    let mut seeded: ConfigMap =
        serde_json::from_value(config_map("seeded", json!({"key": "1"}))).unwrap();
    seeded.metadata.namespace = Some("default".to_owned());
    server.insert(&seeded).unwrap();
    let status = status_of(apply(&server, "mgr", config_map("seeded", json!({"key": "2"}))).await);
    assert_eq!(
        status.message,
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.key"#
    );
    let shared = apply(&server, "mgr", config_map("seeded", json!({"key": "1"})))
        .await
        .unwrap();
    assert_eq!(
        owners(&shared),
        [
            owner("mgr", "Apply", json!({"f:data": {"f:key": {}}})),
            owner(
                "before-first-apply",
                "Update",
                json!({"f:data": {".": {}, "f:key": {}}})
            ),
        ]
    );
}

#[tokio::test]
async fn an_update_may_set_managed_fields_and_an_empty_entry_clears_them() {
    let server = ApiServer::start().await.unwrap();
    let post = PostParams {
        field_manager: Some("creator".to_owned()),
        ..PostParams::default()
    };
    let object: DynamicObject =
        serde_json::from_value(config_map("cm", json!({"a": "1"}))).unwrap();
    let created = api(&server).create(&post, &object).await.unwrap();
    assert_eq!(
        created.metadata.managed_fields.as_ref().map(Vec::len),
        Some(1)
    );
    // Sent back unchanged (as clients that round-trip objects do), they are kept.
    let same = api(&server)
        .replace("cm", &PostParams::default(), &created)
        .await
        .unwrap();
    assert_eq!(
        same.metadata.managed_fields,
        created.metadata.managed_fields
    );
    assert_eq!(
        same.metadata.resource_version,
        created.metadata.resource_version
    );
    // `[{}]` resets them: with nothing else changed, no entry is left.
    let mut reset = serde_json::to_value(&created).unwrap();
    reset["metadata"]["managedFields"] = json!([{}]);
    let reset: DynamicObject = serde_json::from_value(reset).unwrap();
    let cleared = api(&server)
        .replace("cm", &PostParams::default(), &reset)
        .await
        .unwrap();
    assert!(cleared.metadata.managed_fields.is_none(), "{cleared:?}");
    assert_ne!(
        cleared.metadata.resource_version,
        created.metadata.resource_version
    );
}
