//! Waiting without polling: for sync, and for a resource version (read your
//! writes).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::fifo::QueueMode;
use crate::informer::*;
use crate::listwatch::{FakeSource, ListWatchError};
use crate::object::MaybeTombstone;

use crate::test_support::*;

/// A handler that records when it handled its last initial add.
#[derive(Clone, Default)]
struct SyncClock {
    last_initial_add: Arc<Mutex<Option<tokio::time::Instant>>>,
}

impl EventHandler<Pod> for SyncClock {
    fn on_add(&self, _: &Arc<Pod>, is_in_initial_list: bool) {
        if is_in_initial_list {
            *self.last_initial_add.lock().unwrap() = Some(tokio::time::Instant::now());
        }
    }
    fn on_update(&self, _: &Arc<Pod>, _: &Arc<Pod>) {}
    fn on_delete(&self, _: &MaybeTombstone<Pod>) {}
}

each_queue!(
    #[tokio::test(start_paused = true)]
    wait_synced_wakes_at_sync_without_polling
);

/// The informer's and a registration's `wait_synced` return at the instant of sync
/// (paused clock: no 100 ms polling step), after the first lists failed for a while,
/// and a handler added after sync is waited for through its own initial adds.
async fn wait_synced_wakes_at_sync_without_polling(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    for i in 0..50 {
        source.add(ns_pod(&format!("p{i}")));
    }
    source.fail_lists(ListWatchError::Api(Box::new(
        kube::core::Status::failure("unavailable", "InternalError").with_code(500),
    )));
    let informer =
        SharedIndexInformer::with_options(source.clone(), InformerOptions::default().queue(queue));
    let clock = SyncClock::default();
    let reg = informer.add_event_handler(clock.clone()).unwrap();
    let running = start(&informer);
    let waiters = tokio::spawn({
        let (informer, reg) = (informer.clone(), reg.clone());
        async move {
            informer.wait_synced().await.unwrap();
            let informer_at = tokio::time::Instant::now();
            reg.wait_synced().await.unwrap();
            (informer_at, tokio::time::Instant::now())
        }
    });
    // Fail for a while, then let the list through at an instant no 100 ms poll
    // would hit.
    tokio::time::sleep(Duration::from_millis(2_345)).await;
    source.clear_list_error();
    let (informer_at, reg_at) = waiters.await.unwrap();
    let handled_at = clock
        .last_initial_add
        .lock()
        .unwrap()
        .expect("initial adds handled");
    assert!(informer.has_synced() && reg.has_synced());
    assert_eq!(reg_at, handled_at, "the registration's wait polled");
    assert!(
        informer_at <= handled_at,
        "informer synced after its handler"
    );
    assert!(
        handled_at.duration_since(informer_at) < Duration::from_millis(1),
        "the informer's wait returned {:?} after sync",
        handled_at.duration_since(informer_at)
    );

    // A late handler gets 50 synthetic adds; its wait ends when it handled them.
    let late = SyncClock::default();
    let late_reg = informer.add_event_handler(late.clone()).unwrap();
    late_reg.wait_synced().await.unwrap();
    let late_at = tokio::time::Instant::now();
    assert_eq!(Some(late_at), *late.last_initial_add.lock().unwrap());
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    wait_synced_fails_when_the_informer_stops_first
);

