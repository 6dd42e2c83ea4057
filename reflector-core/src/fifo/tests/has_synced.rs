//! `has_synced`/`wait_synced` (client-go's delta_fifo_test.go): true once the
//! first `replace`'s items are all popped and their callbacks returned.

use std::sync::Arc;
use std::time::Duration;

use crate::fifo::DeltaType;

use crate::test_support::*;
use DeltaType::Sync;

#[tokio::test(start_paused = true)]
async fn delta_fifo_has_synced_correct_on_deletion() {
    let f = fifo_known(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    let expected = [
        deltas(vec![d(Sync, &mk("foo", 5))]),
        deltas(vec![tomb("bar", &mk("bar", 6))]),
        deltas(vec![tomb("baz", &mk("baz", 7))]),
    ];
    for e in expected {
        assert!(!f.has_synced(), "expected has_synced to be false");
        let item = pop(&f).await;
        assert_eq!(item.deltas, e);
        assert!(item.is_in_initial_list, "expected an initial list item");
    }
    assert!(f.has_synced(), "expected has_synced to be true");
}

enum Action {
    Add(&'static str, u32),
    Replace(Vec<(&'static str, u32)>),
    Pop,
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_has_synced() {
    use Action::{Add, Pop, Replace};
    let cases: Vec<(Vec<Action>, bool)> = vec![
        (vec![], false),
        (vec![Add("a", 1)], true),
        (vec![Replace(vec![])], true),
        (vec![Replace(vec![("a", 1), ("b", 2)])], false),
        (vec![Replace(vec![("a", 1), ("b", 2)]), Pop], false),
        (vec![Replace(vec![("a", 1), ("b", 2)]), Pop, Pop], true),
        // Cannot happen in practice (a list has no duplicate keys), as in client-go.
        (vec![Replace(vec![("a", 1), ("a", 2)]), Pop], true),
    ];
    for (i, (actions, expected)) in cases.into_iter().enumerate() {
        let f = fifo();
        for action in actions {
            match action {
                Add(name, val) => f.add(mk(name, val)).unwrap(),
                Replace(items) => f
                    .replace(items.into_iter().map(|(n, v)| mk(n, v)).collect(), "0")
                    .unwrap(),
                Pop => {
                    pop(&f).await;
                }
            }
        }
        assert_eq!(f.has_synced(), expected, "case {i}");
    }
}

/// `wait_synced` returns once the last initial item's callback returned.
#[tokio::test(start_paused = true)]
async fn delta_fifo_wait_synced_wakes_after_last_initial_pop() {
    let f = Arc::new(fifo());
    let waiter = tokio::spawn({
        let f = Arc::clone(&f);
        async move { f.wait_synced().await }
    });
    f.replace(vec![mk("a", 1), mk("b", 2)], "1").unwrap();
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    pop(&f).await;
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    pop(&f).await;
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("wait_synced returned")
        .unwrap();
    assert!(f.has_synced());
    // Already synced: returns at once.
    f.wait_synced().await;
}

/// `has_synced` turns true only once the callback of the last initial item returned,
/// even though the callback runs without the queue's lock.
#[tokio::test(start_paused = true)]
async fn delta_fifo_has_synced_waits_for_the_last_callback_to_return() {
    let f = fifo();
    f.replace(vec![mk("a", 1)], "1").unwrap();
    let synced_inside = f.pop(|_, _| f.has_synced()).await.unwrap();
    assert!(!synced_inside);
    assert!(f.has_synced());
}
