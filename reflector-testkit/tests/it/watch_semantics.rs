//! Watch semantics: RV replay, 410 ERROR events after compaction or when falling behind,
//! bookmarks, timeoutSeconds, sendInitialEvents.

use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use reflector_testkit::{ApiServer, bench_objects};
use serde_json::json;

use crate::support::{
    PATIENCE, POLL, assert_status, create, create_namespace, serve_configmaps, start, watch_with,
};

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm
}

async fn next<S>(stream: &mut S) -> Option<WatchEvent<ConfigMap>>
where
    S: Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    tokio::time::timeout(PATIENCE, stream.try_next())
        .await
        .expect("hang guard")
        .unwrap()
}

/// Watch parameters without bookmarks, so that only changes arrive.
fn quiet() -> WatchParams {
    WatchParams::default().disable_bookmarks()
}

/// Asserts the next event of `stream` is `want` (as [`describe`] writes it).
async fn expect_next<S>(stream: &mut S, want: &str)
where
    S: Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    let event = next(stream).await.expect("an event, not the end");
    assert_eq!(describe(&event), want);
}

fn describe(event: &WatchEvent<ConfigMap>) -> String {
    match event {
        WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.as_deref().unwrap_or_default()),
        WatchEvent::Modified(o) => format!(
            "MODIFIED {}",
            o.metadata.name.as_deref().unwrap_or_default()
        ),
        WatchEvent::Deleted(o) => {
            format!("DELETED {}", o.metadata.name.as_deref().unwrap_or_default())
        }
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {} {}", e.code, e.reason),
    }
}

#[tokio::test]
async fn watch_from_rv_replays_events_after_it() {
    let (server, api) = serve_configmaps().await;
    create(&api, &cm("a")).await;
    let rv = server.current_resource_version();
    for name in ["b", "c"] {
        create(&api, &cm(name)).await;
    }
    let mut stream = watch_with(&api, &quiet(), &rv.to_string()).await;
    expect_next(&mut stream, "ADDED b").await;
    expect_next(&mut stream, "ADDED c").await;
    create(&api, &cm("d")).await;
    expect_next(&mut stream, "ADDED d").await;
}

#[tokio::test]
async fn watch_from_zero_sends_synthetic_added_then_live_events() {
    let (_server, api) = serve_configmaps().await;
    create(&api, &cm("a")).await;
    create(&api, &cm("b")).await;
    let mut stream = watch_with(&api, &quiet(), "0").await;
    expect_next(&mut stream, "ADDED a").await;
    expect_next(&mut stream, "ADDED b").await;
    api.delete("a", &Default::default()).await.unwrap();
    expect_next(&mut stream, "DELETED a").await;
}

#[tokio::test]
async fn watch_from_compacted_rv_gets_410_error_event() {
    let (server, api) = serve_configmaps().await;
    create(&api, &cm("a")).await;
    let old = server.current_resource_version();
    create(&api, &cm("b")).await;
    server.compact();
    let mut stream = watch_with(&api, &quiet(), &(old - 1).to_string()).await;
    let event = next(&mut stream).await.unwrap();
    let WatchEvent::Error(status) = event else {
        panic!("expected ERROR, got {}", describe(&event))
    };
    let too_old = format!("too old resource version: {}", old - 1);
    assert_status(&status, 410, "Expired", |m| m.starts_with(&too_old));
    assert!(
        next(&mut stream).await.is_none(),
        "stream ends after the ERROR event"
    );
}

#[tokio::test]
async fn watcher_falling_behind_bounded_history_gets_410() {
    let server = ApiServer::builder().history_len(5).start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), bench_objects::NAMESPACE);
    let rv = server.current_resource_version();
    // Ten writes with a history of five: RV `rv` is gone from the log.
    server.insert_many(&bench_objects::config_maps(10)).unwrap();
    let mut stream = watch_with(&api, &quiet(), &rv.to_string()).await;
    let event = next(&mut stream).await.unwrap();
    assert_eq!(describe(&event), "ERROR 410 Expired");
}

