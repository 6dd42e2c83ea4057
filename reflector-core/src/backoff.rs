//! Exponential backoff with jitter and reset, as the reflector uses between rounds:
//! `BackoffConfig` holds its parameters (set through
//! [`ReflectorOptions::backoff`](crate::reflector::ReflectorOptions::backoff)).
//!
//! Mirrors client-go's reflector backoff (`wait.Backoff` with `DelayWithReset`):
//! each step waits `base × (1 + jitter × U[0,1))`, then the base doubles up to a cap;
//! once no step was taken for the reset interval, the base starts over.
//!
//! Time comes from [`tokio::time::Instant`], so paused-clock tests control it.

use std::time::Duration;

use tokio::time::Instant;

/// Parameters of an exponential backoff. The defaults are client-go's reflector's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BackoffConfig {
    initial: Duration,
    max: Duration,
    factor: f64,
    jitter: f64,
    reset_after: Duration,
}

impl Default for BackoffConfig {
    /// 800 ms initial, 30 s cap, ×2, jitter 1.0, reset after 2 min — client-go's
    /// reflector defaults (`defaultBackoffInit`, `defaultBackoffMax`, ...).
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

impl BackoffConfig {
    /// The first delay's base (default 800 ms, as client-go's reflector).
    #[must_use]
    pub(crate) fn initial(mut self, d: Duration) -> Self {
        self.initial = d;
        self
    }

    /// The cap on the base delay (default 30 s, as client-go's reflector). With
    /// jitter the actual delay may reach `max × (1 + jitter)`, as in client-go.
    #[must_use]
    pub(crate) fn max(mut self, d: Duration) -> Self {
        self.max = d;
        self
    }

    /// The jitter fraction (default 1.0, as client-go's reflector): each delay is the
    /// base times `1 + jitter × U[0,1)`. Negative or non-finite values mean 0.
    #[must_use]
    pub(crate) fn jitter(mut self, j: f64) -> Self {
        self.jitter = if j.is_finite() { j.max(0.0) } else { 0.0 };
        self
    }

    /// A fresh backoff with these parameters.
    #[must_use]
    pub(crate) fn build(&self) -> Backoff {
        Backoff {
            config: self.clone(),
            current: self.initial,
            last_step: None,
        }
    }
}

/// A running exponential backoff. Not shared: one owner calls [`Backoff::next_delay`].
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    config: BackoffConfig,
    current: Duration,
    last_step: Option<Instant>,
}

impl Backoff {
    /// The delay to wait now, and advances the backoff. Must run inside a tokio
    /// runtime (it reads tokio's clock).
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if let Some(last) = self.last_step
            && now.saturating_duration_since(last) > self.config.reset_after
        {
            self.current = self.config.initial;
        }
        self.last_step = Some(now);
        let base = self.current;
        let grown = base.mul_f64(self.config.factor);
        self.current = grown.min(self.config.max);
        jittered(base, self.config.jitter)
    }
}

/// `base × (1 + factor × U[0,1))`, as client-go's `wait.Jitter` (no jitter when
/// `factor` is not positive).
pub(crate) fn jittered(base: Duration, factor: f64) -> Duration {
    if factor > 0.0 {
        base + base.mul_f64(factor * crate::random::random_unit())
    } else {
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first two delays of the default backoff without jitter (was the
    /// rustdoc example while `Backoff` was public).
    #[tokio::test]
    async fn default_starts_at_800_ms_and_doubles() {
        let mut b = BackoffConfig::default().jitter(0.0).build();
        assert_eq!(b.next_delay(), Duration::from_millis(800));
        assert_eq!(b.next_delay(), Duration::from_millis(1600));
    }

    #[tokio::test(start_paused = true)]
    async fn doubles_up_to_the_cap_without_jitter() {
        let mut b = BackoffConfig::default().jitter(0.0).build();
        let got: Vec<u64> = (0..8)
            .map(|_| u64::try_from(b.next_delay().as_millis()).unwrap())
            .collect();
        assert_eq!(
            got,
            [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000],
            "800 ms ×2 capped at 30 s"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_stays_within_one_base() {
        let mut b = BackoffConfig::default().build();
        let mut base = Duration::from_millis(800);
        for _ in 0..10 {
            let d = b.next_delay();
            assert!(d >= base && d < base * 2, "{d:?} outside [{base:?}, 2×)");
            base = (base * 2).min(Duration::from_secs(30));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn resets_after_two_quiet_minutes() {
        let mut b = BackoffConfig::default().jitter(0.0).build();
        for _ in 0..5 {
            b.next_delay();
        }
        tokio::time::advance(Duration::from_secs(119)).await;
        assert_eq!(
            b.next_delay(),
            Duration::from_millis(25600),
            "not yet reset"
        );
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(b.next_delay(), Duration::from_millis(800), "reset");
    }
}
