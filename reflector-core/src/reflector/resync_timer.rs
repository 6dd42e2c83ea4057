//! The reflector's resync timer.

use std::time::Duration;

use tokio::time::Instant;

/// Fires every `period` (never when the period is zero). Rearmed after each firing,
/// whether or not the resync happened, as client-go's `startResync`.
#[derive(Debug)]
pub(crate) struct ResyncTimer {
    period: Duration,
    next: Option<Instant>,
}

impl ResyncTimer {
    pub(crate) fn new(period: Duration) -> Self {
        ResyncTimer {
            period,
            next: (!period.is_zero()).then(|| Instant::now() + period),
        }
    }

    /// Waits until the timer fires and rearms it.
    ///
    /// # Cancel safety
    /// Cancel-safe: a cancelled wait leaves the deadline unchanged.
    pub(crate) async fn fired(&mut self) {
        match self.next {
            Some(at) => {
                tokio::time::sleep_until(at).await;
                self.next = Some(Instant::now() + self.period);
            }
            None => std::future::pending().await,
        }
    }
}
