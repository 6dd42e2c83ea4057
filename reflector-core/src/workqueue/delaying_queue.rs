//! The delaying queue, client-go's `workqueue.DelayingInterface`.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use super::queue::{Queue, QueueConfig, QueueItem};

/// A [`Queue`] that can also add an item after a delay, client-go's
/// `DelayingInterface`.
///
/// Delayed items wait in a heap inside the queue's own state; there is no
/// background task. A due item is promoted into the queue by whichever call
/// comes first — [`get`](Self::get), [`len`](Self::len) — and a getter with
/// nothing to do sleeps until the earliest ready time (or an add). Time is
/// `tokio::time`, so tests can pause and advance it.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use reflector_core::workqueue::DelayingQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = DelayingQueue::new();
/// queue.add_after("ns/a", Duration::from_millis(10));
/// assert_eq!(queue.len(), 0); // not yet due
/// let item = queue.get().await.unwrap(); // sleeps ~10 ms
/// assert_eq!(item, "ns/a");
/// queue.done(&item);
/// # }
/// ```
pub struct DelayingQueue<T> {
    queue: Queue<T>,
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        DelayingQueue {
            queue: self.queue.clone(),
        }
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .finish()
    }
}

impl<T: QueueItem> Default for DelayingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> DelayingQueue<T> {
    /// A new, unnamed delaying queue without metrics (client-go's `NewDelayingQueue()`).
    #[must_use]
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A new delaying queue with a name and optional metrics.
    #[must_use]
    pub fn with_config(config: QueueConfig) -> Self {
        DelayingQueue {
            queue: Queue::with_config(config),
        }
    }

    /// Adds `item` once `delay` has elapsed (at once if `delay` is zero).
    ///
    /// If the item is already waiting, the earlier of the two ready times is
    /// kept. Ignored after shutdown. Each call counts as a retry in the
    /// metrics, as in client-go.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay);
    }

    /// Number of delayed items whose time has not come yet.
    #[must_use]
    pub fn waiting_len(&self) -> usize {
        self.queue.waiting_len()
    }

    /// When a delayed item becomes ready, or `None` if it is not waiting.
    #[must_use]
    pub fn ready_at(&self, item: &T) -> Option<Instant> {
        self.queue.ready_at(item)
    }

    /// The underlying queue handle (shares state with `self`).
    #[must_use]
    pub fn queue(&self) -> &Queue<T> {
        &self.queue
    }

    /// See [`Queue::add`].
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// See [`Queue::get`]; also returns delayed items once they are due.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Queue::get`].
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    /// See [`Queue::done`].
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// See [`Queue::len`]; promotes due delayed items first.
    #[must_use]
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// See [`Queue::is_empty`].
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// See [`Queue::shut_down`]; delayed items are dropped.
    pub fn shut_down(&self) {
        self.queue.shut_down();
    }

    /// See [`Queue::shut_down_with_drain`]; delayed items are dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as [`Queue::shut_down_with_drain`].
    pub async fn shut_down_with_drain(&self) {
        self.queue.shut_down_with_drain().await;
    }

    /// See [`Queue::update_unfinished_work`].
    pub fn update_unfinished_work(&self) {
        self.queue.update_unfinished_work();
    }

    /// See [`Queue::is_shutting_down`].
    #[must_use]
    pub fn is_shutting_down(&self) -> bool {
        self.queue.is_shutting_down()
    }
}
