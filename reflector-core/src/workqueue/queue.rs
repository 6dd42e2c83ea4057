//! The work queue: client-go's `workqueue.Type`, `DelayingInterface` and
//! `RateLimitingInterface` in one type.
//!
//! All state lives behind one `std::sync::Mutex` ([`State`]); waiting getters
//! park on a `tokio::sync::Notify`. The lock is never held across an `.await`.
//! The same state also holds the delayed ("waiting") items of
//! [`add_after`](WorkQueue::add_after), so that promoting a due item and
//! handing it to a worker happen under one lock, with no background task.

use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::metrics::QueueMetrics;
use super::queue_state::{State, Take, WaitEntry};
use super::rate_limiter::{DefaultRateLimiter, RateLimiter};
use super::{Priority, QueueConfig};

/// What a work queue can hold: cheap to clone, hashable, shareable between tasks
/// (the bounds public items spell out in full).
pub(crate) trait QueueItem: Clone + Eq + Hash + Send + Sync + 'static {}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueItem for T {}

/// The longest delay `add_after` honours (about 30 years); longer delays are
/// clamped so that computing the ready time can never overflow.
const MAX_DELAY: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// A deduplicating, delaying, rate-limited work queue: client-go's
/// `workqueue.Type`, `DelayingInterface` and `RateLimitingInterface` in one type,
/// the queue controllers use.
///
/// Guarantees (the contract of client-go's `workqueue.Interface`):
///
/// - an item is queued at most once: adding an item that is already waiting for
///   a worker does nothing;
/// - an item being processed (returned by [`get`](Self::get), not yet
///   [`done`](Self::done)) is never handed to a second worker; if it is added
///   meanwhile it is remembered as *dirty* and queued again by `done`;
/// - after [`shutdown`](Self::shutdown) adds are ignored, getters drain what
///   is already queued and then receive `None`.
///
/// Delays: [`add_after`](Self::add_after) queues an item once a delay has
/// elapsed (adding it again keeps the earliest time). Delayed items wait in a
/// heap inside the queue's own state; there is no background task. A due item is
/// promoted into the queue by whichever call comes first ([`get`](Self::get),
/// [`len`](Self::len)), and a getter with nothing to do sleeps until the earliest
/// ready time (or an add). Time is `tokio::time`, so tests can pause and advance it.
///
/// Retries: a worker that fails calls [`add_rate_limited`](Self::add_rate_limited),
/// which waits as long as the queue's [`RateLimiter`] says (by default
/// [`DefaultRateLimiter`]); one that succeeds calls
/// [`forget`](Self::forget) so the item's backoff resets. Either way it calls
/// [`done`](Self::done).
///
/// `WorkQueue` is a cheap handle: clones share the same queue.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use reflector::workqueue::WorkQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = WorkQueue::new(); // default controller rate limiter
/// queue.add("ns/a");
/// queue.add("ns/a"); // deduplicated
/// assert_eq!(queue.len(), 1);
///
/// let item = queue.get().await.unwrap();
/// // ... reconcile `item` ...
/// queue.done(&item);
///
/// queue.add_after("ns/b", Duration::from_millis(10));
/// assert_eq!(queue.len(), 0); // not yet due
/// let item = queue.get().await.unwrap(); // sleeps ~10 ms
/// assert_eq!(item, "ns/b");
/// queue.add_rate_limited(item.clone()); // failed: retry after a backoff
/// assert_eq!(queue.requeues(&item), 1);
/// queue.forget(&item); // (on a later success) the backoff resets
/// assert_eq!(queue.requeues(&item), 0);
/// queue.done(&item);
///
/// queue.shutdown();
/// assert!(queue.is_shutting_down());
/// # }
/// ```
pub struct WorkQueue<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        WorkQueue {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueue")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

struct Inner<T> {
    /// How long `add_rate_limited` makes an item wait.
    limiter: Arc<dyn RateLimiter<T>>,
    name: String,
    /// The metrics hook; `None` records nothing and reads no clock.
    metrics: Option<Arc<dyn QueueMetrics>>,
    /// Whether adds keep their priority (else every add is `Priority::DEFAULT`).
    priorities: bool,
    /// The single lock of the queue.
    state: Mutex<State<T>>,
    /// Wakes getters: `notify_one` per item made available, `notify_waiters`
    /// on shutdown and when a new earliest ready time is set.
    items: Notify,
    /// Wakes `shutdown_with_drain` when processing becomes empty or a forced
    /// shutdown cancels the drain.
    drained: Notify,
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A queue holds any item that is cheap to clone, hashable and shareable between
/// tasks; in controllers, an [`ObjectRef`](crate::object::ObjectRef).
impl<T: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<T> {
    /// A new, unnamed queue without metrics, with [`DefaultRateLimiter`]
    /// (client-go's `New()`, and `NewRateLimitingQueue(DefaultControllerRateLimiter())`).
    #[must_use]
    pub fn new() -> Self {
        Self::with_rate_limiter(Arc::new(DefaultRateLimiter::default()))
    }

