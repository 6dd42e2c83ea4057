//! Waiting on tokio's paused clock, shared by the multi-replica tests.

use std::time::Duration;

use tokio::time::Instant;

/// Sleeps on the paused clock (20 ms steps) until `cond` holds, up to `limit`;
/// panics naming `what` if it does not.
pub async fn until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "not reached within {limit:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
