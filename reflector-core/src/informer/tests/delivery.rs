//! How events reach handlers: transformed once, tombstones, panics caught, a slow
//! handler never delaying a fast one, an always-ready watch not hogging the thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio_util::sync::CancellationToken;

use crate::fifo::QueueMode;
use crate::informer::*;
use crate::listwatch::{FakeSource, ListWatchError};

use crate::test_support::*;

each_queue!(
    #[tokio::test(start_paused = true)]
    shared_informer_transformer
);

/// TestSharedInformerTransformer: the transform runs before objects are cached and
/// handlers see the transformed objects. (It cannot be set after start: only the
/// builder sets it.)
async fn shared_informer_transformer(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    source.add(ns_pod("pod1"));
    source.add(ns_pod("pod2"));
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let informer = SharedIndexInformer::with_options(
        source.clone(),
        InformerOptions::default()
            .queue(queue)
            .resync(Duration::from_secs(1))
            .transform(move |p: Arc<Pod>| {
                c.fetch_add(1, Ordering::SeqCst);
                let mut p = Arc::unwrap_or_clone(p);
                p.metadata.name = p.metadata.name.map(|n| n.to_uppercase());
                Arc::new(p)
            }),
    );
    let l = TestListener::default();
    informer.add_event_handler(l.clone()).unwrap();
    let running = start(&informer);
    settle().await;
    assert_eq!(l.names(), set(&["POD1", "POD2"]));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "once per object");
    assert!(informer.lister().get(Some("ns"), "POD1").is_some());
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    event_panics
);

/// TestEventPanics: a panicking handler is caught; its listener goes on after a
/// pause, and other handlers and the informer are unaffected.
async fn event_panics(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    let informer =
        SharedIndexInformer::with_options(source.clone(), InformerOptions::default().queue(queue));
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    informer
        .add_event_fn(move |ev: Change<Pod>| {
            let Change::Added { obj, .. } = ev else {
                return;
            };
            let name = obj.metadata.name.clone().unwrap();
            if name == "boom" {
                panic!("handler exploded on {name}");
            }
            s.lock().unwrap().push(name);
        })
        .unwrap();
    let calm = TestListener::default();
    informer.add_event_handler(calm.clone()).unwrap();
    let running = start(&informer);
    settle().await;
    source.add(ns_pod("boom"));
    source.add(ns_pod("after"));
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
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    a_panic_mid_batch_resumes_with_the_rest_of_the_batch
);

/// A handler that panics in the middle of a batch (the initial list) still gets the
/// rest of that batch, after the pause, and its registration syncs.
async fn a_panic_mid_batch_resumes_with_the_rest_of_the_batch(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    for i in 0..5 {
        source.add(ns_pod(&format!("p{i}")));
    }
    let informer =
        SharedIndexInformer::with_options(source.clone(), InformerOptions::default().queue(queue));
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    let registration = informer
        .add_event_fn(move |ev: Change<Pod>| {
            let Change::Added { obj, .. } = ev else {
                return;
            };
            let name = obj.metadata.name.clone().unwrap();
            assert_ne!(name, "p1", "the handler exploded");
            s.lock().unwrap().push(name);
        })
        .unwrap();
    let started = tokio::time::Instant::now();
    let running = start(&informer);
    eventually(|| registration.has_synced()).await;
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "the listener paused after the panic"
    );
    let mut names = seen.lock().unwrap().clone();
    names.sort();
    assert_eq!(names, ["p0", "p2", "p3", "p4"]);
    assert_eq!(informer.reflector_stats().handler_panics, 1);
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    deletes_and_tombstones_reach_handlers
);

/// Deletes reach handlers, including tombstones for deletes seen only by a relist.
async fn deletes_and_tombstones_reach_handlers(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    source.add(ns_pod("kept"));
    let gone = source.add(ns_pod("gone"));
    let missed = source.add(ns_pod("missed"));
    let informer =
        SharedIndexInformer::with_options(source.clone(), InformerOptions::default().queue(queue));
    let deletes = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
    let d = deletes.clone();
    informer
        .add_event_fn(move |ev: Change<Pod>| {
            if let Change::Deleted(o) = ev {
                d.lock()
                    .unwrap()
                    .push((o.object().metadata.name.clone().unwrap(), o.is_tombstone()));
            }
        })
        .unwrap();
    let running = start(&informer);
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
    running.stop().await;
}

each_queue!(
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    slow_handler_does_not_delay_fast_handler
);

/// A slow handler never delays a fast one: while a handler sleeping 100 ms per event
/// has handled fewer than 100, a fast handler has handled all 10,000.
async fn slow_handler_does_not_delay_fast_handler(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    let informer =
        SharedIndexInformer::with_options(source.clone(), InformerOptions::default().queue(queue));
    let fast = Arc::new(AtomicUsize::new(0));
    let slow = Arc::new(AtomicUsize::new(0));
    let (f, s) = (fast.clone(), slow.clone());
    informer
        .add_event_fn(move |ev: Change<Pod>| {
            if let Change::Added { .. } = ev {
                f.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    informer
        .add_event_fn(move |ev: Change<Pod>| {
            if let Change::Added { .. } = ev {
                std::thread::sleep(Duration::from_millis(100));
                s.fetch_add(1, Ordering::SeqCst);
            }
        })
        .unwrap();
    let running = start(&informer);
    for i in 0..10_000 {
        source.add(ns_pod(&format!("p{i}")));
    }
    let done = tokio::time::timeout(crate::test_support::PATIENCE, async {
        while fast.load(Ordering::SeqCst) < 10_000 {
            tokio::time::sleep(crate::test_support::POLL).await;
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
    running.stop().await;
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
        Ok(pod_list("1", None, Vec::new()))
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
                let p = pod(&format!("p{i}"), &(i + 2).to_string());
                Ok(kube::api::WatchEvent::Added(p))
            })
            .chain(futures::stream::pending())
            .boxed())
    }
}

each_queue!(
    #[tokio::test(flavor = "current_thread")]
    always_ready_watch_does_not_monopolize_the_thread
);

/// A watch stream that never waits does not keep the informer's task from yielding:
/// on a single-threaded runtime, handlers see the first events and another task
/// runs while the stream is still being pulled (so the FIFO never holds the whole
/// stream).
async fn always_ready_watch_does_not_monopolize_the_thread(queue: QueueMode) {
    const EVENTS: usize = 5_000;
    let pulled = Arc::new(AtomicUsize::new(0));
    let informer = SharedIndexInformer::with_options(
        AlwaysReady {
            events: EVENTS,
            pulled: Arc::clone(&pulled),
        },
        InformerOptions::default().queue(queue),
    );
    // How far the stream had been pulled when the handler saw its first event.
    let pulled_at_first_event = Arc::new(AtomicUsize::new(usize::MAX));
    let seen = Arc::new(AtomicUsize::new(0));
    informer
        .add_event_fn({
            let (pulled, first, seen) =
                (pulled.clone(), pulled_at_first_event.clone(), seen.clone());
            move |ev: Change<Pod>| {
                let Change::Added { .. } = ev else { return };
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