    /// A new unnamed queue with the given limiter (client-go's `NewRateLimitingQueue`).
    #[must_use]
    pub fn with_rate_limiter(limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self::with_config(limiter, QueueConfig::default())
    }

    /// A new queue with the given limiter, name and metrics.
    #[must_use]
    pub fn with_config(limiter: Arc<dyn RateLimiter<T>>, config: QueueConfig) -> Self {
        WorkQueue {
            inner: Arc::new(Inner {
                limiter,
                metrics: config.metrics.map(|m| m.queue_metrics(&config.name)),
                priorities: config.priorities,
                name: config.name,
                state: Mutex::new(State::new()),
                items: Notify::new(),
                drained: Notify::new(),
            }),
        }
    }

    /// The queue's name, as configured.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No code path panics while holding the lock, so a poisoned lock still
        // holds consistent state.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn metrics(&self) -> Option<&Arc<dyn QueueMetrics>> {
        self.inner.metrics.as_ref()
    }

    fn now_if_metrics(&self) -> Option<Instant> {
        self.inner.metrics.as_ref().map(|_| Instant::now())
    }

    /// Marks `item` as needing processing, at [`Priority::DEFAULT`] (a live change).
    ///
    /// Does nothing if the item is already queued (but raises a lower priority to
    /// the default), or if the queue is shutting down. If the item is being
    /// processed, it is queued again when the worker calls [`done`](Self::done).
    pub fn add(&self, item: T) {
        self.add_with_priority(item, Priority::DEFAULT);
    }

    /// As [`add`](Self::add), at `priority`: a worker takes the highest priority
    /// first, and items of one priority in the order they were queued (see
    /// [`Priority`]). Adding an item already queued or waiting to be queued again
    /// raises its priority if `priority` is higher, never lowers it.
    pub fn add_with_priority(&self, item: T, priority: Priority) {
        let priority = if self.inner.priorities {
            priority
        } else {
            Priority::DEFAULT
        };
        let now = self.now_if_metrics();
        let pushed = self.lock().add_locked(item, priority, now, self.metrics());
        if pushed {
            self.inner.items.notify_one();
        }
    }

    /// The priority of `item` if it is queued, waiting for its delay or being
    /// processed (the highest, if several); `None` otherwise.
    #[must_use]
    pub fn priority(&self, item: &T) -> Option<Priority> {
        self.lock().priority_locked(item)
    }

