//! The rate-limited queue, client-go's `workqueue.RateLimitingInterface`.

use std::fmt;
use std::sync::Arc;

use super::delaying_queue::DelayingQueue;
use super::queue::{QueueConfig, QueueItem};
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};

/// A [`DelayingQueue`] whose retries wait as long as a [`RateLimiter`] says,
/// client-go's `RateLimitingInterface`: the queue controllers use.
///
/// A worker that fails calls [`add_rate_limited`](Self::add_rate_limited); one
/// that succeeds calls [`forget`](Self::forget) so the item's backoff resets.
/// Either way it calls [`done`](super::Queue::done).
///
/// # Example
///
/// ```
/// use reflector_core::workqueue::RateLimitingQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = RateLimitingQueue::new(); // default controller rate limiter
/// queue.add("ns/a");
/// while let Some(key) = queue.get().await {
///     let ok = queue.num_requeues(&key) >= 2; // pretend: succeeds on the third try
///     if ok {
///         queue.forget(&key);
///         queue.shut_down();
///     } else {
///         queue.add_rate_limited(key.clone());
///     }
///     queue.done(&key);
/// }
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        RateLimitingQueue {
            queue: self.queue.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl<T: QueueItem> Default for RateLimitingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> RateLimitingQueue<T> {
    /// A new unnamed queue with [`default_controller_rate_limiter`].
    #[must_use]
    pub fn new() -> Self {
        Self::with_rate_limiter(Arc::new(default_controller_rate_limiter()))
    }

    /// A new unnamed queue with the given limiter (client-go's `NewRateLimitingQueue`).
    #[must_use]
    pub fn with_rate_limiter(limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self::with_config(limiter, QueueConfig::default())
    }

    /// A new queue with the given limiter, name and metrics.
    #[must_use]
    pub fn with_config(limiter: Arc<dyn RateLimiter<T>>, config: QueueConfig) -> Self {
        RateLimitingQueue {
            queue: DelayingQueue::with_config(config),
            limiter,
        }
    }

    /// Adds `item` after the delay the rate limiter answers for it (which
    /// counts one more requeue of the item).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Resets the rate limiter's memory of `item`. Does not remove the item
    /// from the queue.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many times `item` was requeued through the rate limiter since it
    /// was last forgotten.
    #[must_use]
    pub fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }

    /// The delaying queue underneath (shares state with `self`).
    #[must_use]
    pub fn delaying_queue(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

/// Every queue operation (`add`, `add_after`, `get`, `done`, `len`, `shut_down`,
/// ...) is the [`DelayingQueue`]'s underneath.
impl<T> std::ops::Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;

    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}