// Real time: the bookmark timer runs in the server and arrives over a real socket; paused
// time would auto-advance the hang guard past in-flight IO.
#[tokio::test]
async fn bookmarks_carry_current_resource_version() {
    let server = start(ApiServer::builder().bookmark_interval(Duration::from_millis(50))).await;
    create_namespace(&server, "other").await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, &cm("a")).await;
    let rv = server.current_resource_version();
    let mut stream = watch_with(&api, &WatchParams::default(), &rv.to_string()).await;
    // Writes elsewhere advance the global RV; the bookmark reports it.
    let other: Api<ConfigMap> = Api::namespaced(server.client(), "other");
    create(&other, &cm("x")).await;
    let current = server.current_resource_version();
    loop {
        match next(&mut stream).await.unwrap() {
            WatchEvent::Bookmark(b) if b.metadata.resource_version == current.to_string() => break,
            WatchEvent::Bookmark(b) => {
                assert!(b.metadata.resource_version.parse::<u64>().unwrap() <= current)
            }
            other => panic!("unexpected {}", describe(&other)),
        }
    }
}

#[tokio::test]
async fn timeout_seconds_ends_stream_cleanly() {
    let (server, api) = serve_configmaps().await;
    let rv = server.current_resource_version().to_string();
    let mut stream = watch_with(&api, &quiet().timeout(1), &rv).await;
    assert!(next(&mut stream).await.is_none());
}

#[tokio::test]
async fn send_initial_events_ends_with_annotated_bookmark() {
    let (server, api) = serve_configmaps().await;
    create(&api, &cm("a")).await;
    create(&api, &cm("b")).await;
    let rv = server.current_resource_version();
    let mut stream = watch_with(&api, &WatchParams::default().initial_events(), "").await;
    expect_next(&mut stream, "ADDED a").await;
    expect_next(&mut stream, "ADDED b").await;
    let WatchEvent::Bookmark(b) = next(&mut stream).await.unwrap() else {
        panic!("expected bookmark")
    };
    assert_eq!(b.metadata.resource_version, rv.to_string());
    assert_eq!(
        b.metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    create(&api, &cm("c")).await;
    expect_next(&mut stream, "ADDED c").await;
}

#[tokio::test]
async fn dropping_the_server_ends_watches_and_stops_listening() {
    let server = ApiServer::start().await.unwrap();
    let addr = server.addr();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, &cm("a")).await;
    let mut stream = watch_with(&api, &quiet(), "0").await;
    expect_next(&mut stream, "ADDED a").await;
    drop(server);
    // The watch task is stopped by the server's cancellation token: the stream ends.
    loop {
        match tokio::time::timeout(PATIENCE, stream.next())
            .await
            .expect("hang guard")
        {
            None => break,
            Some(Ok(event)) => panic!("unexpected event {}", describe(&event)),
            Some(Err(_)) => {}
        }
    }
    // And the listener is gone.
    tokio::time::timeout(PATIENCE, async {
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .expect("listener still accepting after drop");
}

/// As the API server's watch cache: an object that stops matching a watch's label
/// selector arrives as DELETED carrying its previous state (the last one that matched)
/// stamped with the resourceVersion of the write that took it out; one that starts
/// matching arrives as ADDED with its new state.
#[tokio::test]
async fn leaving_a_selection_is_a_delete_of_the_previous_state_at_the_writes_version() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut a = cm("a");
    a.metadata.labels = Some([("shard".to_owned(), "x".to_owned())].into());
    a.data = Some([("k".to_owned(), "1".to_owned())].into());
    api.create(&PostParams::default(), &a).await.unwrap();
    let rv = server.current_resource_version();
    let mut stream = api
        .watch(
            &WatchParams::default().disable_bookmarks().labels("shard=x"),
            &rv.to_string(),
        )
        .await
        .unwrap()
        .boxed();
    let out = json!({"metadata": {"labels": {"shard": "y"}}, "data": {"k": "2"}});
    let moved = api
        .patch("a", &PatchParams::default(), &Patch::Merge(out))
        .await
        .unwrap();
    let Some(WatchEvent::Deleted(gone)) = next(&mut stream).await else {
        panic!("expected DELETED");
    };
    assert_eq!(
        gone.metadata.resource_version,
        moved.metadata.resource_version
    );
    assert_eq!(
        gone.metadata.labels.unwrap()["shard"],
        "x",
        "the previous state"
    );
    assert_eq!(gone.data.unwrap()["k"], "1");

    let back = json!({"metadata": {"labels": {"shard": "x"}}, "data": {"k": "3"}});
    let back = api
        .patch("a", &PatchParams::default(), &Patch::Merge(back))
        .await
        .unwrap();
    let Some(WatchEvent::Added(added)) = next(&mut stream).await else {
        panic!("expected ADDED");
    };
    assert_eq!(
        added.metadata.resource_version,
        back.metadata.resource_version
    );
    assert_eq!(added.data.unwrap()["k"], "3", "the new state");
}