    /// Waits for the next item, marks it as being processed and returns it.
    ///
    /// Returns `None` once the queue is shutting down and nothing is queued.
    /// The caller must call [`done`](Self::done) with the item when finished.
    ///
    /// # Cancel safety
    ///
    /// This method is cancel safe: an item is taken from the queue only in the
    /// same synchronous step that returns it, so dropping the future never
    /// loses an item, and a wake-up it had received is passed to another
    /// waiting getter.
    pub async fn get(&self) -> Option<T> {
        let metrics = self.metrics();
        loop {
            // Fast path: no registration with the notifier when work is ready.
            {
                let mut state = self.lock();
                match self.take_and_chain_locked(&mut state, metrics) {
                    Take::Item(item) => return Some(item),
                    Take::ShutDown => return None,
                    Take::Empty(_) => {}
                }
            }
            let notified = self.inner.items.notified();
            tokio::pin!(notified);
            // Register before re-checking, so an add between the check and the
            // await cannot be missed.
            notified.as_mut().enable();
            let next_ready = {
                let mut state = self.lock();
                match self.take_and_chain_locked(&mut state, metrics) {
                    Take::Item(item) => return Some(item),
                    Take::ShutDown => return None,
                    Take::Empty(next_ready) => next_ready,
                }
            };
            match next_ready {
                Some(at) => {
                    tokio::select! {
                        () = &mut notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// As [`get`](Self::get), or `None` as soon as `cancel` fires (checked first):
    /// how a worker loop takes its next item.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`get`](Self::get).
    pub(crate) async fn get_unless_cancelled(&self, cancel: &CancellationToken) -> Option<T> {
        tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            item = self.get() => item,
        }
    }

    /// Takes an item and, if more are queued, wakes one more getter so that a
    /// batch of promoted items never waits for a later notification.
    fn take_and_chain_locked(
        &self,
        state: &mut State<T>,
        metrics: Option<&Arc<dyn QueueMetrics>>,
    ) -> Take<T> {
        let taken = state.take_locked(metrics);
        if matches!(taken, Take::Item(_)) && !state.ready.is_empty() {
            self.inner.items.notify_one();
        }
        taken
    }

    /// Marks `item` as done processing.
    ///
    /// If it was added again while being processed, it is queued again. Calling
    /// `done` for an item that is not being processed does nothing.
    pub fn done(&self, item: &T) {
        let metrics = self.metrics();
        let now = self.now_if_metrics();
        let mut state = self.lock();
        let Some((_, started)) = state.processing.remove(item) else {
            tracing::debug!(queue = %self.inner.name, "done called for an item that is not being processed");
            return;
        };
        if let (Some(m), Some(now)) = (metrics, now) {
            m.done(started.map_or(Duration::ZERO, |at| now.saturating_duration_since(at)));
            state.maybe_update_unfinished_locked(m, now);
        }
        if state.requeue_dirty_locked(item) {
            drop(state);
            self.inner.items.notify_one();
        } else if state.drain && state.processing.is_empty() {
            drop(state);
            self.inner.drained.notify_waiters();
        }
    }

    /// Number of items queued and ready for a worker (not counting items being
    /// processed, nor delayed items whose time has not come).
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock_promoted().ready.len()
    }

    /// Locks the state after moving the delayed items that are due into the queue
    /// (waking a getter for them), so counts read under it are current.
    fn lock_promoted(&self) -> MutexGuard<'_, State<T>> {
        let mut state = self.lock();
        if !state.heap.is_empty() {
            let pushed = state.promote_due_locked(Instant::now(), self.metrics());
            if pushed > 0 {
                self.inner.items.notify_one();
            }
        }
        state
    }

    /// Whether no item is ready for a worker (see [`len`](Self::len)).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down without waiting: later adds are ignored, delayed
    /// items are dropped, getters drain what is queued and then get `None`. A
    /// pending [`shutdown_with_drain`](Self::shutdown_with_drain) returns
    /// at once.
    #[doc(alias = "ShutDown")]
    pub fn shutdown(&self) {
        {
            let mut state = self.lock();
            state.is_shutting_down = true;
            state.drain = false;
            state.waiting.clear();
            state.heap.clear();
        }
        self.inner.items.notify_waiters();
        self.inner.drained.notify_waiters();
    }

    /// Shuts the queue down like [`shutdown`](Self::shutdown), then waits
    /// until every item being processed is [`done`](Self::done) (including items
    /// re-queued because they were added while processing).
    ///
    /// Workers must keep calling `get` and `done` for this to return. A later
    /// `shutdown` makes it return at once.
    ///
    /// # Cancel safety
    ///
    /// This method is cancel safe: the queue is shut down before the first
    /// `.await`; dropping the future only stops the waiting.
    #[doc(alias = "ShutDownWithDrain")]
    pub async fn shutdown_with_drain(&self) {
        {
            let mut state = self.lock();
            state.is_shutting_down = true;
            state.drain = true;
            state.waiting.clear();
            state.heap.clear();
        }
        self.inner.items.notify_waiters();
        loop {
            let notified = self.inner.drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.lock();
                if !state.drain || state.processing.is_empty() {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Whether either shutdown has been called.
    #[must_use]
    #[doc(alias = "ShuttingDown")]
    pub fn is_shutting_down(&self) -> bool {
        self.lock().is_shutting_down
    }

    /// Refreshes the `unfinished_work` metrics now. `get` and `done` refresh
    /// them at most every 500 ms; call this from a ticker to keep them fresh
    /// while workers are stuck. Does nothing without metrics.
    pub fn update_unfinished_work(&self) {
        if let Some(m) = self.metrics() {
            let now = Instant::now();
            self.lock().update_unfinished_locked(m, now);
        }
    }

    /// Queues `item` once `delay` has elapsed (client-go's `AddAfter`); a zero
    /// delay adds it now. Adding an item that is already waiting keeps the
    /// earlier ready time. Ignored after shutdown.
    ///
    /// A requeue keeps the item's priority: the item is queued at the priority it
    /// has while processed, queued or waiting (see [`priority`](Self::priority)),
    /// else at [`Priority::DEFAULT`].
    pub fn add_after(&self, item: T, delay: Duration) {
        let metrics = self.metrics();
        if delay.is_zero() {
            // Ignored after shutdown, like `add`; the retry is still counted
            // only when the queue is running, as client-go.
            let mut state = self.lock();
            if state.is_shutting_down {
                return;
            }
            if let Some(m) = metrics {
                m.retry();
            }
            let priority = state.priority_locked(&item).unwrap_or_default();
            let pushed = state.add_locked(item, priority, self.now_if_metrics(), metrics);
            drop(state);
            if pushed {
                self.inner.items.notify_one();
            }
            return;
        }
        let now = Instant::now();
        let ready = now + delay.min(MAX_DELAY);
        let mut state = self.lock();
        if state.is_shutting_down {
            return;
        }
        if let Some(m) = metrics {
            m.retry();
        }
        let priority = state.priority_locked(&item).unwrap_or_default();
        if let Some(waiting) = state.waiting.get_mut(&item)
            && waiting.0 <= ready
        {
            waiting.2 = waiting.2.max(priority);
            return;
        }
        let new_earliest = state.heap.peek().is_none_or(|top| ready < top.ready);
        let seq = state.seq_locked();
        state.waiting.insert(item.clone(), (ready, seq, priority));
        state.heap.push(WaitEntry { ready, seq, item });
        drop(state);
        if new_earliest {
            // Sleeping getters must recompute their deadline.
            self.inner.items.notify_waiters();
        }
    }

    /// Number of delayed items whose ready time has not been reached yet.
    #[must_use]
    pub fn waiting_len(&self) -> usize {
        self.lock_promoted().waiting.len()
    }

    /// The ready time of a delayed item, if it is waiting.
    #[must_use]
    pub fn ready_at(&self, item: &T) -> Option<Instant> {
        self.lock().waiting.get(item).map(|&(at, _, _)| at)
    }

    /// Adds `item` after the delay the rate limiter answers for it (which
    /// counts one more requeue of the item), keeping its priority as
    /// [`add_after`](Self::add_after).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.inner.limiter.when(&item);
        self.add_after(item, delay);
    }

    /// Resets the rate limiter's memory of `item`. Does not remove the item
    /// from the queue.
    pub fn forget(&self, item: &T) {
        self.inner.limiter.forget(item);
    }

    /// How many times `item` was requeued through the rate limiter since it
    /// was last forgotten.
    #[must_use]
    #[doc(alias = "NumRequeues")]
    pub fn requeues(&self, item: &T) -> usize {
        self.inner.limiter.requeues(item)
    }
}
