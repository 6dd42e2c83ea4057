//! The rate-limited queue, client-go's `workqueue.RateLimitingInterface`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::delaying_queue::DelayingQueue;
use super::queue::{QueueConfig, QueueItem};
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};

/// A [`DelayingQueue`] whose retries wait as long as a [`RateLimiter`] says,
/// client-go's `RateLimitingInterface`: the queue controllers use.
///
/// A worker that fails calls [`add_rate_limited`](Self::add_rate_limited); one
/// that succeeds calls [`forget`](Self::forget) so the item's backoff resets.
/// Either way it calls [`done`](Self::done).
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

    /// See [`DelayingQueue::add_after`].
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay);
    }

    /// See [`Queue::add`](super::Queue::add).
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// See [`Queue::get`](super::Queue::get).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Queue::get`](super::Queue::get).
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    /// See [`Queue::done`](super::Queue::done).
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// See [`DelayingQueue::len`].
    #[must_use]
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// See [`Queue::is_empty`](super::Queue::is_empty).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// See [`Queue::shut_down`](super::Queue::shut_down).
    pub fn shut_down(&self) {
        self.queue.shut_down();
    }

    /// See [`Queue::shut_down_with_drain`](super::Queue::shut_down_with_drain).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Queue::shut_down_with_drain`](super::Queue::shut_down_with_drain).
    pub async fn shut_down_with_drain(&self) {
        self.queue.shut_down_with_drain().await;
    }

    /// See [`Queue::update_unfinished_work`](super::Queue::update_unfinished_work).
    pub fn update_unfinished_work(&self) {
        self.queue.update_unfinished_work();
    }

    /// See [`Queue::is_shutting_down`](super::Queue::is_shutting_down).
    #[must_use]
    pub fn is_shutting_down(&self) -> bool {
        self.queue.is_shutting_down()
    }
}
