//! Retrying a class of errors until a deadline, as client-go's `RetryWithDeadline`.

use std::time::Duration;

use tokio::time::Instant;

/// Tracks a run of retryable errors: retry while the run is younger than
/// `max_retry_duration`; a gap of `min_reset_period` without such errors starts a
/// new run.
#[derive(Debug)]
pub(crate) struct RetryWithDeadline {
    max_retry_duration: Duration,
    min_reset_period: Duration,
    first_error: Option<Instant>,
    last_error: Option<Instant>,
}

impl RetryWithDeadline {
    pub(crate) fn new(max_retry_duration: Duration, min_reset_period: Duration) -> Self {
        RetryWithDeadline {
            max_retry_duration,
            min_reset_period,
            first_error: None,
            last_error: None,
        }
    }

    /// Records the outcome of an attempt; `retryable` says whether it failed with an
    /// error of the retried class.
    pub(crate) fn after(&mut self, retryable: bool) {
        if !retryable {
            return;
        }
        let now = Instant::now();
        if self
            .last_error
            .is_some_and(|last| now.saturating_duration_since(last) >= self.min_reset_period)
        {
            self.first_error = None;
        }
        self.first_error.get_or_insert(now);
        self.last_error = Some(now);
    }

    /// Whether to retry now.
    pub(crate) fn should_retry(&mut self) -> bool {
        if self.max_retry_duration.is_zero() {
            return false;
        }
        let Some(first) = self.first_error else {
            return true;
        };
        if Instant::now().saturating_duration_since(first) <= self.max_retry_duration {
            return true;
        }
        self.first_error = None;
        self.last_error = None;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn retries_until_the_deadline_then_stops() {
        let mut r = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        r.after(true);
        assert!(r.should_retry());
        tokio::time::advance(Duration::from_secs(30)).await;
        r.after(true);
        assert!(r.should_retry(), "30 s is still within the deadline");
        tokio::time::advance(Duration::from_secs(1)).await;
        r.after(true);
        assert!(!r.should_retry(), "31 s is past it");
    }

    #[tokio::test(start_paused = true)]
    async fn zero_duration_never_retries_and_a_quiet_minute_resets() {
        let mut off = RetryWithDeadline::new(Duration::ZERO, Duration::from_secs(60));
        off.after(true);
        assert!(!off.should_retry());

        let mut r = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        r.after(true);
        tokio::time::advance(Duration::from_secs(61)).await;
        r.after(true);
        assert!(r.should_retry(), "a gap of a minute starts a new run");
        r.after(false);
        assert!(r.should_retry(), "non-retryable outcomes do not count");
    }
}
