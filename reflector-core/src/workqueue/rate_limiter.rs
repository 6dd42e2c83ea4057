//! Rate limiters, client-go's `default_rate_limiters.go`.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// Decides how long an item waits before it is retried, client-go's
/// `TypedRateLimiter`.
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now; records one more failure of it.
    fn when(&self, item: &T) -> Duration;
    /// Stops tracking `item` (call it once the item succeeded); later `when`
    /// calls start from scratch.
    fn forget(&self, item: &T);
    /// How many failures are recorded for `item`.
    #[doc(alias = "NumRequeues")]
    fn requeues(&self, item: &T) -> usize;
}

fn lock<S>(mutex: &Mutex<S>) -> MutexGuard<'_, S> {
    // No code path panics while holding these locks.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The failures recorded per item: what the per-item limiters count.
struct FailureCounts<T> {
    /// Failure count per item. Guarded by its own mutex.
    counts: Mutex<HashMap<T, u32>>,
}

impl<T: Clone + Eq + Hash + Send> FailureCounts<T> {
    fn new() -> Self {
        FailureCounts {
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Records one more failure of `item`; returns how many were recorded before.
    fn record(&self, item: &T) -> u32 {
        let mut counts = lock(&self.counts);
        let count = counts.entry(item.clone()).or_insert(0);
        let before = *count;
        *count = count.saturating_add(1);
        before
    }

    fn forget(&self, item: &T) {
        lock(&self.counts).remove(item);
    }

    fn get(&self, item: &T) -> usize {
        lock(&self.counts)
            .get(item)
            .map_or(0, |&n| usize::try_from(n).unwrap_or(usize::MAX))
    }
}

/// Per-item exponential backoff: `base * 2^failures`, capped at `max`,
/// client-go's `ItemExponentialFailureRateLimiter`.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::workqueue::{ExponentialBackoff, RateLimiter};
///
/// let limiter = ExponentialBackoff::new(Duration::from_millis(5), Duration::from_secs(1000));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// assert_eq!(limiter.requeues(&"a"), 2);
/// limiter.forget(&"a");
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// ```
#[doc(alias = "ItemExponentialFailureRateLimiter")]
pub struct ExponentialBackoff<T> {
    base: Duration,
    max: Duration,
    failures: FailureCounts<T>,
}

impl<T> fmt::Debug for ExponentialBackoff<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExponentialBackoff")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash + Send> ExponentialBackoff<T> {
    /// A limiter starting at `base` and doubling up to `max`.
    #[must_use]
    pub fn new(base: Duration, max: Duration) -> Self {
        ExponentialBackoff {
            base,
            max,
            failures: FailureCounts::new(),
        }
    }

    /// `base * 2^exp`, or `max` if that is larger or overflows.
    fn backoff(&self, exp: u32) -> Duration {
        let max_nanos = self.max.as_nanos();
        let nanos = 1u128
            .checked_shl(exp)
            .filter(|_| exp < 127)
            .and_then(|factor| self.base.as_nanos().checked_mul(factor));
        match nanos {
            Some(n) if n <= max_nanos => {
                let secs = u64::try_from(n / 1_000_000_000).unwrap_or(u64::MAX);
                // Always < 1e9, so the conversion cannot fail.
                let sub = u32::try_from(n % 1_000_000_000).unwrap_or(0);
                Duration::new(secs, sub)
            }
            _ => self.max,
        }
    }
}

impl<T: Clone + Eq + Hash + Send> RateLimiter<T> for ExponentialBackoff<T> {
    fn when(&self, item: &T) -> Duration {
        self.backoff(self.failures.record(item))
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn requeues(&self, item: &T) -> usize {
        self.failures.get(item)
    }
}

/// `fast` for the first `max_fast_attempts` failures of an item, `slow`
/// afterwards, client-go's `ItemFastSlowRateLimiter`.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::workqueue::{FastSlowBackoff, RateLimiter};
///
/// let limiter = FastSlowBackoff::new(Duration::from_millis(5), Duration::from_secs(10), 1);
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(10));
/// ```
#[doc(alias = "ItemFastSlowRateLimiter")]
pub struct FastSlowBackoff<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    failures: FailureCounts<T>,
}

impl<T> fmt::Debug for FastSlowBackoff<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FastSlowBackoff")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash + Send> FastSlowBackoff<T> {
    /// A limiter answering `fast` for `max_fast_attempts` failures, then `slow`.
    #[must_use]
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        FastSlowBackoff {
            fast,
            slow,
            max_fast_attempts,
            failures: FailureCounts::new(),
        }
    }
}

