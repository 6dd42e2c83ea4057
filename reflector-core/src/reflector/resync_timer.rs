//! The reflector's resync timer.

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// Fires every `period` (never when the period is zero). Rearmed after each firing,
/// whether or not the resync happened, as client-go's `startResync`. One timer entry
/// is kept and reset, so waiting on it in a loop costs no timer registration per
/// iteration.
#[derive(Debug)]
pub(crate) struct ResyncTimer {
    period: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl ResyncTimer {
    pub(crate) fn new(period: Duration) -> Self {
        ResyncTimer {
            period,
            sleep: (!period.is_zero())
                .then(|| Box::pin(tokio::time::sleep_until(Instant::now() + period))),
        }
    }

    /// Waits until the timer fires and rearms it.
    ///
    /// # Cancel safety
    /// Cancel-safe: a cancelled wait leaves the deadline unchanged.
    pub(crate) async fn fired(&mut self) {
        match &mut self.sleep {
            Some(sleep) => {
                sleep.as_mut().await;
                let next = Instant::now() + self.period;
                sleep.as_mut().reset(next);
            }
            None => std::future::pending().await,
        }
    }
}
