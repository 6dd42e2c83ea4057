//! Custom resources as a real apiextensions-apiserver (Kubernetes 1.37) serves them, one
//! test per behaviour a client sees: CEL rules, `selectableFields`, dry runs,
//! unconditional updates, group discovery, and the headers and list fields every answer
//! carries.

use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, WatchEvent};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{
    CRDS, PATIENCE, create, create_crd, send_json, send_json_raw, send_raw, structural_widget,
    structural_widget_crd, structural_widgets, watch_from,
};

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A server serving [`structural_widget_crd`].
async fn serve() -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    create_crd(&server, structural_widget_crd()).await;
    server
}

/// Creates widget `name` with `spec` over HTTP; returns the stored object.
async fn create_widget(server: &ApiServer, name: &str, spec: Value) -> Value {
    let body = serde_json::to_value(structural_widget(name, spec)).unwrap();
    let (code, created) = send_json(server, "POST", WIDGETS, body).await;
    assert_eq!(code, 201, "{created}");
    created
}

/// Asserts `body` is the real 422 of one field error on widget `name`.
fn assert_invalid(code: u16, body: &Value, name: &str, field: &str, reason: &str, detail: &str) {
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid", "{body}");
    assert_eq!(
        body["message"],
        format!("Widget.example.com {name:?} is invalid: {field}: {detail}")
    );
    assert_eq!(
        body["details"],
        json!({"name": name, "group": "example.com", "kind": "Widget",
            "causes": [{"reason": reason, "message": detail, "field": field}]})
    );
}

const CEL_DETAIL: &str = "Invalid value: \"object\": replicas must not exceed maxReplicas";

#[tokio::test]
async fn crd_cel_rules_refuse_create_update_patch_apply_and_scale_writes() {
    let server = serve().await;
    let too_many = serde_json::to_value(structural_widget("w", json!({"replicas": 20}))).unwrap();
    let (code, body) = send_json(&server, "POST", WIDGETS, too_many).await;
    assert_invalid(code, &body, "w", "spec", "FieldValueInvalid", CEL_DETAIL);

    let stored = create_widget(&server, "w", json!({"replicas": 2})).await;
    let path = format!("{WIDGETS}/w");
    let mut replaced = stored.clone();
    replaced["spec"]["replicas"] = json!(11);
    let (code, body) = send_json(&server, "PUT", &path, replaced).await;
    assert_invalid(code, &body, "w", "spec", "FieldValueInvalid", CEL_DETAIL);
    let patch = json!({"spec": {"replicas": 12}});
    let (code, body) = send_json(&server, "PATCH", &path, patch).await;
    assert_invalid(code, &body, "w", "spec", "FieldValueInvalid", CEL_DETAIL);
    let applied = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"replicas": 13}});
    let answer = send_raw(
        &server,
        "PATCH",
        &format!("{path}?fieldManager=tester&force=true"),
        &[("content-type", "application/apply-patch+yaml")],
        serde_json::to_vec(&applied).unwrap(),
    )
    .await;
    assert_invalid(
        answer.code,
        &answer.json(),
        "w",
        "spec",
        "FieldValueInvalid",
        CEL_DETAIL,
    );
    let scale = json!({"spec": {"replicas": 14}});
    let (code, body) = send_json(&server, "PATCH", &format!("{path}/scale"), scale).await;
    assert_invalid(code, &body, "w", "spec", "FieldValueInvalid", CEL_DETAIL);
    // A transition rule's message expression, with `oldSelf`.
    let (_, unchanged) = send_json(&server, "GET", &path, Value::Null).await;
    assert_eq!(unchanged["spec"]["replicas"], 2, "nothing was written");

    // A rule this server cannot evaluate is refused with the CRD, not passed over.
    let mut crd = structural_widget_crd();
    crd["metadata"]["name"] = json!("gizmos.example.com");
    crd["spec"]["names"] = json!({"plural": "gizmos", "kind": "Gizmo"});
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "quantity(self.legacy).isInteger()"}]);
    let (code, body) = send_json(&server, "POST", CRDS, crd).await;
    assert_eq!(code, 422, "{body}");
    let field =
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    assert_eq!(body["details"]["causes"][0]["field"], field, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("is not supported by reflector-testkit"),
        "{body}"
    );
}

