//! How watch events reach the store and move the resource version (client-go's
//! reflector_test.go), and when a watch starts and ends.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::WatchEvent;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::listwatch::{ListWatchError, WatchStream};
use crate::reflector::{
    Reflector, ReflectorOptions, StatsCounters, WatchContext, WatchEnd, handle_watch,
};
use crate::test_support::*;

/// TestReflectorListAndWatch ("UseWatchList disabled"): list at "0" with limit 500,
/// then watch from the list's resource version with bookmarks; every event lands.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch() {
    let (lists, list) = recorded_list(|_| Ok(pod_list("1", None, vec![pod("foo", "1")])));
    let watches = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
    let (tx, stream) = fake_watch();
    let first_watch = watch_once(stream);
    let w = watches.clone();
    let lw = scripted(list, move |p, rv| {
        w.lock().unwrap().push((rv.to_owned(), p.bookmarks));
        first_watch(p, rv)
    });
    let (r, store) = recording(lw, ReflectorOptions::default());
    send(&tx, [modified("foo", "2")]);
    send(&tx, four_more_adds());
    list_and_watch_until(&r, || {
        store.len() == 5 && r.resource_version().as_deref() == Some("6")
    })
    .await;

    assert_eq!(*lists.lock().unwrap(), ["rv=0 limit=500"]);
    assert_eq!(
        *watches.lock().unwrap(),
        [("1".to_owned(), true)],
        "one watch, from the list's resource version, with bookmarks"
    );
    assert_eq!(
        store.names_and_rvs(),
        owned(&[
            ("foo", "2"),
            ("bar", "3"),
            ("baz", "4"),
            ("qux", "5"),
            ("zoo", "6")
        ])
    );
    assert_eq!(
        store.ops(),
        [
            "replace 1 @1",
            "update foo@2",
            "add bar@3",
            "add baz@4",
            "add qux@5",
            "add zoo@6"
        ]
    );
}

/// TestReflectorResourceVersionUpdate: every event, bookmarks included, moves the
/// resource version and tells the store: ["10", "20", "30", "40"].
#[tokio::test(start_paused = true)]
async fn reflector_resource_version_update() {
    let (tx, stream) = fake_watch();
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(Reflector::with_sink(
        scripted(empty_list("10"), watch_once(stream)),
        store.clone(),
        ReflectorOptions::default(),
    ));
    send(
        &tx,
        [
            added("p", "10"),
            modified("p", "20"),
            bookmark("30", false),
            WatchEvent::Deleted(pod("p", "40")),
        ],
    );
    list_and_watch_until(&r, || store.resource_versions.lock().unwrap().len() == 4).await;
    assert_eq!(
        *store.resource_versions.lock().unwrap(),
        ["10", "20", "30", "40"]
    );
    assert_eq!(r.resource_version().as_deref(), Some("40"));
}

/// A BOOKMARK moves the resource version and touches nothing in the store.
#[tokio::test(start_paused = true)]
async fn bookmark_moves_resource_version_only() {
    let (tx, r, store) = driven(
        |_| Ok(pod_list("5", None, vec![pod("a", "5")])),
        ReflectorOptions::default(),
    );
    send(&tx, [bookmark("99", false)]);
    list_and_watch_until(&r, || r.resource_version().as_deref() == Some("99")).await;
    assert_eq!(
        store.ops(),
        ["replace 1 @5"],
        "the bookmark touched nothing"
    );
    assert_eq!(r.stats().bookmarks, 1);
}

/// What a watch handler needs, without resync and without stopping at the
/// initial-events-end bookmark.
fn plain_watch_context<'a>(
    store: &'a RecordingStore,
    stats: &'a StatsCounters,
    cancel: &'a CancellationToken,
) -> WatchContext<'a, Pod> {
    WatchContext {
        name: "test",
        store,
        stats,
        cancel,
        resync: None,
        exit_on_initial_events_end: false,
    }
}

