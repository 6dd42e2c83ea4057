//! Streaming the initial state with a watch-list request (client-go's
//! reflector_watchlist_test.go).

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;

use crate::reflector::{Reflector, ReflectorOptions};
use crate::store::{Indexers, Writer};
use crate::test_support::*;

pub(super) fn watch_list_options() -> ReflectorOptions {
    ReflectorOptions::default()
        .use_watch_list(true)
        .backoff_jitter(0.0)
}

/// A watch-list reflector over `lw` into a fresh recording store.
fn watch_list_recording(lw: Scripted) -> (Arc<Reflector<Pod, Scripted>>, Arc<RecordingStore>) {
    recording(lw, watch_list_options())
}

/// TestReflectorListAndWatch ("UseWatchList enabled") / TestWatchList "the reflector
/// can fall back to old LIST/WATCH semantics when a server doesn't support streaming"
/// is below; this is the happy path: initial events are collected until the
/// initial-events-end bookmark, the store is replaced once with the bookmark's RV,
/// and the same watch keeps delivering.
#[tokio::test(start_paused = true)]
async fn watch_list_streams_then_keeps_the_watch() {
    let params = Arc::new(Mutex::new(Vec::new()));
    let (tx, stream) = fake_watch();
    let first_watch = watch_once(stream);
    let p = params.clone();
    let lw = scripted(no_list, move |wp, rv| {
        p.lock()
            .unwrap()
            .push((rv.to_owned(), wp.send_initial_events, wp.bookmarks));
        first_watch(wp, rv)
    });
    let (r, store) = watch_list_recording(lw);
    send(
        &tx,
        [added("foo", "1"), bookmark("1", true), modified("foo", "2")],
    );
    send(&tx, four_more_adds());
    list_and_watch_until(&r, || {
        store.len() == 5 && r.resource_version().as_deref() == Some("6")
    })
    .await;
    assert_eq!(*params.lock().unwrap(), [(String::new(), true, true)]);
    assert_eq!(
        store.ops()[0],
        "replace 1 @1",
        "one replace at the bookmark's RV"
    );
    assert_eq!(r.stats().lists, 1);
}

/// TestWatchList: a server that refuses streaming makes the reflector fall back to
/// LIST/WATCH.
#[tokio::test(start_paused = true)]
async fn watch_list_falls_back_to_list_on_refusal() {
    let (lists, list) = recorded_list(|_| Ok(pod_list("5", None, vec![pod("a", "5")])));
    let watch_kinds = recorder();
    let w = watch_kinds.clone();
    let lw = scripted(list, move |wp, rv| {
        w.lock()
            .unwrap()
            .push(format!("rv={rv} initial={}", wp.send_initial_events));
        if wp.send_initial_events {
            Err(api_error(
                400,
                "BadRequest",
                "sendInitialEvents is not supported",
            ))
        } else {
            Ok(pending_watch())
        }
    });
    let (r, store) = watch_list_recording(lw);
    list_and_watch_until(&r, || watch_kinds.lock().unwrap().len() == 2).await;
    assert_eq!(*lists.lock().unwrap(), ["rv=0 limit=500"]);
    assert_eq!(
        *watch_kinds.lock().unwrap(),
        ["rv= initial=true", "rv=5 initial=false"]
    );
    assert_eq!(store.len(), 1);
}

/// The resource version of every watch asked for, and the senders that keep the
/// watches open.
struct OpenWatches {
    rvs: Arc<Mutex<Vec<String>>>,
    _open: Arc<Mutex<Vec<Sender>>>,
}

/// A watcher whose first call gets `first`, and whose later calls each get a watch
/// holding `events`, kept open by a sender that the returned `OpenWatches` keeps.
fn then_open_watches(
    first: crate::listwatch::ListWatchError,
    events: fn() -> Vec<kube::api::WatchEvent<Pod>>,
) -> (
    OpenWatches,
    impl Fn(&kube::api::WatchParams, &str) -> WatchResult + Send + Sync + 'static,
) {
    let (rvs, open) = (recorder(), Arc::new(Mutex::new(Vec::<Sender>::new())));
    let (w, keep) = (rvs.clone(), open.clone());
    let first = Mutex::new(Some(first));
    let watch = move |_: &kube::api::WatchParams, rv: &str| {
        w.lock().unwrap().push(rv.to_owned());
        if let Some(error) = first.lock().unwrap().take() {
            return Err(error);
        }
        let (tx, stream) = fake_watch();
        send(&tx, events());
        keep.lock().unwrap().push(tx);
        Ok(stream)
    };
    (OpenWatches { rvs, _open: open }, watch)
}