#[tokio::test]
async fn crd_cel_transition_rules_see_old_self_on_updates_only() {
    let server = ApiServer::start().await.unwrap();
    let mut crd = structural_widget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = json!([{
            "rule": "self.size == oldSelf.size",
            "messageExpression": "'size is immutable, was ' + oldSelf.size",
            "fieldPath": ".size",
            "reason": "FieldValueForbidden"}]);
    create_crd(&server, crd).await;
    create_widget(&server, "w", json!({"size": "small"})).await;
    let patch = json!({"spec": {"size": "large"}});
    let (code, body) = send_json(&server, "PATCH", &format!("{WIDGETS}/w"), patch).await;
    assert_invalid(
        code,
        &body,
        "w",
        "spec.size",
        "FieldValueForbidden",
        "Forbidden: size is immutable, was small",
    );
}

#[tokio::test]
async fn crd_selectable_fields_filter_lists_and_watches() {
    let server = serve().await;
    let api = structural_widgets(&server);
    let mut watch = watch_from(&api, &server.current_resource_version().to_string()).await;
    let mut selected = api
        .watch(
            &kube::api::WatchParams::default().fields("spec.size=large"),
            &server.current_resource_version().to_string(),
        )
        .await
        .unwrap()
        .boxed();
    create(&api, &structural_widget("a", json!({"size": "small"}))).await;
    create(&api, &structural_widget("b", json!({"size": "large"}))).await;
    let listed = api
        .list(&ListParams::default().fields("spec.size=large"))
        .await
        .unwrap();
    let names: Vec<_> = listed
        .iter()
        .filter_map(|w| w.metadata.name.clone())
        .collect();
    assert_eq!(names, ["b"]);
    let others = api
        .list(&ListParams::default().fields("spec.size!=large"))
        .await
        .unwrap();
    assert_eq!(others.items.len(), 1);
    match selected.try_next().await.unwrap() {
        Some(WatchEvent::Added(w)) => assert_eq!(w.metadata.name.as_deref(), Some("b")),
        other => panic!("expected b's ADDED, got {other:?}"),
    }
    for _ in 0..2 {
        assert!(matches!(
            watch.try_next().await.unwrap(),
            Some(WatchEvent::Added(_))
        ));
    }
    let (code, body) = send_json(
        &server,
        "GET",
        &format!("{WIDGETS}?fieldSelector=spec.replicas%3D1"),
        Value::Null,
    )
    .await;
    assert_eq!(
        (code, &body["reason"]),
        (400, &json!("BadRequest")),
        "{body}"
    );
    assert_eq!(body["message"], "field label not supported: spec.replicas");
}

