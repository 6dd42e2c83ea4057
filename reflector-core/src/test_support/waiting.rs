//! Waiting on tokio's paused clock: until a condition holds, or until spawned tasks
//! have run.

use std::time::Duration;

/// Waits (in paused time, up to 10 virtual minutes) until `cond` holds, yielding
/// to other tasks.
pub(crate) async fn eventually(mut cond: impl FnMut() -> bool) {
    for _ in 0..60_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

/// Lets spawned tasks run without moving the paused clock much.
pub(crate) async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}
