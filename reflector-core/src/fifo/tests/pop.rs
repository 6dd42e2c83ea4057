//! `pop` and `close`: unblocking, draining, cancel safety, and the processing
//! lock (what waits for a running `pop` callback and what does not).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::fifo::DeltaType;
use crate::fifo::{FifoError, QueueMode};
use crate::object::{ObjectKey, deletion_handling_key};

use crate::test_support::*;
use DeltaType::{Added, Updated};

/// PopShouldUnblockWhenClosed (both client-go FIFOs): every waiting pop returns once
/// the queue closes.
async fn pop_should_unblock_when_closed(mode: QueueMode) {
    let f = Arc::new(ported(mode, vec![mk("foo", 5)]));
    let pops: Vec<_> = (0..10)
        .map(|_| {
            let f = Arc::clone(&f);
            tokio::spawn(async move { f.pop(|_, _| ()).await })
        })
        .collect();
    settle().await;
    f.close();
    for p in pops {
        let r = tokio::time::timeout(Duration::from_millis(500), p)
            .await
            .expect("pop returned within 500 ms of close")
            .unwrap();
        assert_eq!(r, Err(FifoError::Closed));
    }
}
each_queue!(
    #[tokio::test(start_paused = true)]
    pop_should_unblock_when_closed
);

#[tokio::test(start_paused = true)]
async fn delta_fifo_close_drains_queued_items_then_fails_writes() {
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    f.add(mk("b", 2)).unwrap();
    f.close();
    assert!(f.is_closed());
    assert_eq!(f.add(mk("c", 3)), Err(FifoError::Closed));
    assert_eq!(f.replace(vec![], "0"), Err(FifoError::Closed));
    assert_eq!(pop(&f).await.key.as_str(), "a");
    assert_eq!(pop(&f).await.key.as_str(), "b");
    assert_eq!(f.pop_item().await, Err(FifoError::Closed));
}

/// A `pop` dropped while waiting takes nothing: the next pop gets the item whole.
#[tokio::test(start_paused = true)]
async fn delta_fifo_pop_cancelled_while_waiting_loses_nothing() {
    let f = fifo();
    {
        let fut = f.pop_item();
        tokio::pin!(fut);
        assert!(futures::poll!(fut.as_mut()).is_pending());
        assert!(futures::poll!(fut.as_mut()).is_pending());
    }
    let obj = mk("a", 1);
    f.add(obj.clone()).unwrap();
    f.update(obj.clone()).unwrap();
    let item = pop(&f).await;
    assert_eq!(item.deltas, deltas(vec![d(Added, &obj), d(Updated, &obj)]));
    assert!(f.is_empty());
}

/// A `pop` woken for an item but dropped before it ran passes the wake-up on to
/// another waiting `pop` (no lost wake-up).
#[tokio::test(start_paused = true)]
async fn delta_fifo_pop_cancelled_after_wakeup_passes_it_on() {
    let f = Arc::new(fifo());
    let first = {
        let f = Arc::clone(&f);
        async move { f.pop_item().await }
    };
    let mut first = Box::pin(first);
    assert!(futures::poll!(first.as_mut()).is_pending());
    let second = tokio::spawn({
        let f = Arc::clone(&f);
        async move { f.pop_item().await }
    });
    tokio::task::yield_now().await;
    f.add(mk("a", 1)).unwrap();
    // The wake-up went to `first`, the older waiter; drop it unpolled.
    drop(first);
    let item = tokio::time::timeout(Duration::from_secs(1), second)
        .await
        .expect("the second pop was woken")
        .unwrap()
        .unwrap();
    assert_eq!(item.key.as_str(), "a");
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_pop_runs_process_under_the_lock_and_returns_its_value() {
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    let (key, n, initial) = f
        .pop(|entry, initial| {
            let deltas = entry.deltas().unwrap();
            let key = deletion_handling_key(&deltas.newest().unwrap().object).unwrap();
            (key, deltas.len(), initial)
        })
        .await
        .unwrap();
    assert_eq!((key.as_str(), n, initial), ("a", 1, false));
}

/// `add` (and `update`) do not wait for a running `pop` callback: the callback itself
/// can queue (it would deadlock if `add` took the lock the callback runs under).
#[tokio::test(start_paused = true)]
async fn delta_fifo_add_does_not_wait_for_a_running_pop_callback() {
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    let popped = f
        .pop_with(|item| {
            f.add(mk("b", 2)).unwrap();
            f.update(mk("a", 3)).unwrap();
            item.key.to_string()
        })
        .await
        .unwrap();
    assert_eq!(popped, "a");
    assert_eq!(
        f.list_keys(),
        [ObjectKey::new(None, "b"), ObjectKey::new(None, "a")]
    );
}

/// `replace` waits for a running `pop` callback, so it never sees an item popped
/// but not yet applied to the known objects (it would miss its deletion).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_fifo_replace_waits_for_a_running_pop_callback() {
    use std::sync::atomic::AtomicBool;
    let f = Arc::new(fifo());
    f.add(mk("a", 1)).unwrap();
    let replaced = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let replacer = std::thread::spawn({
        let (f, replaced) = (Arc::clone(&f), Arc::clone(&replaced));
        move || {
            started_rx.recv().unwrap();
            f.replace(vec![mk("b", 2)], "5").unwrap();
            replaced.store(true, Ordering::SeqCst);
        }
    });
    let replaced_during_callback = f
        .pop(|_, _| {
            started_tx.send(()).unwrap();
            // A window, not a wait: a `replace` that did not wait would finish
            // within it; one that waits cannot, however slow the machine.
            std::thread::sleep(Duration::from_millis(50));
            replaced.load(Ordering::SeqCst)
        })
        .await
        .unwrap();
    replacer.join().unwrap();
    assert!(
        !replaced_during_callback,
        "replace ran while the callback held the item"
    );
    assert!(replaced.load(Ordering::SeqCst));
}
