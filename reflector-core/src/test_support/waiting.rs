//! Waiting on tokio's paused clock: until a condition holds, or until spawned tasks
//! have run; and the two bounds of the few unit tests that run on real time.

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

/// Hang detector of the unit tests that run on real time (real threads, a
/// blocking pool): 60 s, the test harness's own "has been running for over 60
/// seconds" mark. Each such wait ends the moment what it waits for happens, so a
/// passing run never reaches it, however loaded the machine.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// Poll period of a real-time wait on a condition nothing notifies (a counter a
/// handler bumps): short against the work awaited, so the wait ends within one
/// period of the condition holding.
pub(crate) const POLL: Duration = Duration::from_millis(5);
