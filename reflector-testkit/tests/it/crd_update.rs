//! A CRD update as the real apiextensions-apiserver handles it: the kind's storage is
//! rebuilt, so open watches of its objects close without an event, watches from before
//! the update are 410, and every read (get, each list shape, a watch-list's initial
//! events) serves the stored objects through the new schema — its defaults applied, the
//! fields it no longer declares pruned — at their unchanged resourceVersions.

use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, VersionMatch, WatchEvent, WatchParams};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{
    CRDS, PATIENCE, create, create_crd, send_json, structural_widget, structural_widget_crd,
    structural_widgets, watch_from, watch_with,
};

/// The CRD with `spec.color` (default `blue`) added and `spec.legacy` removed.
fn updated_crd(server_copy: &Value) -> Value {
    let mut crd = server_copy.clone();
    let properties = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    properties["color"] = json!({"type": "string", "default": "blue"});
    properties
        .as_object_mut()
        .expect("properties")
        .remove("legacy");
    crd
}

/// What a read through the new schema must show: the default, no `legacy`.
fn assert_read_through_new_schema(object: &kube::api::DynamicObject, rv: &str) {
    let name = object.metadata.name.as_deref().unwrap_or_default();
    assert_eq!(
        object.data["spec"]["color"], "blue",
        "{name}: default applied"
    );
    assert!(
        object.data["spec"].get("legacy").is_none(),
        "{name}: pruned by the new schema: {}",
        object.data["spec"]
    );
    assert_eq!(
        object.metadata.resource_version.as_deref(),
        Some(rv),
        "{name}: resourceVersion unchanged"
    );
}

/// A watch event that must be the 410 `ERROR` of an expired resourceVersion.
fn assert_expired(event: Option<kube::Result<WatchEvent<kube::api::DynamicObject>>>, rv: u64) {
    match event {
        Some(Ok(WatchEvent::Error(status))) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            assert!(
                status
                    .message
                    .starts_with(&format!("too old resource version: {rv} (")),
                "{}",
                status.message
            );
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn crd_update_closes_watches_expires_old_rvs_and_reads_through_the_new_schema() {
    let server = ApiServer::start().await.unwrap();
    let before_crd = server.current_resource_version();
    create_crd(&server, structural_widget_crd()).await;
    let api = structural_widgets(&server);
    let mut rvs = Vec::new();
    for name in ["w1", "w2"] {
        let spec = json!({"size": "small", "legacy": "old"});
        let created = create(&api, &structural_widget(name, spec)).await;
        assert_eq!(created.data["spec"]["legacy"], "old");
        rvs.push(created.metadata.resource_version.unwrap());
    }
    // Each CRD's watch cache starts at its creation.
    let mut too_old = watch_from(&api, &before_crd.to_string()).await;
    assert_expired(too_old.next().await, before_crd);

    let before_update = server.current_resource_version();
    let mut open = watch_from(&api, &before_update.to_string()).await;
    let path = format!("{CRDS}/widgets.example.com");
    let (code, stored) = send_json(&server, "GET", &path, Value::Null).await;
    assert_eq!(code, 200);
    let (code, answer) = send_json(&server, "PUT", &path, updated_crd(&stored)).await;
    assert_eq!(code, 200, "{answer}");

    // The open watch closes, with no event.
    let end = tokio::time::timeout(PATIENCE, open.try_next())
        .await
        .expect("the watch closes");
    assert!(matches!(end, Ok(None)), "closed without an event: {end:?}");
    // Re-watching from before the update is 410.
    let mut rewatch = watch_from(&api, &before_update.to_string()).await;
    assert_expired(rewatch.next().await, before_update);

    let got = api.get("w1").await.unwrap();
    assert_read_through_new_schema(&got, &rvs[0]);
    let any = api.list(&ListParams::default().match_any()).await.unwrap();
    let first = api.list(&ListParams::default().limit(1)).await.unwrap();
    let token = first.metadata.continue_.clone().expect("a second page");
    let second = api
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap();
    let list_rv = any.metadata.resource_version.clone().unwrap();
    let exact = ListParams::default()
        .at(&list_rv)
        .matching(VersionMatch::Exact);
    let exact = api.list(&exact).await.unwrap();
    for (shape, items) in [
        ("RV=0", any.items),
        ("paged", [first.items, second.items].concat()),
        ("exact", exact.items),
    ] {
        assert_eq!(items.len(), 2, "{shape}");
        for (item, rv) in items.iter().zip(&rvs) {
            assert_read_through_new_schema(item, rv);
        }
    }
    let mut watch_list = watch_with(&api, &WatchParams::streaming_lists(), "").await;
    for rv in &rvs {
        match watch_list.try_next().await.unwrap() {
            Some(WatchEvent::Added(object)) => assert_read_through_new_schema(&object, rv),
            other => panic!("expected an initial ADDED, got {other:?}"),
        }
    }
}
