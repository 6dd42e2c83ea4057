//! Ports of client-go's shared_informer_test.go behaviours, by name, against the
//! in-memory [`FakeSource`]. Time is tokio's paused clock unless a test needs real
//! threads.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::listwatch::{FakeSource, ListWatchError};
use crate::object::DeletedObject;
use crate::reflector::ReflectorOptions;
use crate::store::Indexers;

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

fn labelled(name: &str, key: &str, value: &str) -> Pod {
    let mut p = pod(name);
    p.metadata.labels = Some([(key.to_owned(), value.to_owned())].into());
    p
}

/// Records the names of everything it is told, as client-go's `testListener`.
#[derive(Clone, Default)]
struct TestListener {
    received: Arc<Mutex<Vec<String>>>,
}

impl TestListener {
    fn names(&self) -> BTreeSet<String> {
        self.received.lock().unwrap().iter().cloned().collect()
    }
    fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }
    fn reset(&self) {
        self.received.lock().unwrap().clear();
    }
    fn push(&self, p: &Pod) {
        self.received
            .lock()
            .unwrap()
            .push(p.metadata.name.clone().unwrap_or_default());
    }
}

impl EventHandler<Pod> for TestListener {
    fn on_add(&self, obj: &Arc<Pod>, _: bool) {
        self.push(obj);
    }
    fn on_update(&self, _: &Arc<Pod>, new: &Arc<Pod>) {
        self.push(new);
    }
    fn on_delete(&self, obj: &DeletedObject<Pod>) {
        self.push(obj.object());
    }
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

fn start(informer: &SharedIndexInformer<Pod>) -> (CancellationToken, JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    (cancel, task)
}

/// Lets spawned tasks run without moving the paused clock much.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

async fn eventually(mut cond: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

/// TestIndexer: by_index works after sync, after later adds, and for an indexer
/// added while the informer runs (existing objects are indexed).
#[tokio::test(start_paused = true)]
async fn indexer() {
    let source = FakeSource::<Pod>::new();
    source.add(labelled("a", "app", "web"));
    source.add(labelled("b", "app", "db"));
    let informer = SharedIndexInformer::builder(source.clone())
        .indexers(Indexers::new().with("by_app", |p: &Pod| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app").cloned())
                .into_iter()
                .collect()
        }))
        .build();
    let (cancel, task) = start(&informer);
    informer.wait_synced().await.unwrap();
    let names = |v: Vec<Arc<Pod>>| -> BTreeSet<String> {
        v.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
    };
    assert_eq!(
        names(informer.lister().by_index("by_app", "web").unwrap()),
        set(&["a"])
    );

    source.add(labelled("c", "app", "web"));
    eventually(|| informer.lister().by_index("by_app", "web").unwrap().len() == 2).await;

    informer
        .add_indexers(Indexers::new().with("by_name_len", |p: &Pod| {
            vec![p.metadata.name.as_deref().unwrap_or("").len().to_string()]
        }))
        .unwrap();
    assert_eq!(
        names(informer.lister().by_index("by_name_len", "1").unwrap()),
        set(&["a", "b", "c"])
    );
    assert!(matches!(
        informer.add_indexers(Indexers::new().with("by_app", |_: &Pod| vec![])),
        Err(InformerError::Store(_))
    ));
    assert_eq!(informer.lister().namespaced("ns").list().len(), 3);
    cancel.cancel();
    task.await.unwrap();
}

/// TestListenerResyncPeriods: handlers with resync 0, 2 s and 3 s on an informer
/// whose default is 1 s: all get the initial list; at 2 s only the 2 s handler
/// resyncs; at 3 s only the 3 s handler.
#[tokio::test(start_paused = true)]
async fn listener_resync_periods() {
    let source = FakeSource::<Pod>::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = SharedIndexInformer::builder(source.clone())
        .resync(Duration::from_secs(1))
        .build();
    let listeners: Vec<TestListener> = (0..3).map(|_| TestListener::default()).collect();
    for (l, period) in listeners.iter().zip([0, 2, 3]) {
        informer
            .add_event_handler_with_resync(l.clone(), Duration::from_secs(period))
            .unwrap();
    }
    let (cancel, task) = start(&informer);
    settle().await;
    for l in &listeners {
        assert_eq!(l.names(), set(&["pod1", "pod2"]));
        l.reset();
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(
        listeners[1].names(),
        set(&["pod1", "pod2"]),
        "2 s listener resynced"
    );
    assert_eq!(
        listeners[0].count(),
        0,
        "listener1 should not have resynced"
    );
    assert_eq!(
        listeners[2].count(),
        0,
        "listener3 should not have resynced yet"
    );
    for l in &listeners {
        l.reset();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(
        listeners[2].names(),
        set(&["pod1", "pod2"]),
        "3 s listener resynced"
    );
    assert_eq!(listeners[0].count(), 0);
    assert_eq!(listeners[1].count(), 0);
    cancel.cancel();
    task.await.unwrap();
}

/// TestResyncCheckPeriod: the informer checks at the smallest period asked for
/// before start, and each handler keeps its own period.
#[tokio::test(start_paused = true)]
async fn resync_check_period() {
    let source = FakeSource::<Pod>::new();
    let informer = SharedIndexInformer::builder(source)
        .resync(Duration::from_secs(12 * 3600))
        .build();
    let check = |i: &SharedIndexInformer<Pod>| i.lock_state_for_tests().0;
    let h1 = informer
        .add_event_handler_with_resync(TestListener::default(), Duration::ZERO)
        .unwrap();
    assert_eq!(check(&informer), Duration::from_secs(12 * 3600));
    assert_eq!(informer.listener_resync_period(&h1), Some(Duration::ZERO));
    let h2 = informer
        .add_event_handler_with_resync(TestListener::default(), Duration::from_secs(60))
        .unwrap();
    assert_eq!(check(&informer), Duration::from_secs(60));
    assert_eq!(
        informer.listener_resync_period(&h2),
        Some(Duration::from_secs(60))
    );
    let h3 = informer
        .add_event_handler_with_resync(TestListener::default(), Duration::from_secs(55))
        .unwrap();
    assert_eq!(check(&informer), Duration::from_secs(55));
    assert_eq!(
        informer.listener_resync_period(&h2),
        Some(Duration::from_secs(60))
    );
    assert_eq!(
        informer.listener_resync_period(&h3),
        Some(Duration::from_secs(55))
    );
    let h4 = informer
        .add_event_handler_with_resync(TestListener::default(), Duration::from_secs(5))
        .unwrap();
    assert_eq!(check(&informer), Duration::from_secs(5));
    assert_eq!(informer.listener_resync_period(&h1), Some(Duration::ZERO));
    assert_eq!(
        informer.listener_resync_period(&h2),
        Some(Duration::from_secs(60))
    );
    assert_eq!(
        informer.listener_resync_period(&h3),
        Some(Duration::from_secs(55))
    );
    assert_eq!(
        informer.listener_resync_period(&h4),
        Some(Duration::from_secs(5))
    );
    // Below the minimum: raised to 1 s.
    let h5 = informer
        .add_event_handler_with_resync(TestListener::default(), Duration::from_millis(10))
        .unwrap();
    assert_eq!(
        informer.listener_resync_period(&h5),
        Some(Duration::from_secs(1))
    );
}

/// TestSharedInformerWatchDisruption: after missed events and a dropped watch, the
/// resumed watch delivers the changes; the non-resync listener gets only changed and
/// new objects, the resync listener also the unchanged one.
#[tokio::test(start_paused = true)]
async fn shared_informer_watch_disruption() {
    let source = FakeSource::<Pod>::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = SharedIndexInformer::builder(source.clone())
        .resync(Duration::from_secs(1))
        .build();
    let no_resync = TestListener::default();
    let resync = TestListener::default();
    informer
        .add_event_handler_with_resync(no_resync.clone(), Duration::ZERO)
        .unwrap();
    informer
        .add_event_handler_with_resync(resync.clone(), Duration::from_secs(1))
        .unwrap();
    let (cancel, task) = start(&informer);
    settle().await;
    assert_eq!(no_resync.names(), set(&["pod1", "pod2"]));
    assert_eq!(resync.names(), set(&["pod1", "pod2"]));

    source.add_drop_watch(pod("pod3"));
    let mut p2 = pod("pod2");
    p2.metadata.labels = Some([("changed".to_owned(), "yes".to_owned())].into());
    source.modify_drop_watch(p2);
    settle().await;
    assert_eq!(
        no_resync.names(),
        set(&["pod1", "pod2"]),
        "missed events not seen"
    );
    no_resync.reset();
    resync.reset();

    // The dropped watch delivered nothing in under a second: a "very short watch",
    // so the reflector backs off (0.8–1.6 s), relists and restarts its 1 s resync
    // timer. Three seconds cover a resync round for the resync listener.
    source.break_watches();
    tokio::time::sleep(Duration::from_secs(3)).await;
    settle().await;
    assert_eq!(no_resync.names(), set(&["pod2", "pod3"]));
    assert_eq!(resync.names(), set(&["pod1", "pod2", "pod3"]));
    cancel.cancel();
    task.await.unwrap();
}

/// TestSharedInformerErrorHandling: a list error reaches the watch-error handler.
#[tokio::test(start_paused = true)]
async fn shared_informer_error_handling() {
    let source = FakeSource::<Pod>::new();
    source.add(pod("pod1"));
    let mut denied = kube::core::Status::failure("Access Denied", "Forbidden").with_code(403);
    denied.reason = "Forbidden".into();
    source.fail_lists(ListWatchError::Api(Box::new(denied)));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let e = errors.clone();
    let informer = SharedIndexInformer::builder(source.clone())
        .resync(Duration::from_secs(1))
        .reflector_options(ReflectorOptions::default().watch_error_handler(move |err| {
            let mut msg = err.to_string();
            let mut src = std::error::Error::source(err);
            while let Some(s) = src {
                msg.push_str(&format!(": {s}"));
                src = s.source();
            }
            e.lock().unwrap().push(msg);
        }))
        .build();
    let (cancel, task) = start(&informer);
    eventually(|| !errors.lock().unwrap().is_empty()).await;
    assert!(
        errors.lock().unwrap()[0].contains("Access Denied"),
        "{:?}",
        errors.lock().unwrap()
    );
    assert!(!informer.has_synced());
    cancel.cancel();
    task.await.unwrap();
}

/// TestSharedInformerTransformer: the transform runs before objects are cached and
/// handlers see the transformed objects. (It cannot be set after start: only the
/// builder sets it.)
#[tokio::test(start_paused = true)]
async fn shared_informer_transformer() {
    let source = FakeSource::<Pod>::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let informer = SharedIndexInformer::builder(source.clone())
        .resync(Duration::from_secs(1))
        .transform(Arc::new(move |p: Arc<Pod>| {
            c.fetch_add(1, Ordering::SeqCst);
            let mut p = Arc::unwrap_or_clone(p);
            p.metadata.name = p.metadata.name.map(|n| n.to_uppercase());
            Arc::new(p)
        }))
        .build();
    let l = TestListener::default();
    informer.add_event_handler(l.clone()).unwrap();
    let (cancel, task) = start(&informer);
    settle().await;
    assert_eq!(l.names(), set(&["POD1", "POD2"]));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "once per object");
    assert!(informer.lister().get(Some("ns"), "POD1").is_some());
    cancel.cancel();
    task.await.unwrap();
}

/// TestSharedInformerRemoveHandler: a removed handler is no longer registered;
/// removing it again is harmless.
#[tokio::test(start_paused = true)]
async fn shared_informer_remove_handler() {
    let informer = SharedIndexInformer::new(FakeSource::<Pod>::new());
    let reg1 = informer.add_event_fn(|_| {}).unwrap();
    let reg2 = informer.add_event_fn(|_| {}).unwrap();
    assert_eq!(informer.handler_count(), 2);
    informer.remove_event_handler(&reg2);
    assert!(!informer.is_registered(&reg2));
    assert!(informer.is_registered(&reg1));
    assert_eq!(informer.handler_count(), 1);
    informer.remove_event_handler(&reg1);
    assert_eq!(informer.handler_count(), 0);
}

/// TestSharedInformerRemoveForeignHandler: removing another informer's registration
/// is a no-op.
#[tokio::test(start_paused = true)]
async fn shared_informer_remove_foreign_handler() {
    let a = SharedIndexInformer::new(FakeSource::<Pod>::new());
    let b = SharedIndexInformer::new(FakeSource::<Pod>::new());
    let reg_a = a.add_event_fn(|_| {}).unwrap();
    let reg_b = b.add_event_fn(|_| {}).unwrap();
    a.remove_event_handler(&reg_b);
    b.remove_event_handler(&reg_a);
    assert!(a.is_registered(&reg_a));
    assert!(b.is_registered(&reg_b));
    assert!(!a.is_registered(&reg_b));
    assert_eq!((a.handler_count(), b.handler_count()), (1, 1));
}

/// TestSharedInformerMultipleRegistration: the same handler registered twice gets
/// two registrations, removable one at a time.
#[tokio::test(start_paused = true)]
async fn shared_informer_multiple_registration() {
    let informer = SharedIndexInformer::new(FakeSource::<Pod>::new());
    let shared = TestListener::default();
    let reg1 = informer.add_event_handler(shared.clone()).unwrap();
    let reg2 = informer.add_event_handler(shared).unwrap();
    assert_eq!(informer.handler_count(), 2);
    informer.remove_event_handler(&reg1);
    assert!(!informer.is_registered(&reg1));
    assert!(informer.is_registered(&reg2));
    assert_eq!(informer.handler_count(), 1);
    informer.remove_event_handler(&reg2);
    assert_eq!(informer.handler_count(), 0);
}

/// TestRemovingRemovedSharedInformer: removing twice is fine.
#[tokio::test(start_paused = true)]
async fn removing_removed_shared_informer() {
    let informer = SharedIndexInformer::new(FakeSource::<Pod>::new());
    let reg = informer.add_event_fn(|_| {}).unwrap();
    informer.remove_event_handler(&reg);
    informer.remove_event_handler(&reg);
    assert!(!informer.is_registered(&reg));
    assert_eq!(informer.handler_count(), 0);
}

/// TestAddOnStoppedSharedInformer: adding to a stopped informer is an error.
#[tokio::test(start_paused = true)]
async fn add_on_stopped_shared_informer() {
    let informer = SharedIndexInformer::new(FakeSource::<Pod>::new());
    let (cancel, task) = start(&informer);
    settle().await;
    cancel.cancel();
    task.await.unwrap();
    assert!(informer.is_stopped());
    assert_eq!(
        informer.add_event_fn(|_| {}).unwrap_err(),
        InformerError::Stopped
    );
}

/// TestRemoveOnStoppedSharedInformer: removing from a stopped informer works.
#[tokio::test(start_paused = true)]
async fn remove_on_stopped_shared_informer() {
    let source = FakeSource::<Pod>::new();
    source.add(pod("pod1"));
    let informer = SharedIndexInformer::builder(source)
        .resync(Duration::from_secs(1))
        .build();
    let reg = informer.add_event_handler(TestListener::default()).unwrap();
    let (cancel, task) = start(&informer);
    settle().await;
    cancel.cancel();
    task.await.unwrap();
    assert!(informer.is_stopped());
    informer.remove_event_handler(&reg);
    assert!(!informer.is_registered(&reg));
}

/// TestRemoveWhileActive: after removal the handler gets no more events.
#[tokio::test(start_paused = true)]
async fn remove_while_active() {
    let source = FakeSource::<Pod>::new();
    let informer = SharedIndexInformer::new(source.clone());
    let l = TestListener::default();
    let reg = informer.add_event_handler(l.clone()).unwrap();
    let (cancel, task) = start(&informer);
    settle().await;
    source.add(pod("pod1"));
    eventually(|| l.names() == set(&["pod1"])).await;
    informer.remove_event_handler(&reg);
    assert!(!informer.is_registered(&reg));
    source.add(pod("pod2"));
    eventually(|| informer.indexer().len() == 2).await;
    settle().await;
    assert_eq!(l.names(), set(&["pod1"]), "no event after removal");
    cancel.cancel();
    task.await.unwrap();
}

/// TestAddWhileActive: a handler added after start first gets the cached objects as
/// initial adds; its `has_synced` turns true only once it has handled them.
#[tokio::test(start_paused = true)]
async fn add_while_active() {
    let source = FakeSource::<Pod>::new();
    let informer = SharedIndexInformer::new(source.clone());
    let l1 = TestListener::default();
    let reg1 = informer.add_event_handler(l1.clone()).unwrap();
    assert!(!reg1.has_synced(), "synced before run");
    let (cancel, task) = start(&informer);
    source.add(pod("pod1"));
    eventually(|| l1.names() == set(&["pod1"])).await;
    eventually(|| reg1.has_synced()).await;

    let initial = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
    let i = initial.clone();
    let reg2 = informer
        .add_event_fn(move |ev: Event<Pod>| {
            if let Event::Added {
                obj,
                is_in_initial_list,
            } = ev
            {
                i.lock()
                    .unwrap()
                    .push((obj.metadata.name.clone().unwrap(), is_in_initial_list));
            }
        })
        .unwrap();
    assert!(
        !reg2.has_synced(),
        "synced before handling the synthetic adds"
    );
    source.add(pod("pod2"));
    eventually(|| initial.lock().unwrap().len() == 2).await;
    assert_eq!(
        *initial.lock().unwrap(),
        [("pod1".to_owned(), true), ("pod2".to_owned(), false)]
    );
    assert!(reg2.has_synced());
    cancel.cancel();
    task.await.unwrap();
}

/// TestEventPanics: a panicking handler is caught; its listener goes on after a
/// pause, and other handlers and the informer are unaffected.
#[tokio::test(start_paused = true)]
async fn event_panics() {
    let source = FakeSource::<Pod>::new();
    let informer = SharedIndexInformer::new(source.clone());
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    informer
        .add_event_fn(move |ev: Event<Pod>| {
            let Event::Added { obj, .. } = ev else { return };
            let name = obj.metadata.name.clone().unwrap();
            if name == "boom" {
                panic!("handler exploded on {name}");
            }
            s.lock().unwrap().push(name);
        })
        .unwrap();
    let calm = TestListener::default();
    informer.add_event_handler(calm.clone()).unwrap();
    let (cancel, task) = start(&informer);
    settle().await;
    source.add(pod("boom"));
    source.add(pod("after"));
    eventually(|| calm.count() == 2).await;
    let before = tokio::time::Instant::now();
    eventually(|| seen.lock().unwrap().len() == 1).await;
    assert!(
        before.elapsed() >= Duration::from_millis(900),
        "the listener paused after the panic"
    );
    assert_eq!(*seen.lock().unwrap(), ["after"]);
    assert!(informer.has_synced());
    assert_eq!(
        informer.reflector_stats().handler_panics,
        1,
        "the panic is counted"
    );
    cancel.cancel();
    task.await.unwrap();
}

/// TestShutdown: `run` returns only after every listener task has ended, and the
/// informer holds no task afterwards.
#[tokio::test(start_paused = true)]
async fn shutdown() {
    let source = FakeSource::<Pod>::new();
    source.add(pod("pod1"));
    let informer = SharedIndexInformer::new(source.clone());
    let handler = TestListener::default();
    informer.add_event_handler(handler.clone()).unwrap();
    let (cancel, task) = start(&informer);
    eventually(|| informer.has_synced()).await;
    cancel.cancel();
    task.await.unwrap();
    assert!(informer.is_stopped());
    assert_eq!(source.open_watches(), 0, "the watch was dropped");
    assert_eq!(
        Arc::strong_count(&handler.received),
        2,
        "the listener task released its handler"
    );
}

/// Once stopped and no longer referenced, an informer frees its cache and its
/// handlers: nothing it started keeps a handle to it.
#[tokio::test(start_paused = true)]
async fn dropped_informer_frees_its_cache_and_handlers() {
    let source = FakeSource::<Pod>::new();
    source.add(pod("pod1"));
    let informer = SharedIndexInformer::builder(source.clone())
        .resync(Duration::from_secs(1))
        .build();
    let handler = TestListener::default();
    // The registration holds the informer (for its `has_synced`); drop it too.
    drop(
        informer
            .add_event_handler_with_resync(handler.clone(), Duration::from_secs(1))
            .unwrap(),
    );
    let (cancel, task) = start(&informer);
    eventually(|| informer.has_synced()).await;
    let cached = informer.lister().get(Some("ns"), "pod1").unwrap();
    cancel.cancel();
    task.await.unwrap();
    drop(informer);
    assert_eq!(
        Arc::strong_count(&cached),
        1,
        "the cache still holds the object"
    );
    assert_eq!(
        Arc::strong_count(&handler.received),
        1,
        "the handler was not dropped"
    );
}

/// Deletes reach handlers, including tombstones for deletes seen only by a relist.
#[tokio::test(start_paused = true)]
async fn deletes_and_tombstones_reach_handlers() {
    let source = FakeSource::<Pod>::new();
    source.add(pod("kept"));
    let gone = source.add(pod("gone"));
    let missed = source.add(pod("missed"));
    let informer = SharedIndexInformer::new(source.clone());
    let deletes = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
    let d = deletes.clone();
    informer
        .add_event_fn(move |ev: Event<Pod>| {
            if let Event::Deleted(o) = ev {
                d.lock()
                    .unwrap()
                    .push((o.object().metadata.name.clone().unwrap(), o.is_tombstone()));
            }
        })
        .unwrap();
    let (cancel, task) = start(&informer);
    eventually(|| informer.has_synced()).await;
    source.delete(gone);
    eventually(|| deletes.lock().unwrap().len() == 1).await;
    // A delete the watch never reports, then a forced relist.
    source.delete_drop_watch(missed);
    source.compact_history();
    source.break_watches();
    eventually(|| deletes.lock().unwrap().len() == 2).await;
    assert_eq!(
        *deletes.lock().unwrap(),
        [("gone".to_owned(), false), ("missed".to_owned(), true)]
    );
    assert_eq!(informer.indexer().len(), 1);
    cancel.cancel();
    task.await.unwrap();
}

/// A slow handler never delays a fast one: while a handler sleeping 100 ms per event
/// has handled fewer than 100, a fast handler has handled all 10,000.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_handler_does_not_delay_fast_handler() {
    let source = FakeSource::<Pod>::new();
    let informer = SharedIndexInformer::new(source.clone());
    let fast = Arc::new(AtomicUsize::new(0));
    let slow = Arc::new(AtomicUsize::new(0));
    let (f, s) = (fast.clone(), slow.clone());
    informer
        .add_event_fn(move |ev: Event<Pod>| {
            if let Event::Added { .. } = ev {
                f.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    informer
        .add_event_fn(move |ev: Event<Pod>| {
            if let Event::Added { .. } = ev {
                std::thread::sleep(Duration::from_millis(100));
                s.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    let (cancel, task) = start(&informer);
    for i in 0..10_000 {
        source.add(pod(&format!("p{i}")));
    }
    let done = tokio::time::timeout(Duration::from_secs(60), async {
        while fast.load(Ordering::SeqCst) < 10_000 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        done.is_ok(),
        "fast handler stalled at {}",
        fast.load(Ordering::SeqCst)
    );
    let slow_seen = slow.load(Ordering::SeqCst);
    assert!(slow_seen < 100, "slow handler already handled {slow_seen}");
    cancel.cancel();
    task.await.unwrap();
}

/// Lists nothing, then streams `events` ADDED pods that are all ready at once,
/// counting how many the informer has pulled.
struct AlwaysReady {
    events: usize,
    pulled: Arc<AtomicUsize>,
}

impl crate::listwatch::ListerWatcher<Pod> for AlwaysReady {
    async fn list(
        &self,
        _: &kube::api::ListParams,
    ) -> Result<kube::api::ObjectList<Pod>, ListWatchError> {
        Ok(crate::reflector::tests::pod_list("1", None, Vec::new()))
    }

    async fn watch(
        &self,
        _: &kube::api::WatchParams,
        _: &str,
    ) -> Result<crate::listwatch::WatchStream<Pod>, ListWatchError> {
        use futures::StreamExt;
        let pulled = Arc::clone(&self.pulled);
        Ok(futures::stream::iter(0..self.events)
            .map(move |i| {
                pulled.fetch_add(1, Ordering::SeqCst);
                let p = crate::reflector::tests::pod(&format!("p{i}"), &(i + 2).to_string());
                Ok(kube::api::WatchEvent::Added(p))
            })
            .chain(futures::stream::pending())
            .boxed())
    }
}

/// A watch stream that never waits does not keep the informer's task from yielding:
/// on a single-threaded runtime, handlers see the first events and another task
/// runs while the stream is still being pulled (so the FIFO never holds the whole
/// stream).
#[tokio::test(flavor = "current_thread")]
async fn always_ready_watch_does_not_monopolize_the_thread() {
    const EVENTS: usize = 5_000;
    let pulled = Arc::new(AtomicUsize::new(0));
    let informer = SharedIndexInformer::new(AlwaysReady {
        events: EVENTS,
        pulled: Arc::clone(&pulled),
    });
    // How far the stream had been pulled when the handler saw its first event.
    let pulled_at_first_event = Arc::new(AtomicUsize::new(usize::MAX));
    let seen = Arc::new(AtomicUsize::new(0));
    informer
        .add_event_fn({
            let (pulled, first, seen) =
                (pulled.clone(), pulled_at_first_event.clone(), seen.clone());
            move |ev: Event<Pod>| {
                let Event::Added { .. } = ev else { return };
                let _ = first.compare_exchange(
                    usize::MAX,
                    pulled.load(Ordering::SeqCst),
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
                seen.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    let ran_mid_stream = Arc::new(AtomicUsize::new(0));
    let cancel = CancellationToken::new();
    let ticker = tokio::spawn({
        let (pulled, ran, cancel) = (pulled.clone(), ran_mid_stream.clone(), cancel.clone());
        async move {
            while !cancel.is_cancelled() {
                let n = pulled.load(Ordering::SeqCst);
                if n > 0 && n < EVENTS {
                    ran.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
            }
        }
    });
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    while seen.load(Ordering::SeqCst) < EVENTS {
        tokio::task::yield_now().await;
    }
    cancel.cancel();
    task.await.unwrap();
    ticker.await.unwrap();
    let first = pulled_at_first_event.load(Ordering::SeqCst);
    assert!(
        first < EVENTS,
        "the first event reached the handler only after {first} of {EVENTS} were pulled"
    );
    assert!(
        ran_mid_stream.load(Ordering::SeqCst) > 0,
        "no other task ran while the stream was pulled"
    );
    assert_eq!(informer.indexer().len(), EVENTS);
}

/// As client-go's OnUpdate: a Sync delta is a resync; a Replaced one is when the
/// resource version did not change; an Updated one never is, even with the cached
/// resource version (so handlers without resync still get it).
#[tokio::test(start_paused = true)]
async fn only_sync_and_unchanged_replaced_deltas_are_resyncs() {
    use crate::fifo::{Delta, DeltaObject, DeltaType, Deltas, PoppedItem};
    use crate::informer::notification::Notification;
    use crate::store::Store;
    let informer = SharedIndexInformer::new(FakeSource::<Pod>::new());
    let mut cached = pod("p");
    cached.metadata.resource_version = Some("5".into());
    let cached = Arc::new(cached);
    informer.indexer().add(Arc::clone(&cached)).unwrap();
    let mut newer = pod("p");
    newer.metadata.resource_version = Some("6".into());
    let newer = Arc::new(newer);
    let cases = [
        (DeltaType::Sync, &cached, true),
        (DeltaType::Replaced, &cached, true),
        (DeltaType::Replaced, &newer, false),
        (DeltaType::Updated, &cached, false),
        (DeltaType::Added, &cached, false),
    ];
    for (delta_type, obj, want) in cases {
        let item = PoppedItem {
            key: crate::object::meta_namespace_key(obj.as_ref()).unwrap(),
            deltas: Deltas::one(Delta {
                delta_type,
                object: DeltaObject::Object(Arc::clone(obj)),
            }),
            is_in_initial_list: false,
        };
        let out = informer.handle_deltas_for_tests(item);
        assert_eq!(out.len(), 1);
        assert!(
            matches!(out[0], Notification::Update { .. }),
            "{delta_type:?} of a cached object is an update"
        );
        assert_eq!(
            out[0].is_sync(),
            want,
            "{delta_type:?} at rv {:?}",
            obj.metadata.resource_version
        );
    }
}

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
    fn on_delete(&self, _: &DeletedObject<Pod>) {}
}

/// The informer's and a registration's `wait_synced` return at the instant of sync
/// (paused clock: no 100 ms polling step), after the first lists failed for a while,
/// and a handler added after sync is waited for through its own initial adds.
#[tokio::test(start_paused = true)]
async fn wait_synced_wakes_at_sync_without_polling() {
    let source = FakeSource::<Pod>::new();
    for i in 0..50 {
        source.add(pod(&format!("p{i}")));
    }
    source.fail_lists(ListWatchError::Api(Box::new(
        kube::core::Status::failure("unavailable", "InternalError").with_code(500),
    )));
    let informer = SharedIndexInformer::new(source.clone());
    let clock = SyncClock::default();
    let reg = informer.add_event_handler(clock.clone()).unwrap();
    let (cancel, task) = start(&informer);
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
    cancel.cancel();
    task.await.unwrap();
}

/// A wait for sync ends with an error, not a hang, when the informer stops first.
#[tokio::test(start_paused = true)]
async fn wait_synced_fails_when_the_informer_stops_first() {
    let source = FakeSource::<Pod>::new();
    source.fail_lists(ListWatchError::Api(Box::new(
        kube::core::Status::failure("unavailable", "InternalError").with_code(500),
    )));
    let informer = SharedIndexInformer::new(source);
    let reg = informer.add_event_handler(SyncClock::default()).unwrap();
    let (cancel, task) = start(&informer);
    let waits = tokio::spawn({
        let (informer, reg) = (informer.clone(), reg.clone());
        async move { (informer.wait_synced().await, reg.wait_synced().await) }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    cancel.cancel();
    task.await.unwrap();
    let (informer_wait, reg_wait) = waits.await.unwrap();
    assert_eq!(informer_wait, Err(InformerError::StoppedBeforeSync));
    assert_eq!(reg_wait, Err(InformerError::StoppedBeforeSync));
}

/// Read-your-writes: `wait_for_resource_version(rv)` returns once the cache holds
/// the write that produced `rv`, not before; a version already applied returns at
/// once.
#[tokio::test(start_paused = true)]
async fn wait_for_resource_version_returns_once_the_cache_has_the_write() {
    let source = FakeSource::<Pod>::new();
    let first = source.add(pod("a"));
    let informer = SharedIndexInformer::new(source.clone());
    let (cancel, task) = start(&informer);
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
    let mut changed = pod("a");
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
    source.add(pod("b"));
    later.await.unwrap().unwrap();
    assert!(informer.lister().get(Some("ns"), "b").is_some());
    cancel.cancel();
    task.await.unwrap();
}
