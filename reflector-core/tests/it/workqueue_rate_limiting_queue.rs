//! Port of client-go's `util/workqueue/rate_limiting_queue_test.go` on paused tokio time.

use std::sync::Arc;
use std::time::Duration;

use reflector_core::workqueue::{ExponentialBackoff, WorkQueue};
use tokio::time::{Instant, advance};

const MS: Duration = Duration::from_millis(1);

/// Asserts `item` waits exactly `expected`, then lets it become due and runs
/// it through a worker so the next `add_rate_limited` is not merged into this
/// wait (client-go reads each wait entry off its channel instead).
async fn expect_wait(queue: &WorkQueue<&'static str>, item: &'static str, expected: Duration) {
    let ready_at = queue.ready_at(&item).expect("item is waiting");
    assert_eq!(ready_at - Instant::now(), expected, "wait of {item}");
    advance(expected).await;
    assert_eq!(queue.get().await, Some(item));
    queue.done(&item);
}

#[tokio::test(start_paused = true)]
async fn rate_limiting_queue() {
    let limiter = ExponentialBackoff::new(MS, Duration::from_secs(1));
    let queue = WorkQueue::with_rate_limiter(Arc::new(limiter));

    queue.add_rate_limited("one");
    expect_wait(&queue, "one", MS).await;
    queue.add_rate_limited("one");
    expect_wait(&queue, "one", 2 * MS).await;
    assert_eq!(queue.requeues(&"one"), 2);

    queue.add_rate_limited("two");
    expect_wait(&queue, "two", MS).await;
    queue.add_rate_limited("two");
    expect_wait(&queue, "two", 2 * MS).await;

    queue.forget(&"one");
    assert_eq!(queue.requeues(&"one"), 0);
    queue.add_rate_limited("one");
    expect_wait(&queue, "one", MS).await;
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_keeps_the_earliest_wait() {
    let limiter = ExponentialBackoff::new(MS, Duration::from_secs(1));
    let queue = WorkQueue::with_rate_limiter(Arc::new(limiter));
    queue.add_rate_limited("one"); // 1 ms
    queue.add_rate_limited("one"); // 2 ms, merged: the earlier time stays
    assert_eq!(queue.requeues(&"one"), 2);
    advance(MS).await;
    assert_eq!(queue.len(), 1);
}
