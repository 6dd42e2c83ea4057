//! The in-order queue's atomic relists and resyncs, seen from handlers: a handler
//! told of a relist reads the whole listed set from the lister, and a resync
//! re-delivers the cache as one state.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::Notify;

use crate::informer::*;
use crate::lister::Lister;
use crate::listwatch::FakeSource;
use crate::object::{MaybeTombstone, ObjectKey, meta_namespace_key};
use crate::reflector::ReflectorOptions;
use crate::test_support::*;

/// What a handler saw while armed: notifications, and those whose lister read did
/// not give exactly the expected names.
#[derive(Default)]
struct Seen {
    notifications: usize,
    mismatches: Vec<String>,
}

/// The cache a relist must leave: its names, and a key it must have dropped and
/// one it must have added (checked at every notification; the whole set at the
/// first and the last).
struct Expected {
    names: BTreeSet<String>,
    dropped: ObjectKey,
    added: ObjectKey,
    total: usize,
}

/// A handler that, once armed with the expected cache, reads the lister at every
/// notification and compares.
struct ListerReader {
    lister: Lister<Pod>,
    expected: Mutex<Option<Arc<Expected>>>,
    seen: Mutex<Seen>,
    progress: Notify,
}

impl ListerReader {
    fn check(&self, what: &str) {
        let Some(expected) = self.expected.lock().unwrap().clone() else {
            return;
        };
        let cache = self.lister.indexer();
        let n = self.seen.lock().unwrap().notifications + 1;
        let matches = if n == 1 || n == expected.total {
            let now: BTreeSet<String> = cache
                .list()
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect();
            now == expected.names
        } else {
            cache.len() == expected.names.len()
                && cache.get(&expected.dropped).is_none()
                && cache.get(&expected.added).is_some()
        };
        let mut seen = self.seen.lock().unwrap();
        seen.notifications = n;
        if !matches {
            let len = cache.len();
            seen.mismatches.push(format!("{what}: {len} cached"));
        }
        drop(seen);
        self.progress.notify_waiters();
    }
}

impl EventHandler<Pod> for ListerReader {
    fn on_add(&self, obj: &Arc<Pod>, _: bool) {
        self.check(&format!("add {:?}", obj.metadata.name));
    }
    fn on_update(&self, _: &Arc<Pod>, new: &Arc<Pod>) {
        self.check(&format!("update {:?}", new.metadata.name));
    }
    fn on_delete(&self, obj: &MaybeTombstone<Pod>) {
        self.check(&format!("delete {:?}", obj.object().metadata.name));
    }
}

/// A handler shared with the test, which reads what it recorded.
struct Shared<T>(Arc<T>);

impl<T: EventHandler<Pod>> EventHandler<Pod> for Shared<T> {
    fn on_add(&self, obj: &Arc<Pod>, initial: bool) {
        self.0.on_add(obj, initial);
    }
    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        self.0.on_update(old, new);
    }
    fn on_delete(&self, obj: &MaybeTombstone<Pod>) {
        self.0.on_delete(obj);
    }
}

/// Waits (woken by the handler) until it saw `n` notifications, for at most 30 s.
async fn wait_for_notifications(reader: &ListerReader, n: usize) {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let notified = reader.progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if reader.seen.lock().unwrap().notifications >= n {
                return;
            }
            notified.await;
        }
    })
    .await
    .expect("the handler was told of the whole relist");
}

