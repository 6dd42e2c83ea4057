//! Watch events are encoded once per (representation, event type) and shared: watchers
//! that see the same write differently (a selector turning a modification into `ADDED` or
//! `DELETED`, a metadata-only watch) must each still get their own, correct line.

use std::collections::BTreeMap;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, WatchEvent, WatchParams};
use kube::core::metadata::PartialObjectMeta;
use serde_json::json;

use crate::support::{PATIENCE, create, serve_configmaps};

/// `(type, name, label app, data k)` of the next event.
async fn next<K, S>(stream: &mut S) -> (String, String, Option<String>, Option<String>)
where
    K: kube::Resource + serde::Serialize,
    S: Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    let event = tokio::time::timeout(PATIENCE, stream.try_next())
        .await
        .expect("hang guard")
        .unwrap()
        .expect("an event");
    let (kind, object) = match event {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        other => panic!("unexpected {other:?}"),
    };
    let value = serde_json::to_value(&object).unwrap();
    (
        kind.to_owned(),
        object.meta().name.clone().unwrap_or_default(),
        value["metadata"]["labels"]["app"]
            .as_str()
            .map(str::to_owned),
        value["data"]["k"].as_str().map(str::to_owned),
    )
}

fn event(
    kind: &str,
    app: Option<&str>,
    k: Option<&str>,
) -> (String, String, Option<String>, Option<String>) {
    (
        kind.to_owned(),
        "a".to_owned(),
        app.map(str::to_owned),
        k.map(str::to_owned),
    )
}

#[tokio::test]
async fn watchers_of_one_write_each_get_their_own_line() {
    let (server, api) = serve_configmaps().await;
    let rv = server.current_resource_version().to_string();
    // The watches outlive any wait for their events (the server ends them at `timeout`).
    let params = WatchParams::default().timeout(u32::try_from(PATIENCE.as_secs()).unwrap());
    let mut plain = api.watch(&params, &rv).await.unwrap().boxed();
    let mut db_only = api
        .watch(&params.clone().labels("app=db"), &rv)
        .await
        .unwrap()
        .boxed();
    let mut metadata = api.watch_metadata(&params, &rv).await.unwrap().boxed();

    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("a".to_owned());
    cm.metadata.labels = Some(BTreeMap::from([("app".to_owned(), "web".to_owned())]));
    cm.data = Some(BTreeMap::from([("k".to_owned(), "1".to_owned())]));
    create(&api, &cm).await;
    for (app, k) in [("db", "2"), ("db", "3"), ("web", "4")] {
        let patch = json!({"metadata": {"labels": {"app": app}}, "data": {"k": k}});
        api.patch("a", &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }

    for (k, app) in [("1", "web"), ("2", "db"), ("3", "db"), ("4", "web")] {
        let kind = if k == "1" { "ADDED" } else { "MODIFIED" };
        assert_eq!(next(&mut plain).await, event(kind, Some(app), Some(k)));
    }
    // The selector's watcher: the write into `app=db` is an ADDED, the one out a DELETED
    // (carrying the last state it matched in, as the API server's watch cache sends),
    // in between a MODIFIED; the create it never sees.
    assert_eq!(
        next(&mut db_only).await,
        event("ADDED", Some("db"), Some("2"))
    );
    assert_eq!(
        next(&mut db_only).await,
        event("MODIFIED", Some("db"), Some("3"))
    );
    assert_eq!(
        next(&mut db_only).await,
        event("DELETED", Some("db"), Some("3"))
    );
    // Metadata-only: the same events, without data.
    for (i, app) in ["web", "db", "db", "web"].into_iter().enumerate() {
        let kind = if i == 0 { "ADDED" } else { "MODIFIED" };
        let got = next::<PartialObjectMeta<ConfigMap>, _>(&mut metadata).await;
        assert_eq!(got, event(kind, Some(app), None));
    }
}