#[tokio::test]
async fn crd_dry_run_writes_answer_normally_and_store_nothing() {
    let server = serve().await;
    let api = structural_widgets(&server);
    let stored = create_widget(&server, "w", json!({"size": "small"})).await;
    let rv = server.current_resource_version();
    let mut watch = watch_from(&api, &rv.to_string()).await;
    let dry = |path: &str| format!("{path}?dryRun=All&fieldManager=tester");
    let new = serde_json::to_value(structural_widget("n", json!({"size": "large"}))).unwrap();
    let (code, created) = send_json(&server, "POST", &dry(WIDGETS), new).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["replicas"], 1, "defaulted as a real create");
    assert!(created["metadata"]["uid"].is_string());
    assert!(
        created["metadata"].get("resourceVersion").is_none(),
        "{created}"
    );
    let path = format!("{WIDGETS}/w");
    let mut replaced = stored.clone();
    replaced["spec"]["size"] = json!("medium");
    let (code, updated) = send_json(&server, "PUT", &dry(&path), replaced).await;
    assert_eq!((code, &updated["spec"]["size"]), (200, &json!("medium")));
    assert_eq!(
        updated["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );
    let (code, patched) = send_json(
        &server,
        "PATCH",
        &dry(&path),
        json!({"spec": {"size": "large"}}),
    )
    .await;
    assert_eq!((code, &patched["spec"]["size"]), (200, &json!("large")));
    let applied = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": "medium"}});
    let answer = send_raw(
        &server,
        "PATCH",
        &format!("{}&force=true", dry(&path)),
        &[("content-type", "application/apply-patch+yaml")],
        serde_json::to_vec(&applied).unwrap(),
    )
    .await;
    assert_eq!(answer.code, 200);
    let (code, deleted) = send_json(&server, "DELETE", &dry(&path), Value::Null).await;
    assert_eq!(
        (code, &deleted["status"]),
        (200, &json!("Success")),
        "{deleted}"
    );
    // `kubectl delete --dry-run=server` sends it in the body.
    let (code, _) = send_json(&server, "DELETE", &path, json!({"dryRun": ["All"]})).await;
    assert_eq!(code, 200);

    assert_eq!(server.current_resource_version(), rv, "nothing written");
    let (code, unchanged) = send_json(&server, "GET", &path, Value::Null).await;
    assert_eq!((code, &unchanged), (200, &stored));
    let (code, _) = send_json(&server, "GET", &format!("{WIDGETS}/n"), Value::Null).await;
    assert_eq!(code, 404, "the dry-run create stored nothing");
    // The first event the watch sees is the next real write.
    let (code, _) = send_json(&server, "PATCH", &path, json!({"spec": {"size": "large"}})).await;
    assert_eq!(code, 200);
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Modified(w)) => assert_eq!(w.data["spec"]["size"], "large"),
        other => panic!("expected the real MODIFIED, got {other:?}"),
    }
    let (code, body) = send_json(
        &server,
        "POST",
        &format!("{WIDGETS}?dryRun=Some"),
        json!({}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Some\"}: supported values: \"All\""
    );
}

#[tokio::test]
async fn crd_put_without_resource_version_is_invalid() {
    let server = serve().await;
    let mut stored = create_widget(&server, "w", json!({"size": "small"})).await;
    stored["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    stored["spec"]["size"] = json!("large");
    let (code, body) = send_json(&server, "PUT", &format!("{WIDGETS}/w"), stored).await;
    assert_invalid(
        code,
        &body,
        "w",
        "metadata.resourceVersion",
        "FieldValueInvalid",
        "Invalid value: 0x0: must be specified for an update",
    );
}

#[tokio::test]
async fn crd_group_discovery_answers_an_api_group_for_every_served_group() {
    let server = serve().await;
    let (code, body) = send_json(&server, "GET", "/apis/example.com", Value::Null).await;
    assert_eq!(code, 200, "{body}");
    let version = json!({"groupVersion": "example.com/v1", "version": "v1"});
    assert_eq!(
        body,
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": "example.com",
            "versions": [version], "preferredVersion": version})
    );
    let (code, body) = send_json(&server, "GET", "/apis/apiextensions.k8s.io", Value::Null).await;
    assert_eq!((code, &body["name"]), (200, &json!("apiextensions.k8s.io")));
    let (code, body) = send_json(&server, "GET", "/apis/nothing.example.com", Value::Null).await;
    assert_eq!((code, &body["reason"]), (404, &json!("NotFound")));
}