/// A wait for sync ends with an error, not a hang, when the informer stops first.
async fn wait_synced_fails_when_the_informer_stops_first(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    source.fail_lists(ListWatchError::Api(Box::new(
        kube::core::Status::failure("unavailable", "InternalError").with_code(500),
    )));
    let informer =
        SharedIndexInformer::with_options(source, InformerOptions::default().queue(queue));
    let reg = informer.add_event_handler(SyncClock::default()).unwrap();
    let running = start(&informer);
    let waits = tokio::spawn({
        let (informer, reg) = (informer.clone(), reg.clone());
        async move { (informer.wait_synced().await, reg.wait_synced().await) }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    running.stop().await;
    let (informer_wait, reg_wait) = waits.await.unwrap();
    assert_eq!(informer_wait, Err(InformerError::StoppedBeforeSync));
    assert_eq!(reg_wait, Err(InformerError::StoppedBeforeSync));
}

each_queue!(
    #[tokio::test(start_paused = true)]
    wait_for_resource_version_returns_once_the_cache_has_the_write
);

/// Read-your-writes: `wait_for_resource_version(rv)` returns once the cache holds
/// the write that produced `rv`, not before; a version already applied returns at
/// once.
async fn wait_for_resource_version_returns_once_the_cache_has_the_write(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    let first = source.add(ns_pod("a"));
    let informer =
        SharedIndexInformer::with_options(source.clone(), InformerOptions::default().queue(queue));
    let running = start(&informer);
    informer.wait_synced().await.unwrap();
    let first_rv = first.metadata.resource_version.clone().unwrap();
    tokio::time::timeout(
        Duration::from_millis(1),
        informer.wait_for_resource_version(&first_rv),
    )
    .await
    .expect("a version already in the cache returns at once")
    .unwrap();
    // A version no API server hands out is refused at once, not waited for forever.
    assert_eq!(
        informer.wait_for_resource_version("abc").await,
        Err(InformerError::InvalidResourceVersion("abc".to_owned()))
    );

    // A write the informer has not seen yet: the wait is pending until it lands.
    let mut changed = ns_pod("a");
    changed.metadata.labels = Some([("v".to_owned(), "2".to_owned())].into());
    let written = source.modify(changed);
    let rv = written.metadata.resource_version.clone().unwrap();
    let next: u64 = rv.parse::<u64>().unwrap() + 1;
    let later = tokio::spawn({
        let informer = informer.clone();
        async move { informer.wait_for_resource_version(&next.to_string()).await }
    });
    informer.wait_for_resource_version(&rv).await.unwrap();
    let cached = informer.lister().get(Some("ns"), "a").unwrap();
    assert_eq!(
        cached.metadata.resource_version.as_deref(),
        Some(rv.as_str())
    );
    assert!(
        cached.metadata.labels.is_some(),
        "the write is in the cache"
    );

    // A version nobody wrote yet keeps waiting, and ends with the next write.
    settle().await;
    assert!(!later.is_finished(), "returned before the version existed");
    source.add(ns_pod("b"));
    later.await.unwrap().unwrap();
    assert!(informer.lister().get(Some("ns"), "b").is_some());
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    stale_bookmarks_advance_the_store_resource_version
);

/// Bookmarks advance the cache's resource version: each applied watch run moves it
/// to the run's last version, a bookmark's too once the events before it are
/// applied, and a wait for it is woken at that instant (paused clock: no poll).
/// The `store_resource_version` gauge reads it.
async fn stale_bookmarks_advance_the_store_resource_version(queue: QueueMode) {
    let (tx, stream) = fake_watch();
    let informer = SharedIndexInformer::with_options(
        scripted(
            |_| Ok(pod_list("10", None, vec![pod("a", "5")])),
            watch_once(stream),
        ),
        InformerOptions::default().queue(queue),
    );
    assert_eq!(informer.store_resource_version(), None);
    let running = start(&informer);
    informer.wait_synced().await.unwrap();
    assert_eq!(informer.store_resource_version().as_deref(), Some("10"));

    let waiting = tokio::spawn({
        let informer = informer.clone();
        async move {
            informer.wait_for_resource_version("20").await.unwrap();
            tokio::time::Instant::now()
        }
    });
    send(&tx, [modified("a", "12")]);
    settle().await;
    assert_eq!(informer.store_resource_version().as_deref(), Some("12"));
    assert_eq!(informer.lister().resource_version().as_deref(), Some("12"));
    assert!(
        !waiting.is_finished(),
        "woken before the version was reached"
    );

    let sent_at = tokio::time::Instant::now();
    send(&tx, [bookmark("20", false)]);
    let woken_at = waiting.await.unwrap();
    assert_eq!(woken_at, sent_at, "the wait was not woken by the bookmark");
    assert_eq!(informer.store_resource_version().as_deref(), Some("20"));
    assert_eq!(informer.reflector_stats().store_resource_version, 20);
    let a = informer.lister().get(None, "a").unwrap();
    assert_eq!(a.metadata.resource_version.as_deref(), Some("12"));
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    stale_store_version_not_an_integer_never_blocks_a_wait
);

/// A cache whose resource version is not an integer never blocks a wait (the
/// comparison fails open, as client-go's).
async fn stale_store_version_not_an_integer_never_blocks_a_wait(queue: QueueMode) {
    let informer = SharedIndexInformer::with_options(
        scripted(
            |_| Ok(pod_list("etcd-less", None, vec![pod("a", "x")])),
            never_send,
        ),
        InformerOptions::default().queue(queue),
    );
    let running = start(&informer);
    informer.wait_synced().await.unwrap();
    assert_eq!(
        informer.store_resource_version().as_deref(),
        Some("etcd-less")
    );
    tokio::time::timeout(
        Duration::from_millis(1),
        informer.wait_for_resource_version("1000000"),
    )
    .await
    .expect("blocked on a version that cannot be compared")
    .unwrap();
    assert_eq!(informer.reflector_stats().store_resource_version, 0);
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    a_write_is_reached_with_its_batch_under_churn_of_other_keys
);

/// Read-your-writes under churn: a write followed by a stream of changes to other
/// keys (more than one batch) is reached, and a wait for it released, by the batch
/// that applies the write, while the other keys' changes are still queued: neither
/// mode waits for its queue to drain (a controller's deferred key is woken the same
/// way, well before its 10 s fallback).
async fn a_write_is_reached_with_its_batch_under_churn_of_other_keys(queue: QueueMode) {
    let (tx, stream) = fake_watch();
    let informer = SharedIndexInformer::with_options(
        scripted(
            |_| Ok(pod_list("10", None, vec![pod("w", "5")])),
            watch_once(stream),
        ),
        InformerOptions::default().queue(queue),
    );
    let running = start(&informer);
    informer.wait_synced().await.unwrap();
    // What is still queued when the cache reaches the write, seen from the wake-up
    // every wait for it gets (run by the batch that moves the version).
    let queued_at_release = Arc::new(Mutex::new(None));
    let recorded = Arc::clone(&queued_at_release);
    let weak = informer.downgrade();
    let wake = Box::new(move || {
        let queued = weak.upgrade().map(|i| i.queued_items());
        *recorded.lock().unwrap() = queued;
    });
    assert!(informer.indexer().version().wake_at(11, wake));
    let waiting = tokio::spawn({
        let informer = informer.clone();
        async move { informer.wait_for_resource_version("11").await }
    });
    let churn = (0..300).map(|i| modified(&format!("other-{i}"), &(12 + i).to_string()));
    send(&tx, std::iter::once(modified("w", "11")).chain(churn));
    tokio::time::timeout(Duration::from_secs(1), waiting)
        .await
        .expect("released by the write's batch")
        .unwrap()
        .unwrap();
    let queued = queued_at_release.lock().unwrap().expect("the wake-up ran");
    assert!(
        queued > 0,
        "released only once the queue drained ({queued} queued), not by the write's batch"
    );
    let w = informer.lister().get(None, "w").unwrap();
    assert_eq!(w.metadata.resource_version.as_deref(), Some("11"));
    running.stop().await;
}
