//! The reflector's resync timer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
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

    /// Whether the timer fired (then it is rearmed); registers `cx` to be woken
    /// when it will. Never ready for a timer without period.
    pub(crate) fn poll_fired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(sleep) = &mut self.sleep else {
            return Poll::Pending;
        };
        ready!(sleep.as_mut().poll(cx));
        let next = Instant::now() + self.period;
        sleep.as_mut().reset(next);
        Poll::Ready(())
    }
}
