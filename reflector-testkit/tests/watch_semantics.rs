//! Watch semantics: RV replay, 410 ERROR events after compaction or when falling behind,
//! bookmarks, timeoutSeconds, sendInitialEvents.

use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use reflector_testkit::{ApiServer, bench_objects};
use serde_json::json;

const GUARD: Duration = Duration::from_secs(10);

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm
}

async fn next<S>(stream: &mut S) -> Option<WatchEvent<ConfigMap>>
where
    S: Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    tokio::time::timeout(GUARD, stream.try_next())
        .await
        .expect("hang guard")
        .unwrap()
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
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let rv = server.current_resource_version();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    api.create(&PostParams::default(), &cm("c")).await.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().disable_bookmarks(), &rv.to_string())
        .await
        .unwrap()
        .boxed();
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED b");
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED c");
    api.create(&PostParams::default(), &cm("d")).await.unwrap();
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED d");
}

#[tokio::test]
async fn watch_from_zero_sends_synthetic_added_then_live_events() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED a");
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED b");
    api.delete("a", &Default::default()).await.unwrap();
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "DELETED a");
}

#[tokio::test]
async fn watch_from_compacted_rv_gets_410_error_event() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let old = server.current_resource_version();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    server.compact();
    let mut stream = api
        .watch(
            &WatchParams::default().disable_bookmarks(),
            &(old - 1).to_string(),
        )
        .await
        .unwrap()
        .boxed();
    let event = next(&mut stream).await.unwrap();
    let WatchEvent::Error(status) = event else {
        panic!("expected ERROR, got {}", describe(&event))
    };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert!(
        status
            .message
            .starts_with(&format!("too old resource version: {}", old - 1)),
        "{}",
        status.message
    );
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
    let mut stream = api
        .watch(&WatchParams::default().disable_bookmarks(), &rv.to_string())
        .await
        .unwrap()
        .boxed();
    let event = next(&mut stream).await.unwrap();
    assert_eq!(describe(&event), "ERROR 410 Expired");
}

// Real time: the bookmark timer runs in the server and arrives over a real socket; paused
// time would auto-advance the hang guard past in-flight IO.
#[tokio::test]
async fn bookmarks_carry_current_resource_version() {
    let server = ApiServer::builder()
        .bookmark_interval(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let rv = server.current_resource_version();
    let mut stream = api
        .watch(&WatchParams::default(), &rv.to_string())
        .await
        .unwrap()
        .boxed();
    // Writes elsewhere advance the global RV; the bookmark reports it.
    let other: Api<ConfigMap> = Api::namespaced(server.client(), "other");
    other
        .create(&PostParams::default(), &cm("x"))
        .await
        .unwrap();
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
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let rv = server.current_resource_version().to_string();
    let mut stream = api
        .watch(&WatchParams::default().disable_bookmarks().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    assert!(next(&mut stream).await.is_none());
}

#[tokio::test]
async fn send_initial_events_ends_with_annotated_bookmark() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    let rv = server.current_resource_version();
    let mut stream = api
        .watch(&WatchParams::default().initial_events(), "")
        .await
        .unwrap()
        .boxed();
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED a");
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED b");
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
    api.create(&PostParams::default(), &cm("c")).await.unwrap();
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED c");
}

#[tokio::test]
async fn dropping_the_server_ends_watches_and_stops_listening() {
    let server = ApiServer::start().await.unwrap();
    let addr = server.addr();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    assert_eq!(describe(&next(&mut stream).await.unwrap()), "ADDED a");
    drop(server);
    // The watch task is stopped by the server's cancellation token: the stream ends.
    loop {
        match tokio::time::timeout(GUARD, stream.next())
            .await
            .expect("hang guard")
        {
            None => break,
            Some(Ok(event)) => panic!("unexpected event {}", describe(&event)),
            Some(Err(_)) => {}
        }
    }
    // And the listener is gone.
    tokio::time::timeout(GUARD, async {
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(5)).await;
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