impl<T: Clone + Eq + Hash + Send> RateLimiter<T> for FastSlowBackoff<T> {
    fn when(&self, item: &T) -> Duration {
        if self.failures.record(item) < self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn requeues(&self, item: &T) -> usize {
        self.failures.get(item)
    }
}

/// An overall token bucket shared by all items, client-go's
/// `BucketRateLimiter` over `golang.org/x/time/rate`.
///
/// Each `when` reserves one token and returns how long the caller must wait
/// for it (`Reserve().Delay()`): zero while tokens are left, then growing by
/// `1 / qps` per call. The bucket starts full. Time is `tokio::time::Instant`.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::workqueue::{RateLimiter, TokenBucket};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let limiter = TokenBucket::new(10.0, 1);
/// assert_eq!(RateLimiter::<&str>::when(&limiter, &"a"), Duration::ZERO);
/// assert_eq!(RateLimiter::<&str>::when(&limiter, &"b"), Duration::from_millis(100));
/// # }
/// ```
#[doc(alias = "BucketRateLimiter")]
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    /// Tokens left (negative once reservations run ahead) and when that was
    /// computed. Guarded by its own mutex.
    bucket: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A bucket refilled at `qps` tokens per second holding at most `burst`.
    ///
    /// An infinite `qps` never limits (`rate.Inf`); a zero, negative or NaN
    /// `qps` never refills: once the burst is spent, `when` answers the
    /// longest representable wait.
    #[must_use]
    pub fn new(qps: f64, burst: u32) -> Self {
        TokenBucket {
            qps,
            burst: f64::from(burst),
            bucket: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: Instant::now(),
            }),
        }
    }

    /// Reserves one token at `now` and returns the wait before it is available.
    fn reserve(&self, now: Instant) -> Duration {
        if self.qps == f64::INFINITY {
            return Duration::ZERO;
        }
        let mut bucket = lock(&self.bucket);
        let refill_ok = self.qps.is_finite() && self.qps > 0.0;
        // Time may be observed out of order by concurrent callers; never go back.
        let elapsed = now.saturating_duration_since(bucket.last).as_secs_f64();
        if refill_ok {
            bucket.tokens = (bucket.tokens + elapsed * self.qps).min(self.burst);
        }
        if now > bucket.last {
            bucket.last = now;
        }
        bucket.tokens -= 1.0;
        if bucket.tokens >= 0.0 {
            return Duration::ZERO;
        }
        if !refill_ok {
            return Duration::MAX;
        }
        Duration::try_from_secs_f64(-bucket.tokens / self.qps).unwrap_or(Duration::MAX)
    }
}

impl<T> RateLimiter<T> for TokenBucket {
    fn when(&self, _item: &T) -> Duration {
        self.reserve(Instant::now())
    }

    fn forget(&self, _item: &T) {}

    fn requeues(&self, _item: &T) -> usize {
        0
    }
}

/// The longest wait of several limiters, client-go's `MaxOfRateLimiter`.
///
/// `when` and `forget` reach every limiter; `requeues` is the largest. With none,
/// `when` is always zero.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::workqueue::{ExponentialBackoff, FastSlowBackoff, MaxOf, RateLimiter};
///
/// let limiter = MaxOf::new()
///     .with(FastSlowBackoff::new(Duration::from_millis(5), Duration::from_secs(3), 3))
///     .with(ExponentialBackoff::new(Duration::from_millis(1), Duration::from_secs(1)));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// ```
#[doc(alias = "MaxOfRateLimiter")]
pub struct MaxOf<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOf")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> MaxOf<T> {
    /// No limiter yet: add them with [`with`](MaxOf::with).
    #[must_use]
    pub fn new() -> Self {
        MaxOf {
            limiters: Vec::new(),
        }
    }

    /// Adds `limiter`.
    #[must_use]
    pub fn with(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiters.push(Box::new(limiter));
        self
    }
}

impl<T> Default for MaxOf<T> {
    fn default() -> Self {
        MaxOf::new()
    }
}

impl<T> RateLimiter<T> for MaxOf<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|limiter| limiter.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|limiter| limiter.requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps another limiter's wait at `max_wait`, client-go's `WithMaxWaitRateLimiter`.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::workqueue::{ExponentialBackoff, RateLimiter, WithMaxWait};
///
/// let backoff = ExponentialBackoff::new(Duration::from_secs(1), Duration::from_secs(1000));
/// let limiter = WithMaxWait::new(backoff, Duration::from_secs(2));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(1));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(2));
/// assert_eq!(limiter.when(&"a"), Duration::from_secs(2));
/// ```
#[doc(alias = "WithMaxWaitRateLimiter")]
pub struct WithMaxWait<T> {
    limiter: Box<dyn RateLimiter<T>>,
    max_wait: Duration,
}

impl<T> fmt::Debug for WithMaxWait<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WithMaxWait")
            .field("max_wait", &self.max_wait)
            .finish_non_exhaustive()
    }
}

impl<T> WithMaxWait<T> {
    /// Wraps `limiter`, never answering more than `max_wait`.
    #[must_use]
    pub fn new(limiter: impl RateLimiter<T> + 'static, max_wait: Duration) -> Self {
        WithMaxWait {
            limiter: Box::new(limiter),
            max_wait,
        }
    }
}

impl<T> RateLimiter<T> for WithMaxWait<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_wait)
    }

    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    fn requeues(&self, item: &T) -> usize {
        self.limiter.requeues(item)
    }
}

/// A controller's default, client-go's `DefaultControllerRateLimiter()`: the longer
/// wait of a per-item [`ExponentialBackoff`] (5 ms doubling to 1000 s) and an overall
/// [`TokenBucket`] (10 qps, burst 100).
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::workqueue::{DefaultRateLimiter, RateLimiter};
///
/// let limiter = DefaultRateLimiter::default();
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
/// assert_eq!(limiter.requeues(&"a"), 2);
/// ```
#[doc(alias = "DefaultControllerRateLimiter")]
pub struct DefaultRateLimiter<T>(MaxOf<T>);

impl<T> fmt::Debug for DefaultRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DefaultRateLimiter").finish()
    }
}

impl<T: Clone + Eq + Hash + Send + 'static> Default for DefaultRateLimiter<T> {
    fn default() -> Self {
        DefaultRateLimiter(
            MaxOf::new()
                .with(ExponentialBackoff::new(
                    Duration::from_millis(5),
                    Duration::from_secs(1000),
                ))
                .with(TokenBucket::new(10.0, 100)),
        )
    }
}

impl<T> RateLimiter<T> for DefaultRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.0.when(item)
    }

    fn forget(&self, item: &T) {
        self.0.forget(item);
    }

    fn requeues(&self, item: &T) -> usize {
        self.0.requeues(item)
    }
}