/// TestReflectorStopWatch: a cancelled token stops the watch handler at once.
#[tokio::test(start_paused = true)]
async fn reflector_stop_watch() {
    let store = RecordingStore::default();
    let stats = StatsCounters::default();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (_tx, mut stream) = fake_watch();
    let ctx = plain_watch_context(&store, &stats, &cancel);
    let end = handle_watch(ctx, Instant::now(), &mut stream, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(end, WatchEnd::Stopped);
}

/// A token cancelled between two events of an always-ready stream stops the
/// handler before the next event: cancellation is checked per event, not only when
/// the stream waits.
#[tokio::test(start_paused = true)]
async fn cancel_between_ready_events_stops_before_the_next() {
    let store = RecordingStore::default();
    let stats = StatsCounters::default();
    let cancel = CancellationToken::new();
    let (tx, stream) = fake_watch();
    send(
        &tx,
        (0..10).map(|i| added(&format!("p{i}"), &format!("{}", i + 2))),
    );
    // The token is cancelled as the stream hands out its third event.
    let mut taken = 0;
    let canceller = cancel.clone();
    let mut stream: WatchStream<Pod> = stream
        .inspect(move |_| {
            taken += 1;
            if taken == 3 {
                canceller.cancel();
            }
        })
        .boxed();
    let ctx = plain_watch_context(&store, &stats, &cancel);
    let mut rvs = Vec::new();
    let end = handle_watch(ctx, Instant::now(), &mut stream, &mut |versions| {
        rvs.extend(versions.iter().map(|(rv, _)| rv.to_owned()));
    })
    .await
    .unwrap();
    assert_eq!(end, WatchEnd::Stopped);
    assert_eq!(store.ops(), ["add p0@2", "add p1@3", "add p2@4"]);
    assert_eq!(rvs, ["2", "3", "4"]);
}

/// The events taken from the stream in one poll reach the store before any of
/// their resource versions is reported: a reported version is always one the
/// store already has.
#[tokio::test(start_paused = true)]
async fn ready_events_reach_the_store_before_their_versions_are_reported() {
    let store = RecordingStore::default();
    let stats = StatsCounters::default();
    let cancel = CancellationToken::new();
    let mut stream = watch_of([
        added("a", "2"),
        modified("a", "3"),
        bookmark("4", false),
        WatchEvent::Deleted(pod("a", "5")),
    ]);
    let ctx = plain_watch_context(&store, &stats, &cancel);
    let mut reported = Vec::new();
    handle_watch(ctx, Instant::now(), &mut stream, &mut |versions| {
        let ops = store.ops();
        for (rv, past_initial_adds) in versions.iter() {
            reported.push((rv.to_owned(), past_initial_adds, ops.len()));
        }
    })
    .await
    .unwrap();
    assert_eq!(store.ops(), ["add a@2", "update a@3", "delete a@5"]);
    // Every version was reported with the whole run in the store, in event order,
    // each with whether a non-ADDED event had been seen by then.
    assert_eq!(
        reported,
        [
            ("2".to_owned(), false, 3),
            ("3".to_owned(), true, 3),
            ("4".to_owned(), true, 3),
            ("5".to_owned(), true, 3),
        ]
    );
}

/// TestWatchTimeout: the watch timeout is drawn from [min, 2×min]; a minimum below
/// 5 min is not honoured.
#[tokio::test(start_paused = true)]
async fn watch_timeout() {
    for (min, want_min) in [
        (None, 300),
        (Some(Duration::from_secs(1)), 300),
        (Some(Duration::from_secs(1800)), 1800),
    ] {
        for _ in 0..20 {
            let cancel = CancellationToken::new();
            let got = Arc::new(Mutex::new(None));
            let (g, stop) = (got.clone(), cancel_on_watch(&cancel));
            let lw = scripted(empty_list("10"), move |p, rv| {
                *g.lock().unwrap() = p.timeout;
                stop(p, rv)
            });
            let mut opts = ReflectorOptions::default();
            if let Some(m) = min {
                opts = opts.min_watch_timeout(m);
            }
            let (r, _) = recording(lw, opts);
            r.list_and_watch(&cancel).await.unwrap();
            let t = got.lock().unwrap().expect("timeout set");
            assert!(
                (want_min..=2 * want_min).contains(&t),
                "timeout {t} outside [{want_min}, {}]",
                2 * want_min
            );
        }
    }
}

/// A watch that closes within a second with no event is a "very short watch"
/// error; the round ends and the next one relists.
#[tokio::test(start_paused = true)]
async fn very_short_watch_is_an_error() {
    let (r, _) = recording(
        scripted(empty_list("1"), |_, _| Ok(closed_watch())),
        ReflectorOptions::default(),
    );
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(r.stats().errors_very_short_watch, 1);
    assert_eq!(r.stats().watches, 1);
}

/// A watch that ends normally (its timeout) is restarted from the last RV without a
/// relist.
#[tokio::test(start_paused = true)]
async fn closed_watch_rewatches_without_relist() {
    let watch_rvs = recorder();
    let w = watch_rvs.clone();
    let lw = Scripted {
        list: Box::new(|_| futures::future::ready(Ok(pod_list("1", None, vec![]))).boxed()),
        watch: Box::new(move |_, rv| {
            let n = {
                let mut w = w.lock().unwrap();
                w.push(rv.to_owned());
                w.len()
            };
            async move {
                if n >= 3 {
                    return Ok(pending_watch());
                }
                // Ends after one event: not a "very short watch".
                Ok(watch_of([added(&format!("p{n}"), &format!("{}", n + 1))]))
            }
            .boxed()
        }),
    };
    let (r, store) = recording(lw, ReflectorOptions::default());
    list_and_watch_until(&r, || watch_rvs.lock().unwrap().len() == 3).await;
    assert_eq!(*watch_rvs.lock().unwrap(), ["1", "2", "3"]);
    assert_eq!(r.stats().lists, 1);
    assert_eq!(store.len(), 2);
}

/// Events of another kind are dropped, counted, and the watch goes on.
#[tokio::test(start_paused = true)]
async fn unexpected_kind_events_are_dropped_and_counted() {
    let (tx, r, store) = driven(empty_list("1"), ReflectorOptions::default());
    tx.unbounded_send(Err(ListWatchError::UnexpectedKind {
        expected: "v1/Pod".into(),
        found: "v1/ConfigMap".into(),
    }))
    .unwrap();
    send(&tx, [added("after", "2")]);
    list_and_watch_until(&r, || store.len() == 1).await;
    assert_eq!(r.stats().unexpected_kind_events, 1);
    assert_eq!(r.resource_version().as_deref(), Some("2"));
}