#[tokio::test]
async fn crd_answers_are_not_cached_and_lists_carry_an_empty_continue() {
    let server = serve().await;
    create_widget(&server, "a", json!({})).await;
    create_widget(&server, "b", json!({})).await;
    for uri in [
        WIDGETS.to_owned(),
        format!("{WIDGETS}/nope"),
        "/apis".to_owned(),
    ] {
        let answer = send_json_raw(&server, "GET", &uri, Value::Null).await;
        assert_eq!(
            answer
                .headers
                .get("cache-control")
                .and_then(|v| v.to_str().ok()),
            Some("no-cache, private"),
            "{uri}"
        );
    }
    let (_, list) = send_json(&server, "GET", WIDGETS, Value::Null).await;
    assert_eq!(list["metadata"]["continue"], "", "{list}");
    let (_, first) = send_json(&server, "GET", &format!("{WIDGETS}?limit=1"), Value::Null).await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    assert!(!token.is_empty());
    let (_, last) = send_json(
        &server,
        "GET",
        &format!("{WIDGETS}?limit=1&continue={token}"),
        Value::Null,
    )
    .await;
    assert_eq!(last["metadata"]["continue"], "", "{last}");
    let _ = PATIENCE;
}

/// The `Terminating` condition of a CRD's JSON.
fn terminating(crd: &Value) -> Value {
    crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Terminating")
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn crd_deletion_waits_for_its_objects_finalizers() {
    let server = serve().await;
    let api = structural_widgets(&server);
    let mut held = structural_widget("held", json!({}));
    held.metadata.finalizers = Some(vec!["example.com/hold".to_owned()]);
    create(&api, &held).await;
    create(&api, &structural_widget("free", json!({}))).await;
    let mut watch = watch_from(&api, &server.current_resource_version().to_string()).await;

    let crd_path = format!("{CRDS}/widgets.example.com");
    let (code, answer) = send_json(&server, "DELETE", &crd_path, Value::Null).await;
    assert_eq!(
        (code, &answer["kind"]),
        (200, &json!("CustomResourceDefinition")),
        "{answer}"
    );
    assert!(
        answer["metadata"]["deletionTimestamp"].is_string(),
        "{answer}"
    );
    assert_eq!(
        answer["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert_eq!(terminating(&answer)["status"], "True", "{answer}");
    assert_eq!(terminating(&answer)["reason"], "InstanceDeletionPending");

    // While it waits: reads, lists and patches work, creates are refused.
    let (code, crd) = send_json(&server, "GET", &crd_path, Value::Null).await;
    assert_eq!((code, &terminating(&crd)["status"]), (200, &json!("True")));
    let new = serde_json::to_value(structural_widget("new", json!({}))).unwrap();
    let (code, body) = send_json(&server, "POST", WIDGETS, new).await;
    assert_eq!(
        (code, &body["reason"]),
        (403, &json!("Forbidden")),
        "{body}"
    );
    assert_eq!(
        body["message"],
        "create not allowed while custom resource definition is terminating"
    );
    let listed = api.list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = listed
        .iter()
        .filter_map(|w| w.metadata.name.clone())
        .collect();
    assert_eq!(
        names,
        ["held"],
        "the object without finalizers went at once"
    );
    let (code, _) = send_json(
        &server,
        "PATCH",
        &format!("{WIDGETS}/held"),
        json!({"metadata": {"labels": {"seen": "yes"}}}),
    )
    .await;
    assert_eq!(code, 200);
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Deleted(w)) => assert_eq!(w.metadata.name.as_deref(), Some("free")),
        other => panic!("expected free's DELETED, got {other:?}"),
    }
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Modified(w)) => assert!(w.metadata.deletion_timestamp.is_some()),
        other => panic!("expected held's MODIFIED, got {other:?}"),
    }

    // The last finalizer goes: the object, then the CRD.
    let (code, _) = send_json(
        &server,
        "PATCH",
        &format!("{WIDGETS}/held"),
        json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert_eq!(code, 200);
    let mut seen = Vec::new();
    while let Some(event) = tokio::time::timeout(PATIENCE, watch.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        seen.push(event);
    }
    assert!(
        matches!(seen.as_slice(), [WatchEvent::Modified(_), WatchEvent::Deleted(w)] if w.metadata.name.as_deref() == Some("held")),
        "the label patch, then held's DELETED, then the end: {seen:?}"
    );
    let (code, _) = send_json(&server, "GET", &crd_path, Value::Null).await;
    assert_eq!(code, 404, "the CRD goes with its last object");
}

