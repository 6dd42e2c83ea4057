//! JSON patch (RFC 6902, `application/json-patch+json`) through `kube::Api::patch` with
//! `Patch::Json`: every operation, `test` failures answered as the real `jsonPatcher`
//! (422 `Invalid`, the generic message, empty `details`), a stale `resourceVersion` in
//! the patch as a 409 precondition, and the events it produces.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, WatchEvent, WatchParams};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{PATIENCE, api_status, assert_status, create, serve_configmaps};

fn json_patch(ops: Value) -> Patch<()> {
    Patch::Json(serde_json::from_value(ops).expect("valid JSON patch"))
}

/// Sends `ops` as a JSON patch of ConfigMap `name`.
async fn patch(api: &Api<ConfigMap>, name: &str, ops: Value) -> kube::Result<ConfigMap> {
    api.patch(name, &PatchParams::default(), &json_patch(ops))
        .await
}

async fn seeded() -> (ApiServer, Api<ConfigMap>) {
    let (server, api) = serve_configmaps().await;
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("a".to_owned());
    cm.data = Some(BTreeMap::from([
        ("k".to_owned(), "v".to_owned()),
        ("gone".to_owned(), "x".to_owned()),
    ]));
    create(&api, &cm).await;
    (server, api)
}

fn data(cm: &ConfigMap) -> BTreeMap<String, String> {
    cm.data.clone().unwrap_or_default()
}

#[tokio::test]
async fn every_operation_applies_in_order() {
    let (_server, api) = seeded().await;
    let ops = json!([
        {"op": "test", "path": "/data/k", "value": "v"},
        {"op": "add", "path": "/data/added", "value": "1"},
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "remove", "path": "/data/gone"},
        {"op": "copy", "from": "/data/k", "path": "/data/copied"},
        {"op": "move", "from": "/data/added", "path": "/data/moved"},
        {"op": "add", "path": "/metadata/labels", "value": {"app": "db"}},
    ]);
    let patched = patch(&api, "a", ops).await.unwrap();
    let expected = BTreeMap::from([
        ("k".to_owned(), "w".to_owned()),
        ("copied".to_owned(), "w".to_owned()),
        ("moved".to_owned(), "1".to_owned()),
    ]);
    assert_eq!(data(&patched), expected);
    assert_eq!(
        patched.metadata.labels,
        Some(BTreeMap::from([("app".to_owned(), "db".to_owned())]))
    );
    // Stored, not just answered.
    assert_eq!(data(&api.get("a").await.unwrap()), expected);
}

#[tokio::test]
async fn a_failed_test_is_the_real_bare_422_and_writes_nothing() {
    let (server, api) = seeded().await;
    let rv = server.current_resource_version();
    let ops = json!([
        {"op": "replace", "path": "/data/k", "value": "changed"},
        {"op": "test", "path": "/data/k", "value": "something else"},
    ]);
    let err = patch(&api, "a", ops).await.unwrap_err();
    let status = api_status(err);
    assert_status(&status, 422, "Invalid", |m| {
        m == "the server rejected our request due to an error in our request"
    });
    let details = status.details.expect("details, as the real server");
    assert!(details.name.is_empty() && details.kind.is_empty() && details.causes.is_empty());
    // All or nothing: the first operation did not stick.
    assert_eq!(server.current_resource_version(), rv);
    assert_eq!(data(&api.get("a").await.unwrap())["k"], "v");
    // A path that does not exist fails the same way.
    let ops = json!([{"op": "remove", "path": "/data/missing"}]);
    let err = patch(&api, "a", ops).await.unwrap_err();
    assert_eq!(api_status(err).code, 422);
}

#[tokio::test]
async fn resource_version_in_the_patch_is_a_precondition() {
    let (_server, api) = seeded().await;
    let current = api.get("a").await.unwrap();
    let rv = current.metadata.resource_version.clone().unwrap();
    let at = |rv: &str, value: &str| {
        json_patch(json!([
            {"op": "replace", "path": "/metadata/resourceVersion", "value": rv},
            {"op": "replace", "path": "/data/k", "value": value},
        ]))
    };
    let patched = api
        .patch("a", &PatchParams::default(), &at(&rv, "first"))
        .await
        .unwrap();
    assert_eq!(data(&patched)["k"], "first");
    // The same (now stale) resourceVersion conflicts, as with a merge patch.
    let err = api
        .patch("a", &PatchParams::default(), &at(&rv, "second"))
        .await
        .unwrap_err();
    let status = api_status(err);
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(data(&api.get("a").await.unwrap())["k"], "first");
}

#[tokio::test]
async fn a_missing_object_is_404_and_a_patch_is_a_watch_event() {
    let (server, api) = seeded().await;
    let add_x = json!([{"op": "add", "path": "/data/x", "value": "y"}]);
    let err = patch(&api, "nope", add_x.clone()).await.unwrap_err();
    assert_eq!(api_status(err).code, 404);
    let rv = server.current_resource_version().to_string();
    // The watch outlives any wait for its event (the server ends it at `timeout`).
    let lifetime = u32::try_from(PATIENCE.as_secs()).unwrap();
    let mut events = api
        .watch(&WatchParams::default().timeout(lifetime), &rv)
        .await
        .unwrap()
        .boxed();
    patch(&api, "a", add_x).await.unwrap();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Modified(cm)) => assert_eq!(data(&cm)["x"], "y"),
        other => panic!("expected MODIFIED, got {other:?}"),
    }
}