/// Relist atomicity: 10,000 of 20,000 pods are deleted and 10,000 others added
/// while the watch is down; the relist that finds out reaches the cache whole
/// before any handler hears of it, so a handler reading the lister at each of its
/// 20,000 notifications sees the listed set every time (the whole set compared at
/// the first and the last, its size and two keys at the others), and a reader on
/// another thread never sees a part of it. With the per-key queue, whose relist is
/// applied in batches of 128, that reader sees the cache part way. (Real threads: the
/// handler runs beside the informer's task, as it does in production.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relist_reaches_handlers_and_readers_whole() {
    const N: usize = 20_000;
    let source = FakeSource::<Pod>::new();
    for i in 0..N {
        source.add(ns_pod(&format!("p{i:05}")));
    }
    let informer = SharedIndexInformer::with_options(
        source.clone(),
        InformerOptions::default()
            .queue(crate::fifo::QueueMode::InOrder)
            .reflector_options(
                ReflectorOptions::default()
                    .backoff(Duration::from_millis(1), Duration::from_millis(1)),
            ),
    );
    let reader = Arc::new(ListerReader {
        lister: informer.lister(),
        expected: Mutex::new(None),
        seen: Mutex::new(Seen::default()),
        progress: Notify::new(),
    });
    let reg = informer
        .add_event_handler(Shared(Arc::clone(&reader)))
        .unwrap();
    let running = start(&informer);
    informer.wait_synced().await.unwrap();
    tokio::time::timeout(crate::test_support::PATIENCE, async {
        while !reg.has_synced() {
            tokio::time::sleep(crate::test_support::POLL).await;
        }
    })
    .await
    .unwrap();

    let mut listed = BTreeSet::new();
    for i in 0..N / 2 {
        source.delete_drop_watch(ns_pod(&format!("p{i:05}")));
    }
    for i in N / 2..N {
        listed.insert(format!("p{i:05}"));
    }
    for i in 0..N / 2 {
        let name = format!("q{i:05}");
        source.add_drop_watch(ns_pod(&name));
        listed.insert(name);
    }
    *reader.expected.lock().unwrap() = Some(Arc::new(Expected {
        names: listed,
        dropped: "ns/p00000".parse().unwrap(),
        added: format!("ns/q{:05}", N / 2 - 1).parse().unwrap(),
        total: N,
    }));
    // A reader on another thread, as a reconcile worker reading the lister: each
    // state it sees must be the one before the relist or the one after.
    let stop = Arc::new(AtomicBool::new(false));
    let worker = std::thread::spawn({
        let (cache, stop) = (informer.indexer().clone(), Arc::clone(&stop));
        let added = format!("q{:05}", N / 2 - 1);
        move || {
            let (mut reads, mut partial) = (0_usize, 0_usize);
            while !stop.load(Ordering::Relaxed) {
                // One snapshot (one read lock), then its size and two names.
                let snapshot = cache.list();
                let has = |name: &str| {
                    snapshot
                        .iter()
                        .any(|p| p.metadata.name.as_deref() == Some(name))
                };
                let state = (snapshot.len(), has("p00000"), has(&added));
                let whole = matches!(state, (N, true, false) | (N, false, true));
                reads += 1;
                partial += usize::from(!whole);
            }
            (reads, partial)
        }
    });
    source.compact_history();
    source.break_watches();

    // Deletions and additions only: the unchanged pods are resyncs, which a handler
    // without a resync period is not told of.
    wait_for_notifications(&reader, N).await;
    let (notifications, mismatches) = {
        let seen = reader.seen.lock().unwrap();
        (seen.notifications, seen.mismatches.clone())
    };
    assert_eq!(notifications, N);
    assert!(
        mismatches.is_empty(),
        "{} of {N} notifications read a cache that was not the listed set, first: {:?}",
        mismatches.len(),
        mismatches.first()
    );
    stop.store(true, Ordering::Relaxed);
    let (reads, partial) = worker.join().unwrap();
    assert!(reads > 0);
    assert_eq!(
        partial, 0,
        "of {reads} reads on another thread, {partial} saw a part of the relist"
    );
    assert!(informer.reflector_stats().relists >= 1, "a relist happened");
    running.stop().await;
}

/// Records resyncs (updates whose old and new are the same object) and whether the
/// lister held that very object when the handler was told.
struct ResyncRecorder {
    lister: Lister<Pod>,
    resyncs: Mutex<Vec<(String, bool)>>,
}

impl EventHandler<Pod> for ResyncRecorder {
    fn on_add(&self, _: &Arc<Pod>, _: bool) {}
    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        if !Arc::ptr_eq(old, new) {
            return;
        }
        let cached = self
            .lister
            .indexer()
            .get(&meta_namespace_key(new.as_ref()).unwrap());
        let same = cached.is_some_and(|c| Arc::ptr_eq(&c, new));
        let name = new.metadata.name.clone().unwrap();
        self.resyncs.lock().unwrap().push((name, same));
    }
    fn on_delete(&self, _: &MaybeTombstone<Pod>) {}
}

/// Resync atomicity: a resync is one entry of the queue, applied as the cache is
/// when it is processed: each round re-delivers every cached object exactly once,
/// each the very object the lister holds when the handler is told.
#[tokio::test(start_paused = true)]
async fn resync_redelivers_the_cache_as_one_state() {
    let source = FakeSource::<Pod>::new();
    for i in 0..300 {
        source.add(ns_pod(&format!("p{i:03}")));
    }
    let informer = SharedIndexInformer::with_options(
        source.clone(),
        InformerOptions::default()
            .queue(crate::fifo::QueueMode::InOrder)
            .resync(Duration::from_secs(1)),
    );
    let recorder = Arc::new(ResyncRecorder {
        lister: informer.lister(),
        resyncs: Mutex::new(Vec::new()),
    });
    informer
        .add_event_handler_with_resync(Shared(Arc::clone(&recorder)), Duration::from_secs(1))
        .unwrap();
    let running = start(&informer);
    settle().await;
    assert!(informer.has_synced());
    assert!(recorder.resyncs.lock().unwrap().is_empty());
    // The first resync round is due 1 s after the watch started.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    settle().await;
    let round = recorder.resyncs.lock().unwrap().clone();
    let names: BTreeSet<&str> = round.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(round.len(), 300, "one round, every cached object once");
    assert_eq!(names.len(), 300);
    assert!(round.iter().all(|(_, same)| *same), "each as cached");
    running.stop().await;
}