#[tokio::test]
async fn crd_objects_being_deleted_take_no_new_finalizers_and_keep_theirs_in_deleted() {
    let server = serve().await;
    let api = structural_widgets(&server);
    let mut held = structural_widget("w", json!({}));
    held.metadata.finalizers = Some(vec!["a".to_owned()]);
    create(&api, &held).await;
    let path = format!("{WIDGETS}/w");
    let (code, _) = send_json(&server, "DELETE", &path, Value::Null).await;
    assert_eq!(code, 200);
    let (code, body) = send_json(
        &server,
        "PATCH",
        &path,
        json!({"metadata": {"finalizers": ["a", "b"]}}),
    )
    .await;
    assert_invalid(
        code,
        &body,
        "w",
        "metadata.finalizers",
        "FieldValueForbidden",
        "Forbidden: no new finalizers([b]) can be added if the object is being deleted",
    );
    let mut watch = watch_from(&api, &server.current_resource_version().to_string()).await;
    let (code, _) = send_json(
        &server,
        "PATCH",
        &path,
        json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert_eq!(code, 200);
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Deleted(w)) => {
            assert_eq!(
                w.metadata.finalizers,
                Some(vec!["a".to_owned()]),
                "the last it had"
            );
        }
        other => panic!("expected one DELETED, got {other:?}"),
    }
}