/// TestWatchList: a 429 on the watch-list request is retried after a backoff,
/// still in watch-list mode (no list).
#[tokio::test(start_paused = true)]
async fn watch_list_retries_too_many_requests() {
    let (calls, watch) = then_open_watches(too_many_requests(), || {
        vec![added("a", "1"), bookmark("2", true)]
    });
    let (r, store) = watch_list_recording(scripted(no_list, watch));
    list_and_watch_until(&r, || r.resource_version().as_deref() == Some("2")).await;
    assert_eq!(calls.rvs.lock().unwrap().len(), 2);
    assert_eq!(store.ops(), ["replace 1 @2"]);
    assert_eq!(r.stats().errors_too_many_requests, 1);
}

/// TestWatchList "stopping the reflector before it is synced": cancelling during the
/// initial events leaves the store untouched.
#[tokio::test(start_paused = true)]
async fn watch_list_stop_before_sync() {
    let (tx, r, store) = driven(no_list, watch_list_options());
    send(&tx, [added("a", "1")]);
    list_and_watch_until(&r, || r.stats().events == 1).await;
    assert!(
        store.ops().is_empty(),
        "nothing reached the store: {:?}",
        store.ops()
    );
    assert!(tx.is_closed());
}

/// TestWatchList "stopping the reflector after it is synced": the store holds the
/// streamed state and the watch is dropped.
#[tokio::test(start_paused = true)]
async fn watch_list_stop_after_sync() {
    let (tx, r, store) = driven(no_list, watch_list_options());
    send(&tx, [added("a", "1"), added("b", "2"), bookmark("2", true)]);
    list_and_watch_until(&r, || store.len() == 2).await;
    assert_eq!(store.ops(), ["replace 2 @2"]);
    assert_eq!(r.resource_version().as_deref(), Some("2"));
    assert!(tx.is_closed());
}

/// TestWatchListResourceVersion: a 410 during the watch-list forgets the resource
/// version, and the retry streams from "".
#[tokio::test(start_paused = true)]
async fn watch_list_expired_restarts_from_empty_resource_version() {
    let (watches, watch) = then_open_watches(expired(), || vec![bookmark("9", true)]);
    let (r, _) = watch_list_recording(scripted(no_list, watch));
    r.set_resource_version("4");
    list_and_watch_until(&r, || r.resource_version().as_deref() == Some("9")).await;
    assert_eq!(*watches.rvs.lock().unwrap(), ["4", ""]);
}

/// A watch-list hands the store the cached copy of every object whose
/// resourceVersion did not change: initial events of unchanged objects are swapped
/// for the cached copy before they are collected.
#[tokio::test(start_paused = true)]
async fn watch_list_reuses_cached_objects_whose_resource_version_is_unchanged() {
    let (tx, stream) = fake_watch();
    let mut writer = Writer::<Pod>::new(Indexers::new());
    let indexer = writer.reader();
    writer
        .replace(vec![Arc::new(pod("a", "1")), Arc::new(pod("b", "2"))], "2")
        .unwrap();
    let before = cached(&indexer);
    let r = Arc::new(Reflector::with_cache(
        scripted(no_list, watch_once(stream)),
        writer,
        watch_list_options(),
    ));
    send(&tx, [added("a", "1"), added("b", "7"), bookmark("7", true)]);
    list_and_watch_until(&r, || r.resource_version().as_deref() == Some("7")).await;
    let after = cached(&indexer);
    assert!(
        Arc::ptr_eq(&before["a"], &after["a"]),
        "unchanged: cached copy"
    );
    assert_eq!(after["b"].metadata.resource_version.as_deref(), Some("7"));
}
