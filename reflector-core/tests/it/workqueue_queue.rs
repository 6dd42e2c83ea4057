//! Ports of client-go's `util/workqueue/queue_test.go`, plus cancel safety.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use reflector_core::workqueue::WorkQueue;
use tokio::task::JoinSet;
use tokio::time::timeout;

use crate::support::patience::PATIENCE;

/// Sentinel the `basic` test adds after shutdown (client-go's "added after shutdown!").
const ADDED_AFTER_SHUTDOWN: i32 = -1;

async fn shutdown(queue: &WorkQueue<i32>, drain: bool) {
    if drain {
        queue.shutdown_with_drain().await;
    } else {
        queue.shutdown();
    }
}

async fn run_basic(drain: bool) {
    let queue: WorkQueue<i32> = WorkQueue::new();
    let processed: Arc<Mutex<HashMap<i32, usize>>> = Arc::default();

    let mut producers = JoinSet::new();
    for i in 0..50 {
        let queue = queue.clone();
        producers.spawn(async move {
            for _ in 0..50 {
                queue.add(i);
                tokio::task::yield_now().await;
            }
        });
    }

    let mut consumers = JoinSet::new();
    for _ in 0..10 {
        let queue = queue.clone();
        let processed = Arc::clone(&processed);
        consumers.spawn(async move {
            while let Some(item) = queue.get().await {
                assert_ne!(
                    item, ADDED_AFTER_SHUTDOWN,
                    "got an item added after shutdown"
                );
                *processed.lock().unwrap().entry(item).or_default() += 1;
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                queue.done(&item);
            }
        });
    }

    while let Some(res) = producers.join_next().await {
        res.unwrap();
    }
    shutdown(&queue, drain).await;
    queue.add(ADDED_AFTER_SHUTDOWN);
    while let Some(res) = consumers.join_next().await {
        res.unwrap();
    }
    assert_eq!(queue.len(), 0, "expected the queue to be empty");
    let processed = processed.lock().unwrap();
    for i in 0..50 {
        assert!(
            processed.get(&i).copied().unwrap_or(0) >= 1,
            "item {i} never processed"
        );
    }
    assert!(!processed.contains_key(&ADDED_AFTER_SHUTDOWN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn basic() {
    for drain in [false, true] {
        timeout(PATIENCE, run_basic(drain))
            .await
            .expect("basic hung");
    }
}

async fn run_add_while_processing(drain: bool) {
    let queue: WorkQueue<i32> = WorkQueue::new();
    let mut producers = JoinSet::new();
    for i in 0..50 {
        let queue = queue.clone();
        producers.spawn(async move { queue.add(i) });
    }
    let mut consumers = JoinSet::new();
    for _ in 0..10 {
        let queue = queue.clone();
        consumers.spawn(async move {
            // Every worker re-adds every item up to two times: the
            // dirty-while-processing case.
            let mut counters: HashMap<i32, usize> = HashMap::new();
            while let Some(item) = queue.get().await {
                let seen = counters.entry(item).or_default();
                *seen += 1;
                if *seen < 2 {
                    queue.add(item);
                }
                queue.done(&item);
            }
            counters
        });
    }
    while let Some(res) = producers.join_next().await {
        res.unwrap();
    }
    shutdown(&queue, drain).await;
    while let Some(res) = consumers.join_next().await {
        res.unwrap();
    }
    assert_eq!(queue.len(), 0, "expected the queue to be empty");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn add_while_processing() {
    for drain in [false, true] {
        timeout(PATIENCE, run_add_while_processing(drain))
            .await
            .expect("add_while_processing hung");
    }
}

#[test]
fn len() {
    let queue = WorkQueue::new();
    queue.add("foo");
    assert_eq!(queue.len(), 1);
    queue.add("bar");
    assert_eq!(queue.len(), 2);
    queue.add("foo"); // should not increase the queue length
    assert_eq!(queue.len(), 2);
}

#[tokio::test]
async fn reinsert() {
    let queue = WorkQueue::new();
    queue.add("foo");
    // Start processing.
    let item = queue.get().await.unwrap();
    assert_eq!(item, "foo");
    // Add it back while processing: not handed out while still processing.
    queue.add(item);
    assert_eq!(queue.len(), 0);
    // Finish it up.
    queue.done(&item);
    // It should be back on the queue.
    assert_eq!(queue.len(), 1);
    let item = queue.get().await.unwrap();
    assert_eq!(item, "foo");
    // Finish that one up.
    queue.done(&item);
    assert_eq!(queue.len(), 0, "expected queue to be empty");
}

/// A queue whose "foo" is being processed and was added again meanwhile (dirty).
async fn processing_and_dirty() -> (WorkQueue<&'static str>, &'static str) {
    let queue = WorkQueue::new();
    queue.add("foo");
    let first = queue.get().await.unwrap();
    queue.add("foo");
    (queue, first)
}

#[tokio::test]
async fn processing_item_is_not_handed_to_a_second_worker() {
    let (queue, first) = processing_and_dirty().await;
    // A second worker finds nothing while the first holds "foo".
    assert!(queue.get().now_or_never().is_none());
    queue.done(&first);
    assert_eq!(queue.get().now_or_never(), Some(Some("foo")));
}

/// Polls `task` a few scheduler rounds and reports whether it has finished.
async fn finishes_soon(task: &tokio::task::JoinHandle<()>) -> bool {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    task.is_finished()
}

/// A queue with "foo" and "bar" both handed out and not yet done.
async fn two_in_flight() -> (WorkQueue<&'static str>, &'static str, &'static str) {
    let queue = WorkQueue::new();
    queue.add("foo");
    queue.add("bar");
    let first = queue.get().await.unwrap();
    let second = queue.get().await.unwrap();
    (queue, first, second)
}

/// Starts `shutdown_with_drain` in a task of its own, empties the queue, and
/// checks that the drain still waits for the items handed out.
async fn drain_waiting_for_done(queue: &WorkQueue<&'static str>) -> tokio::task::JoinHandle<()> {
    let drainer = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.shutdown_with_drain().await })
    };
    while queue.get().await.is_some() {}
    assert!(
        !finishes_soon(&drainer).await,
        "drain returned with items still processing"
    );
    drainer
}

#[tokio::test]
async fn queue_drainage_using_shut_down_with_drain() {
    let (queue, first, second) = two_in_flight().await;
    // ShutDownWithDrain is called before the items are marked done.
    let drainer = drain_waiting_for_done(&queue).await;

    queue.done(&first);
    assert!(
        !finishes_soon(&drainer).await,
        "drain returned with an item still processing"
    );
    queue.done(&second);
    timeout(PATIENCE, drainer)
        .await
        .expect("drain hung")
        .unwrap();
}

#[tokio::test]
async fn no_queue_drainage_using_shut_down() {
    let (queue, _first, _second) = two_in_flight().await;
    // ShutDown returns at once although nothing was marked done.
    queue.shutdown();
    assert!(queue.is_shutting_down());
    assert_eq!(queue.get().await, None);
}

#[tokio::test]
async fn force_queue_shutdown_using_shut_down() {
    let (queue, _first, _second) = two_in_flight().await;
    let drainer = drain_waiting_for_done(&queue).await;

    // A second signal forces the shutdown: the drain returns without any done.
    queue.shutdown();
    timeout(PATIENCE, drainer)
        .await
        .expect("drain hung")
        .unwrap();
}

#[tokio::test]
async fn queue_drainage_using_shut_down_with_drain_with_dirty_item() {
    let (queue, gotten) = processing_and_dirty().await;

    let drainer = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.shutdown_with_drain().await })
    };
    // ShutDownWithDrain has started and is blocked.
    while queue.get().await.is_some() {}
    assert!(!finishes_soon(&drainer).await);

    // Finish "working": the dirty item goes back into the queue.
    queue.done(&gotten);
    let again = queue.get().await.expect("should not have been done");
    assert_eq!(again, "foo");
    queue.done(&again);

    // Now we are really done.
    assert_eq!(queue.get().await, None, "should have been done");
    timeout(PATIENCE, drainer)
        .await
        .expect("drain hung")
        .unwrap();
}