#[tokio::test]
async fn crd_foreground_deletion_answers_the_foreground_finalizer() {
    let server = serve().await;
    let owner = create_widget(&server, "owner", json!({})).await;
    let mut dependent = serde_json::to_value(structural_widget("dependent", json!({}))).unwrap();
    dependent["metadata"]["ownerReferences"] = json!([{"apiVersion": "example.com/v1",
        "kind": "Widget", "name": "owner", "uid": owner["metadata"]["uid"]}]);
    let (code, _) = send_json(&server, "POST", WIDGETS, dependent).await;
    assert_eq!(code, 201);
    let foreground = json!({"propagationPolicy": "Foreground"});
    let path = format!("{WIDGETS}/owner");
    let (code, answer) = send_json(&server, "DELETE", &path, foreground.clone()).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(
        answer["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(answer["metadata"]["deletionTimestamp"].is_string());
    let (code, _) = send_json(&server, "GET", &path, Value::Null).await;
    assert_eq!(code, 200, "waits for its dependent");
    let (code, _) = send_json(
        &server,
        "DELETE",
        &format!("{WIDGETS}/dependent"),
        Value::Null,
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = send_json(&server, "GET", &path, Value::Null).await;
    assert_eq!(code, 404, "gone with its last dependent");
    // Without dependents it goes at once, after answering the finalizer.
    create_widget(&server, "alone", json!({})).await;
    let alone = format!("{WIDGETS}/alone");
    let (code, answer) = send_json(&server, "DELETE", &alone, foreground).await;
    assert_eq!(
        (code, &answer["metadata"]["finalizers"]),
        (200, &json!(["foregroundDeletion"]))
    );
    let (code, _) = send_json(&server, "GET", &alone, Value::Null).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn crd_apply_of_an_undeclared_field_is_500_and_a_pruned_only_patch_writes_nothing() {
    let server = serve().await;
    let path = format!("{WIDGETS}/w");
    let applied = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": "small", "bogus": true}});
    for validation in ["", "&fieldValidation=Ignore", "&fieldValidation=Strict"] {
        let answer = send_raw(
            &server,
            "PATCH",
            &format!("{path}?fieldManager=tester{validation}"),
            &[("content-type", "application/apply-patch+yaml")],
            serde_json::to_vec(&applied).unwrap(),
        )
        .await;
        let body = answer.json();
        assert_eq!(
            (answer.code, &body["reason"]),
            (500, &json!("InternalError")),
            "{body}"
        );
        assert_eq!(
            body["message"],
            "Internal error occurred: failed to create typed patch object (default/w; example.com/v1, Kind=Widget): .spec.bogus: field not declared in schema"
        );
    }
    let created = create_widget(&server, "w", json!({"size": "small"})).await;
    let api = structural_widgets(&server);
    let rv = server.current_resource_version();
    let mut watch = watch_from(&api, &rv.to_string()).await;
    let answer = send_json_raw(&server, "PATCH", &path, json!({"spec": {"bogus": 1}})).await;
    assert_eq!(answer.code, 200);
    let warning = answer.headers.get("warning").and_then(|v| v.to_str().ok());
    assert_eq!(warning, Some("299 - \"unknown field \\\"spec.bogus\\\"\""));
    let patched = answer.json();
    assert_eq!(
        patched["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(patched["metadata"]["generation"], 1);
    assert_eq!(server.current_resource_version(), rv, "nothing written");
    let (code, _) = send_json(&server, "PATCH", &path, json!({"spec": {"size": "large"}})).await;
    assert_eq!(code, 200);
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Modified(w)) => assert_eq!(w.data["spec"]["size"], "large"),
        other => panic!("the next real write is the first event: {other:?}"),
    }
}

#[tokio::test]
async fn crd_malformed_writes_answer_as_the_real_decoder() {
    let server = serve().await;
    let send = |body: &'static str, query: &'static str| {
        let server = &server;
        async move {
            send_raw(
                server,
                "POST",
                &format!("{WIDGETS}{query}"),
                &[("content-type", "application/json")],
                body.as_bytes().to_vec(),
            )
            .await
        }
    };
    let no_kind = r#"{"metadata":{"name":"w"},"spec":{}}"#;
    let answer = send(no_kind, "").await;
    let body = answer.json();
    assert_eq!(
        (answer.code, &body["reason"]),
        (400, &json!("BadRequest")),
        "{body}"
    );
    assert_eq!(
        body["message"],
        format!("Object 'Kind' is missing in '{no_kind}'")
    );

    let wrong = r#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"w"}}"#;
    let answer = send(wrong, "").await;
    assert_invalid(
        answer.code,
        &answer.json(),
        "w",
        "kind",
        "FieldValueInvalid",
        "Invalid value: \"Gadget\": must be Widget",
    );

    let duplicated = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":"small","size":"large"}}"#;
    let answer = send(duplicated, "?fieldValidation=Strict").await;
    let body = answer.json();
    assert_eq!(
        (answer.code, &body["reason"]),
        (400, &json!("BadRequest")),
        "{body}"
    );
    assert_eq!(
        body["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: duplicate field \"spec.size\""
    );
    let unknown = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"colour":"red"}}"#;
    let answer = send(unknown, "?fieldValidation=Strict").await;
    assert_eq!(
        answer.json()["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.colour\""
    );
    let answer = send(duplicated, "").await;
    assert_eq!(answer.code, 201, "the default mode stores the last value");
    assert_eq!(answer.json()["spec"]["size"], "large");
    let warning = answer.headers.get("warning").and_then(|v| v.to_str().ok());
    assert_eq!(warning, Some("299 - \"duplicate field \\\"spec.size\\\"\""));
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

#[tokio::test]
async fn crd_watches_as_table_carry_a_table_per_event() {
    let server = serve().await;
    let rv = server.current_resource_version();
    create_widget(&server, "a", json!({"size": "large"})).await;
    let uri = format!("{WIDGETS}?watch=true&resourceVersion={rv}&timeoutSeconds=1");
    let answer = send_raw(&server, "GET", &uri, &[("accept", TABLE)], Vec::new()).await;
    assert_eq!(answer.code, 200);
    let events: Vec<Value> = answer
        .body
        .split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ADDED");
    let table = &events[0]["object"];
    assert_eq!(
        (&table["kind"], &table["apiVersion"]),
        (&json!("Table"), &json!("meta.k8s.io/v1"))
    );
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, ["Name", "Size", "Replicas"]);
    assert_eq!(table["rows"][0]["cells"], json!(["a", "large", 1]));
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

#[tokio::test]
async fn crd_yaml_answers_and_the_initializing_storage_option() {
    let server = ApiServer::builder()
        .crd_storage_initialization(std::time::Duration::from_secs(60))
        .start()
        .await
        .unwrap();
    create_crd(&server, structural_widget_crd()).await;
    let answer = send_raw(&server, "GET", WIDGETS, &[], Vec::new()).await;
    let body = answer.json();
    assert_eq!(
        (answer.code, &body["reason"]),
        (429, &json!("TooManyRequests")),
        "{body}"
    );
    assert_eq!(body["message"], "storage is (re)initializing");
    assert_eq!(body["details"], json!({"retryAfterSeconds": 1}));
    assert_eq!(answer.headers.get("retry-after").unwrap(), "1");

    // By default a new kind serves at once; YAML on request.
    let server = serve().await;
    create_widget(&server, "a", json!({"size": "small"})).await;
    for uri in [format!("{WIDGETS}/a"), WIDGETS.to_owned()] {
        let answer = send_raw(
            &server,
            "GET",
            &uri,
            &[("accept", "application/yaml")],
            Vec::new(),
        )
        .await;
        assert_eq!(answer.code, 200, "{uri}");
        assert_eq!(answer.content_type(), "application/yaml");
        let text = String::from_utf8(answer.body).unwrap();
        let value: Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(value["apiVersion"], "example.com/v1", "{text}");
        assert!(text.contains("size: small"), "{text}");
    }
}

#[tokio::test]
async fn crd_discovery_printer_columns_and_blocked_rule_causes_read_as_the_real_server() {
    let server = serve().await;
    let (_, resources) = send_json(&server, "GET", "/apis/example.com/v1", Value::Null).await;
    let widgets = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "widgets")
        .unwrap()
        .clone();
    assert_eq!(
        widgets["verbs"],
        json!([
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch"
        ])
    );
    // base64(sha256("example.com/v1/Widget")[..8]).
    assert_eq!(widgets["storageVersionHash"], "gIwvi5rymmg=");
    create_widget(&server, "a", json!({})).await;
    let answer = send_raw(&server, "GET", WIDGETS, &[("accept", TABLE)], Vec::new()).await;
    let columns = answer.json()["columnDefinitions"].clone();
    assert_eq!(
        columns[1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.size"
    );
    // A type error stops the CEL rules, with the real extra cause.
    let bad = serde_json::to_value(structural_widget("b", json!({"replicas": "many"}))).unwrap();
    let (code, body) = send_json(&server, "POST", WIDGETS, bad).await;
    assert_eq!(code, 422, "{body}");
    let causes = body["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 2, "{body}");
    assert_eq!(causes[0]["field"], "spec.replicas");
    assert_eq!(
        causes[1],
        json!({"reason": "FieldValueInvalid", "field": "<nil>",
            "message": "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"})
    );
}

/// The `managedFields` entry of `manager`, if the object has one.
fn managed_entry<'a>(object: &'a Value, manager: &str) -> Option<&'a Value> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager)
}

#[tokio::test]
async fn crd_scale_writes_record_the_managers_scale_entry() {
    let server = serve().await;
    let body = serde_json::to_value(structural_widget("w", json!({"replicas": 2}))).unwrap();
    let create = format!("{WIDGETS}?fieldManager=creator");
    let (code, created) = send_json(&server, "POST", &create, body).await;
    assert_eq!(code, 201, "{created}");
    let path = format!("{WIDGETS}/w");
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "w", "namespace": "default"}, "spec": {"replicas": 3}});
    let put = format!("{path}/scale?fieldManager=scaler");
    let (code, answer) = send_json(&server, "PUT", &put, scale).await;
    assert_eq!(
        (code, &answer["spec"]["replicas"]),
        (200, &json!(3)),
        "{answer}"
    );
    let (_, object) = send_json(&server, "GET", &path, Value::Null).await;
    // As the real ScaleHandler's `ToParent`: the scale writer's entry is an `Update` of the
    // custom resource's version with `subresource: scale`, owning the replicas path, and
    // carries no `time`; the creator loses the replicas field.
    let replicas_only = json!({"f:spec": {"f:replicas": {}}});
    assert_eq!(
        managed_entry(&object, "scaler"),
        Some(
            &json!({"manager": "scaler", "operation": "Update", "apiVersion": "example.com/v1",
            "fieldsType": "FieldsV1", "fieldsV1": replicas_only, "subresource": "scale"})
        ),
        "{object}"
    );
    let creator = managed_entry(&object, "creator").expect("the creator keeps its other fields");
    assert!(
        creator["fieldsV1"]["f:spec"].get("f:replicas").is_none(),
        "{creator}"
    );
    assert!(creator["fieldsV1"]["f:spec"].get("f:maxReplicas").is_some());

    // A merge patch of the Scale by another manager takes the field from the first.
    let (code, _) = send_json(
        &server,
        "PATCH",
        &format!("{path}/scale?fieldManager=autoscaler"),
        json!({"spec": {"replicas": 4}}),
    )
    .await;
    assert_eq!(code, 200);
    let (_, object) = send_json(&server, "GET", &path, Value::Null).await;
    assert_eq!(object["spec"]["replicas"], 4);
    assert_eq!(managed_entry(&object, "scaler"), None, "{object}");
    let autoscaler = managed_entry(&object, "autoscaler").expect("an entry");
    assert_eq!(
        (&autoscaler["subresource"], &autoscaler["fieldsV1"]),
        (&json!("scale"), &replicas_only)
    );
    // Its first entry: no `time`, so it sorts first of the `Update`s as on the real server.
    assert_eq!(
        object["metadata"]["managedFields"][0]["manager"],
        "autoscaler"
    );
}

#[tokio::test]
async fn crd_scale_dry_run_answers_the_scale_and_stores_nothing() {
    let server = serve().await;
    let api = structural_widgets(&server);
    let stored = create_widget(&server, "w", json!({"replicas": 2})).await;
    let rv = server.current_resource_version();
    let mut watch = watch_from(&api, &rv.to_string()).await;
    let path = format!("{WIDGETS}/w");
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "w", "namespace": "default"}, "spec": {"replicas": 5}});
    let (code, answer) =
        send_json(&server, "PUT", &format!("{path}/scale?dryRun=All"), scale).await;
    assert_eq!(
        (code, &answer["spec"]["replicas"]),
        (200, &json!(5)),
        "{answer}"
    );
    assert_eq!(
        answer["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"],
        "answered at the current resourceVersion"
    );
    // A patch too; validation still runs (the CEL rule refuses 12 > maxReplicas).
    for (replicas, expected) in [(6, 200), (12, 422)] {
        let uri = format!("{path}/scale?dryRun=All");
        let patch = json!({"spec": {"replicas": replicas}});
        let (code, answer) = send_json(&server, "PATCH", &uri, patch).await;
        assert_eq!(code, expected, "{answer}");
        assert!(
            code != 200 || answer["spec"]["replicas"] == replicas,
            "{answer}"
        );
    }

    assert_eq!(server.current_resource_version(), rv, "nothing written");
    let (_, unchanged) = send_json(&server, "GET", &path, Value::Null).await;
    assert_eq!(unchanged, stored);
    // The first event the watch sees is the next real write.
    let (code, _) = send_json(&server, "PATCH", &path, json!({"spec": {"size": "large"}})).await;
    assert_eq!(code, 200);
    let event = tokio::time::timeout(PATIENCE, watch.next())
        .await
        .expect("an event")
        .expect("open")
        .expect("decodes");
    let WatchEvent::Modified(object) = event else {
        panic!("{event:?}");
    };
    assert_eq!(object.data["spec"]["replicas"], 2);
    assert_eq!(object.data["spec"]["size"], "large");
}
