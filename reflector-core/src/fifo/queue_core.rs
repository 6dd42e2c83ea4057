//! [`QueueCore`]: the locks, wake-ups and lifecycle both queues share: a first list
//! to sync on, and closing.

use std::pin::pin;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

/// Where a queue stands in its life, kept in its state: every field is guarded by
/// the lock of the [`QueueCore`] that holds the state.
pub(super) struct Lifecycle {
    /// Whether the first list was queued, or an `add`/`update`/`delete` came before
    /// any.
    pub(super) populated: bool,
    /// Items of the first list not yet processed.
    pub(super) initial_population_count: usize,
    /// Latched `populated && initial_population_count == 0`: set once, by
    /// [`check_synced_locked`](Lifecycle::check_synced_locked), whose caller then
    /// wakes `wait_synced`.
    pub(super) synced: bool,
    /// Set by `close`: pops fail with `Closed` once the queue is drained, writes fail
    /// at once.
    pub(super) closed: bool,
    /// A first list is coming in page by page (a first page was taken into an empty
    /// queue); ending the list ends it, a `replace` or a refused first page cancels
    /// it.
    pub(super) streaming: bool,
}

impl Lifecycle {
    /// A queue that has seen nothing.
    pub(super) const fn new() -> Self {
        Lifecycle {
            populated: false,
            initial_population_count: 0,
            synced: false,
            closed: false,
            streaming: false,
        }
    }

    /// Latches `synced` once the initial population is processed; returns whether it
    /// was set just now, so the caller wakes `wait_synced` after unlocking. Called
    /// whenever `populated` or `initial_population_count` change.
    pub(super) fn check_synced_locked(&mut self) -> bool {
        let now = self.populated && self.initial_population_count == 0;
        let flipped = now && !self.synced;
        self.synced |= now;
        flipped
    }

    /// After a write of changes (`add`, `update`, `delete`, a watch run): one before
    /// any list populates the queue, as client-go's; one while a first list is
    /// streamed in (a deletion among a watch-list's initial events) belongs to that
    /// list, which populates the queue when it ends. Returns whether the queue
    /// synced just now.
    pub(super) fn written_locked(&mut self) -> bool {
        if !self.streaming {
            self.populated = true;
        }
        self.check_synced_locked()
    }

    /// Whether a list page is queued as part of a streamed first list: a first page
    /// starts one only into a queue never populated, `idle_and_uncached` (nothing
    /// queued or being processed, nothing in the consumer's cache); a later page
    /// follows a first page taken.
    pub(super) fn stream_page_locked(
        &mut self,
        first_page: bool,
        idle_and_uncached: impl FnOnce() -> bool,
    ) -> bool {
        if first_page {
            self.streaming = !self.populated && idle_and_uncached();
        }
        self.streaming
    }

    /// Counts `count` processed items out of the initial population; returns whether
    /// that synced the queue just now.
    pub(super) fn processed_locked(&mut self, count: usize) -> bool {
        self.initial_population_count = self.initial_population_count.saturating_sub(count);
        self.check_synced_locked()
    }
}

/// A queue's state, which holds its [`Lifecycle`].
pub(super) trait HasLifecycle {
    /// The lifecycle in the state.
    fn life(&mut self) -> &mut Lifecycle;
}

/// A queue's state (`S`, which holds its [`Lifecycle`]) under its lock, its
/// processing lock, and the wake-ups of its poppers and of its sync waiters.
pub(super) struct QueueCore<S> {
    /// Guards the queue and its bookkeeping. Never held across an `.await`, nor
    /// while a `pop` callback runs.
    state: Mutex<S>,
    /// Held by a `pop` until its callback returned, and by the writes that consult
    /// the consumer's cache (each queue says which), so they never see an item
    /// popped but not yet applied. Lock order: this, then `state`. Never held across
    /// an `.await`.
    processing: Mutex<()>,
    /// Wakes `pop`s.
    pub(super) notify: Notify,
    /// Wakes `wait_synced`s (`notify_waiters`) when `Lifecycle::synced` is set.
    synced_notify: Notify,
}

impl<S: HasLifecycle> QueueCore<S> {
    /// A core over `state`.
    pub(super) fn new(state: S) -> Self {
        QueueCore {
            state: Mutex::new(state),
            processing: Mutex::new(()),
            notify: Notify::new(),
            synced_notify: Notify::new(),
        }
    }

    /// Takes the lock. A panicking `pop` callback runs without it and the item was
    /// removed before, so the state is never left half-changed; poisoning is
    /// ignored.
    pub(super) fn lock(&self) -> MutexGuard<'_, S> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the processing lock (before `state`, never after). A panicking `pop`
    /// callback poisons it; its items were popped and are lost, nothing else is
    /// inconsistent, so poisoning is ignored.
    pub(super) fn lock_processing(&self) -> MutexGuard<'_, ()> {
        self.processing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the first list has been processed (see [`Lifecycle::synced`]).
    pub(super) fn has_synced(&self) -> bool {
        self.lock().life().synced
    }

    /// Waits until [`has_synced`](Self::has_synced).
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    pub(super) async fn wait_synced(&self) {
        loop {
            let mut notified = pin!(self.synced_notify.notified());
            notified.as_mut().enable();
            if self.has_synced() {
                return;
            }
            notified.await;
        }
    }

    /// Wakes `wait_synced`s if `flipped`; call after unlocking.
    pub(super) fn announce_synced(&self, flipped: bool) {
        if flipped {
            self.synced_notify.notify_waiters();
        }
    }

    /// Marks the queue closed and wakes every popper.
    pub(super) fn close(&self) {
        self.lock().life().closed = true;
        self.notify.notify_waiters();
    }

    /// Whether [`close`](Self::close) was called.
    pub(super) fn is_closed(&self) -> bool {
        self.lock().life().closed
    }

    /// After a `pop` callback returned (or unwound): runs `also` on the state, counts
    /// its `count` items out of the initial population, and wakes the sync waiters
    /// if that synced the queue.
    pub(super) fn processed(&self, count: usize, also: impl FnOnce(&mut S)) {
        let flipped = {
            let mut state = self.lock();
            also(&mut state);
            state.life().processed_locked(count)
        };
        self.announce_synced(flipped);
    }
}