#[tokio::test]
async fn get_is_cancel_safe() {
    let queue: WorkQueue<&str> = WorkQueue::new();

    // The getter to be dropped registers first (tokio wakes waiters in FIFO
    // order), a second getter is waiting behind it.
    let mut dropped = Box::pin(queue.get());
    assert!(futures::poll!(dropped.as_mut()).is_pending());
    let waiter = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.get().await })
    };
    for _ in 0..5 {
        tokio::task::yield_now().await;
    }
    assert!(!waiter.is_finished());
    // The first registered getter is woken for this item...
    queue.add("foo");
    // ...and dropped before it runs: the item and the wake-up must survive.
    drop(dropped);

    let got = timeout(PATIENCE, waiter)
        .await
        .expect("waiter lost its wake-up")
        .unwrap();
    assert_eq!(got, Some("foo"));

    // And with no other waiter, a dropped getter leaves the item queued.
    let mut dropped = Box::pin(queue.get());
    assert!(futures::poll!(dropped.as_mut()).is_pending());
    queue.add("bar");
    drop(dropped);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("bar"));
}

#[tokio::test]
async fn shut_down_wakes_waiting_getters() {
    let queue: WorkQueue<&str> = WorkQueue::new();
    let mut getters = JoinSet::new();
    for _ in 0..3 {
        let queue = queue.clone();
        getters.spawn(async move { queue.get().await });
    }
    tokio::task::yield_now().await;
    queue.shutdown();
    while let Some(res) = timeout(PATIENCE, getters.join_next())
        .await
        .expect("getter hung")
    {
        assert_eq!(res.unwrap(), None);
    }
}
