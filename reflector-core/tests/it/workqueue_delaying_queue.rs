//! Ports of client-go's `util/workqueue/delaying_queue_test.go` on paused tokio time.

use std::time::Duration;

use reflector_core::workqueue::WorkQueue;
use tokio::time::{Instant, advance};

const MS: Duration = Duration::from_millis(1);

/// Guard against lost wake-ups (paused time: fires instead of hanging).
const GUARD: Duration = Duration::from_secs(3600);

#[tokio::test(start_paused = true)]
async fn simple_queue() {
    let queue = WorkQueue::new();
    let first = "foo";

    queue.add_after(first, 50 * MS);
    assert_eq!(queue.waiting_len(), 1);
    assert_eq!(queue.len(), 0, "should not have added");

    advance(60 * MS).await;
    assert_eq!(queue.len(), 1, "should have added");
    let item = queue.get().await.unwrap();
    assert_eq!(item, first);
    queue.done(&item);

    // Step past the next heartbeat: nothing else appears.
    advance_and_drain(&queue, Duration::from_secs(10), 0).await;
    assert_eq!(queue.waiting_len(), 0);
}

/// Advances the paused clock by `by`, asserts that `ready` items became ready (0 or
/// 1), and takes and finishes the one that did.
async fn advance_and_drain(queue: &WorkQueue<&'static str>, by: Duration, ready: usize) {
    advance(by).await;
    if ready == 0 {
        assert_eq!(queue.len(), 0, "should not have added");
    } else {
        assert_eq!(queue.len(), ready, "should have added");
        let item = queue.get().await.unwrap();
        queue.done(&item);
    }
}

#[tokio::test(start_paused = true)]
async fn deduping() {
    let queue = WorkQueue::new();
    let first = "foo";

    // Two delayed adds of one item merge, keeping the earlier time: the item is
    // ready once, at the earlier of the two, and not again at the later one.
    for (first_delay, second_delay, earlier) in [(50, 70, 50), (50, 30, 30)] {
        queue.add_after(first, first_delay * MS);
        queue.add_after(first, second_delay * MS);
        assert_eq!(queue.waiting_len(), 1);
        assert_eq!(queue.len(), 0, "should not have added");
        // Step past the earlier time: the item is ready.
        advance_and_drain(&queue, (earlier + 10) * MS, 1).await;
        // Step past the later one: it was merged into the first.
        advance_and_drain(&queue, 20 * MS, 0).await;
    }

    // Again, but this time the item is being processed.
    queue.add(first);
    let item = queue.get().await.unwrap();
    assert_eq!(item, first);
    queue.add_after(first, 5 * MS);
    assert_eq!(queue.ready_at(&first), Some(Instant::now() + 5 * MS));
    queue.done(&first);
    advance(5 * MS).await;
    assert_eq!(
        queue.len(),
        1,
        "the delayed add of a processed item arrives"
    );
}

/// A queue with each item added after its delay, all of them still waiting.
fn waiting(adds: &[(&'static str, Duration)]) -> WorkQueue<&'static str> {
    let queue = WorkQueue::new();
    for (item, delay) in adds {
        queue.add_after(*item, *delay);
    }
    assert_eq!(queue.waiting_len(), adds.len());
    assert_eq!(queue.len(), 0, "should not have added");
    queue
}

#[tokio::test(start_paused = true)]
async fn add_two_fire_early() {
    let (first, second, third) = ("foo", "bar", "baz");
    let queue = waiting(&[(first, Duration::from_secs(1)), (second, 50 * MS)]);

    advance(60 * MS).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some(second));

    queue.add_after(third, Duration::from_secs(2));

    advance(Duration::from_secs(1)).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some(first));

    advance(Duration::from_secs(2)).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some(third));
}

#[tokio::test(start_paused = true)]
async fn copy_shifting() {
    let (first, second, third) = ("foo", "bar", "baz");
    let queue = waiting(&[
        (first, Duration::from_secs(1)),
        (second, 500 * MS),
        (third, 250 * MS),
    ]);

    advance(Duration::from_secs(2)).await;
    assert_eq!(queue.len(), 3);
    assert_eq!(queue.get().await, Some(third));
    assert_eq!(queue.get().await, Some(second));
    assert_eq!(queue.get().await, Some(first));
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_now() {
    let queue = WorkQueue::new();
    queue.add_after("foo", Duration::ZERO);
    assert_eq!(queue.waiting_len(), 0);
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn get_sleeps_until_the_earliest_ready_time() {
    let queue = WorkQueue::new();
    let start = Instant::now();
    queue.add_after("late", 80 * MS);
    queue.add_after("early", 30 * MS);
    // With paused time the runtime jumps straight to the next timer.
    assert_eq!(queue.get().await, Some("early"));
    assert_eq!(Instant::now() - start, 30 * MS);
    assert_eq!(queue.get().await, Some("late"));
    assert_eq!(Instant::now() - start, 80 * MS);
}

#[tokio::test(start_paused = true)]
async fn waiting_getter_sees_a_later_add_after() {
    let queue: WorkQueue<&str> = WorkQueue::new();
    let start = Instant::now();
    let getter = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.get().await })
    };
    tokio::task::yield_now().await;
    // The getter parked with no deadline; a new earliest time must wake it.
    queue.add_after("foo", 20 * MS);
    let got = tokio::time::timeout(GUARD, getter)
        .await
        .expect("the getter slept through the new deadline");
    assert_eq!(got.unwrap(), Some("foo"));
    assert_eq!(Instant::now() - start, 20 * MS);
}

#[tokio::test(start_paused = true)]
async fn items_due_together_reach_every_waiting_getter() {
    let queue: WorkQueue<u32> = WorkQueue::new();
    let mut getters = tokio::task::JoinSet::new();
    for _ in 0..3 {
        let queue = queue.clone();
        getters.spawn(async move { queue.get().await });
    }
    tokio::task::yield_now().await;
    for i in 0..3 {
        queue.add_after(i, 10 * MS);
    }
    let mut got = Vec::new();
    // Paused time: a lost wake-up makes the guard fire instead of hanging.
    while let Some(res) = tokio::time::timeout(GUARD, getters.join_next())
        .await
        .expect("a getter missed its item")
    {
        got.push(res.unwrap().unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, vec![0, 1, 2]);
}

#[tokio::test(start_paused = true)]
async fn shut_down_drops_waiting_items() {
    let queue = WorkQueue::new();
    queue.add_after("foo", 10 * MS);
    queue.shutdown();
    queue.add_after("bar", 10 * MS);
    advance(20 * MS).await;
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.waiting_len(), 0);
    assert_eq!(queue.get().await, None);
}
