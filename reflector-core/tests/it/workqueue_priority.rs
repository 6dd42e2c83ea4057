//! The work queue's priorities (controller-runtime's priority queue): the highest
//! priority first, one priority in the order queued, priorities raised and never
//! lowered, requeues at the item's own priority, depth per priority. Paused time.

use std::sync::Arc;
use std::time::Duration;

use reflector_core::metrics::{Metrics, Registry, render_metrics};
use reflector_core::workqueue::{
    DefaultRateLimiter, ExponentialBackoff, Priority, QueueConfig, WorkQueue,
};
use tokio::time::advance;

const MS: Duration = Duration::from_millis(1);

/// Takes every ready item, marking each done.
async fn drain(queue: &WorkQueue<&'static str>) -> Vec<&'static str> {
    let mut out = Vec::new();
    while !queue.is_empty() {
        let item = queue.get().await.expect("an item");
        queue.done(&item);
        out.push(item);
    }
    out
}

#[tokio::test(start_paused = true)]
async fn priority_queue_hands_out_the_highest_priority_first_in_order_within_one() {
    let queue = WorkQueue::new();
    queue.add_with_priority("low-1", Priority::LOW);
    queue.add("live-1");
    queue.add_with_priority("low-2", Priority::LOW);
    queue.add_with_priority("urgent", Priority(10));
    queue.add("live-2");
    assert_eq!(queue.len(), 5);
    assert_eq!(
        drain(&queue).await,
        ["urgent", "live-1", "live-2", "low-1", "low-2"]
    );
}

#[tokio::test(start_paused = true)]
async fn priority_queue_raises_a_queued_item_and_never_lowers_one() {
    let queue = WorkQueue::new();
    for item in ["a", "b", "c"] {
        queue.add_with_priority(item, Priority::LOW);
    }
    queue.add("x");
    queue.add("c"); // a live change of a backlog item: it moves ahead
    queue.add_with_priority("x", Priority::LOW); // never lowered
    assert_eq!(queue.len(), 4, "raising an item does not count it twice");
    assert_eq!(queue.priority(&"c"), Some(Priority::DEFAULT));
    assert_eq!(drain(&queue).await, ["x", "c", "a", "b"]);
    assert_eq!(queue.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn priority_queue_requeues_keep_their_priority() {
    let limiter = ExponentialBackoff::new(MS, Duration::from_secs(1));
    let queue = WorkQueue::with_rate_limiter(Arc::new(limiter));
    queue.add_with_priority("backlog", Priority::LOW);
    let item = queue.get().await.unwrap();
    assert_eq!(queue.priority(&item), Some(Priority::LOW));
    queue.add_rate_limited(item); // failed: retried at its own priority
    queue.done(&item);
    advance(MS).await;
    queue.add("live");
    assert_eq!(queue.len(), 2);
    assert_eq!(drain(&queue).await, ["live", "backlog"]);

    // An item changed while processed is queued again after `done`, at the higher
    // of its priorities.
    queue.add_with_priority("busy", Priority::LOW);
    let busy = queue.get().await.unwrap();
    queue.add_with_priority("other", Priority::LOW);
    queue.add(busy); // a live change while it is reconciled
    queue.done(&busy);
    assert_eq!(drain(&queue).await, ["busy", "other"]);

    // A delayed requeue keeps it too.
    queue.add_with_priority("later", Priority::LOW);
    let later = queue.get().await.unwrap();
    queue.add_after(later, Duration::from_secs(1));
    queue.done(&later);
    assert_eq!(queue.priority(&"later"), Some(Priority::LOW));
    advance(Duration::from_secs(1)).await;
    queue.add("now");
    assert_eq!(drain(&queue).await, ["now", "later"]);
}

#[tokio::test(start_paused = true)]
async fn priority_queue_reports_depth_per_priority() {
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let queue = WorkQueue::with_config(
        Arc::new(DefaultRateLimiter::default()),
        QueueConfig::default().name("q").metrics(&metrics),
    );
    queue.add_with_priority("a", Priority::LOW);
    queue.add_with_priority("b", Priority::LOW);
    queue.add("c");
    queue.add("b"); // raised: counted once, at the default
    let text = render_metrics(&registry);
    for line in [
        "workqueue_depth{name=\"q\",priority=\"-100\"} 1",
        "workqueue_depth{name=\"q\",priority=\"0\"} 2",
        "workqueue_adds_total{name=\"q\"} 3",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
    }
    let first = queue.get().await.unwrap();
    queue.done(&first);
    let text = render_metrics(&registry);
    assert!(
        text.lines()
            .any(|l| l == "workqueue_depth{name=\"q\",priority=\"0\"} 1"),
        "{text}"
    );
}
