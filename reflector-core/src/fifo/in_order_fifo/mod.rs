//! The in-order FIFO: every change handed over, queued in the order it came, as
//! client-go 1.36's `RealFIFO`.

use std::collections::HashSet;
use std::fmt;
use std::pin::pin;
use std::sync::MutexGuard;

use foldhash::fast::RandomState;

use super::QueueOptions;
use super::queue_core::QueueCore;
use crate::object::{Object, ObjectKey};
use crate::store::StoreError;

mod entry;
mod options;
mod sink;
mod state;
mod store;
#[cfg(test)]
mod tests;

pub use entry::Entry;
use state::{Queued, SHRINK_ABOVE, State};

/// One entry the informer pops, with its object's key (for a per-object delta)
/// and whether it belongs to the first list.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PoppedEntry<K> {
    /// The key of a [`Entry::Delta`]'s object (a tombstone's own key); `None` for
    /// the other entries.
    pub(crate) key: Option<crate::object::ObjectKey>,
    /// The entry.
    pub(crate) entry: Entry<K>,
    /// Whether the entry belongs to the first list (popped before the FIFO synced),
    /// as client-go's `isInInitialList`.
    pub(crate) is_in_initial_list: bool,
}

/// A producer-consumer queue that hands over every change in the order it came, as
/// client-go 1.36's `RealFIFO` (the `InOrderInformers`, `AtomicFIFO` and
/// `UnlockWhileProcessingFIFO` features, all on).
///
/// A reflector produces (through [`Store`](crate::store::Store): `add`, `update`,
/// `delete`, `replace`, `resync`) and one consumer [`pop`](InOrderFifo::pop)s.
/// Unlike the [`DeltaFifo`](crate::fifo::DeltaFifo), nothing accumulates per key:
/// two updates of one object are two entries, each in its place among the changes
/// to other objects, so the consumer sees the watch's order across objects.
///
/// With atomic events (the default) a relist is one [`Entry::ReplacedAll`] holding
/// the whole list, which the consumer applies at once (its cache then equals a
/// state that existed at the list's resource version) before it notifies anyone; a
/// resync is one [`Entry::SyncAll`]; a watch bookmark is an [`Entry::Bookmark`]. The
/// queue never consults the consumer's cache for these, so the consumer processes
/// an entry without holding any lock the producer waits for: the reflector queues
/// the next events while earlier ones are processed.
///
/// Without atomic events ([`atomic(false)`](InOrderFifo::atomic)) a relist becomes
/// per-object deltas computed against the consumer's cache (given with
/// [`cache`](InOrderFifo::cache)): a `Deleted` tombstone for each key that
/// disappeared, then a `Replaced` delta per listed object; a resync a `Sync` delta
/// per cached object with nothing queued. Those writes then wait for a running
/// `pop` callback, as with the `DeltaFifo`.
///
/// Keep one consumer: two tasks popping at once could process two changes to one
/// object out of order.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::fifo::{DeltaType, Entry, InOrderFifo};
/// use reflector::store::Store;
///
/// let fifo = InOrderFifo::<ConfigMap>::new();
/// let named = |name: &str, rv: &str| {
///     let mut cm = ConfigMap::default();
///     cm.metadata.name = Some(name.into());
///     cm.metadata.resource_version = Some(rv.into());
///     Arc::new(cm)
/// };
/// fifo.add(named("a", "1")).unwrap();
/// fifo.add(named("b", "2")).unwrap();
/// fifo.update(named("a", "3")).unwrap();
/// let mut order = Vec::new();
/// while !fifo.is_empty() {
///     let name = fifo
///         .pop(|entry, _| match entry {
///             Entry::Delta(d) => d.object.object().metadata.name.clone(),
///             _ => None,
///         })
///         .await
///         .unwrap();
///     order.push(name.unwrap());
/// }
/// assert_eq!(order, ["a", "b", "a"]);
/// # }
/// ```
#[doc(alias = "RealFIFO")]
pub struct InOrderFifo<K> {
    /// The state under its lock; the processing lock, taken without atomic events
    /// only: by a `pop` until its callback returned, and by `replace` and `resync`,
    /// which consult the consumer's cache, so they never see an entry popped but
    /// not yet applied; the poppers' wake-up (`notify_one` per write,
    /// `notify_waiters` on `close`).
    core: QueueCore<State<K>>,
    /// Keys, the consumer's cache and the transform. Immutable after construction.
    /// The cache is read without the FIFO's lock; the transform is called before
    /// the lock is taken.
    options: QueueOptions<K>,
    /// Immutable after construction.
    atomic: bool,
}

impl<K: Object> Default for InOrderFifo<K> {
    fn default() -> Self {
        InOrderFifo::new()
    }
}

impl<K> fmt::Debug for InOrderFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("InOrderFifo")
            .field("len", &state.queue.len())
            .field("atomic", &self.atomic)
            .field("populated", &state.life.populated)
            .field("closed", &state.life.closed)
            .finish_non_exhaustive()
    }
}

impl<K: Object> InOrderFifo<K> {
    /// An empty FIFO keyed by `ns/name`, with atomic events, no cache and no
    /// transform, as client-go 1.36's informers build theirs; the builder methods
    /// ([`cache`](InOrderFifo::cache), [`atomic`](InOrderFifo::atomic),
    /// [`transform`](InOrderFifo::transform), ...) configure it before it is shared.
    #[must_use]
    pub fn new() -> Self {
        InOrderFifo {
            core: QueueCore::new(State::new()),
            options: QueueOptions::new(),
            atomic: true,
        }
    }
}

impl<K> InOrderFifo<K> {
    /// Takes the lock (see [`QueueCore::lock`]).
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.core.lock()
    }

    /// Takes the processing lock (before `state`, never after); only without atomic
    /// events.
    fn lock_processing(&self) -> Option<MutexGuard<'_, ()>> {
        (!self.atomic).then(|| self.core.lock_processing())
    }

    /// Whether the first list has been processed — or an `add`/`update`/`delete`
    /// came before any list — as client-go's `HasSynced`: it turns true only once the
    /// `pop` callback of the last initial entry returned.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.core.has_synced()
    }

    /// Waits until [`has_synced`](InOrderFifo::has_synced) is true.
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::InOrderFifo;
    /// use reflector::store::Store;
    /// let fifo = InOrderFifo::<ConfigMap>::new();
    /// fifo.replace(vec![], "1").unwrap(); // one (empty) list to process
    /// fifo.pop(|_, initial| assert!(initial)).await.unwrap();
    /// fifo.wait_synced().await;
    /// # }
    /// ```
    pub async fn wait_synced(&self) {
        self.core.wait_synced().await;
    }

    /// Closes the FIFO: pending and future `pop`s return the queued entries, then
    /// [`StoreError::Closed`]; writes fail at once. Idempotent.
    pub fn close(&self) {
        self.core.close();
    }

    /// Whether [`close`](InOrderFifo::close) was called.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.core.is_closed()
    }

    /// The number of queued entries (client-go's `informer_queued_items`).
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether no entry is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lock().queue.is_empty()
    }

    /// Waits for a queued entry, removes it and runs `process` on it and on whether
    /// it belongs to the first list, as client-go's `Pop`. With atomic events the
    /// FIFO's lock is not held while `process` runs, so the producer queues on
    /// meanwhile; without, `process` runs under the processing lock (see the type's
    /// docs) and must not call this FIFO's `replace` or `resync`.
    ///
    /// If `process` panics, the entry is lost and the panic propagates; the FIFO
    /// stays usable.
    ///
    /// # Errors
    /// [`StoreError::Closed`] once the FIFO is closed **and** drained.
    ///
    /// # Cancel safety
    /// Cancel safe: the entry is removed and `process` runs after the last `.await`;
    /// a `pop` dropped while waiting takes nothing.
    pub async fn pop<R>(&self, process: impl FnOnce(Entry<K>, bool) -> R) -> Result<R, StoreError>
    where
        K: Object,
    {
        self.pop_batch(1, |mut entries, _| {
            let popped = entries.pop();
            popped.map(|p| process(p.entry, p.is_in_initial_list))
        })
        .await?
        .ok_or(StoreError::Closed)
    }

    /// As [`pop`](InOrderFifo::pop), for up to `max` entries at once (`max` 0 counts
    /// as 1), as client-go's `PopBatch`: a run of per-object deltas and bookmarks,
    /// or one whole list or resync alone; a batch never mixes entries of the first
    /// list with later ones, nor holds two changes to one object (the second starts
    /// the next batch). `process` always gets at least one entry.
    ///
    /// `process` also gets the consumer's new **watermark** when the batch moves it:
    /// the resource version through which everything the reflector handed over is
    /// applied once this batch is. Entries are processed in the order they came, so
    /// this is exact: the version of the batch's last entry that carries one (a watch
    /// event's object's, a bookmark's or the end of a first list streamed page by
    /// page, a whole list's); listed objects and resyncs carry none.
    ///
    /// # Errors
    /// [`StoreError::Closed`] once the FIFO is closed and drained.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`pop`](InOrderFifo::pop).
    pub(crate) async fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(Vec<PoppedEntry<K>>, Option<String>) -> R,
    ) -> Result<R, StoreError>
    where
        K: Object,
    {
        let (processing, mut state) = self.wait_ready().await?;
        let is_in_initial_list = !state.life.synced;
        let mut limit = max.max(1);
        if state.life.initial_population_count > 0 {
            limit = limit.min(state.life.initial_population_count);
        }
        let mut batch = Vec::with_capacity(limit.min(state.queue.len()));
        // The keys in the batch: a second change to one object starts the next batch.
        let mut keys: HashSet<ObjectKey, RandomState> = HashSet::default();
        let mut watermark = None;
        while batch.len() < limit {
            let Some(front) = state.queue.front() else {
                break;
            };
            if !batch.is_empty() && !front.entry.is_batchable() {
                break;
            }
            if limit > 1
                && let Some(key) = &front.key
                && !keys.insert(key.clone())
            {
                break;
            }
            let Some(queued) = state.queue.pop_front() else {
                break;
            };
            if let Some(rv) = queued.watermark() {
                watermark = Some(rv.to_owned());
            }
            let alone = !queued.entry.is_batchable();
            batch.push(PoppedEntry {
                key: queued.key,
                entry: queued.entry,
                is_in_initial_list,
            });
            if alone {
                break;
            }
        }
        if state.queue.is_empty() && state.queue.capacity() > SHRINK_ABOVE {
            // A list's worth of entries went through; give the room back.
            state.queue.shrink_to_fit();
        }
        state.in_flight = batch.len();
        let watermark = watermark.filter(|rv| *rv != state.answered_rv);
        if let Some(rv) = &watermark {
            rv.clone_into(&mut state.answered_rv);
        }
        drop(state);
        let done = Processed {
            fifo: self,
            count: batch.len(),
        };
        let result = process(batch, watermark);
        drop(done);
        drop(processing);
        Ok(result)
    }

    /// Waits until an entry is queued and returns the processing lock (without
    /// atomic events) and the state's, both taken after the last `.await`.
    ///
    /// # Errors
    /// [`StoreError::Closed`] once the FIFO is closed and nothing is queued.
    ///
    /// # Cancel safety
    /// Cancel safe: it takes nothing.
    async fn wait_ready(
        &self,
    ) -> Result<(Option<MutexGuard<'_, ()>>, MutexGuard<'_, State<K>>), StoreError> {
        let mut notified = pin!(self.core.notify.notified());
        let mut registered = false;
        loop {
            {
                let processing = self.lock_processing();
                let state = self.lock();
                if !state.queue.is_empty() {
                    return Ok((processing, state));
                }
                if state.life.closed {
                    return Err(StoreError::Closed);
                }
            }
            // Registration costs a lock inside the `Notify`: the first check is made
            // without it, and the queue checked again once registered.
            if registered {
                notified.as_mut().await;
                notified.set(self.core.notify.notified());
                registered = false;
            } else {
                notified.as_mut().enable();
                registered = true;
            }
        }
    }

    /// Queues `entries` under one lock, in order, and wakes a popper. A write before
    /// any list makes the FIFO populated (and synced), as client-go's `Add`.
    ///
    /// # Errors
    /// [`StoreError::Closed`] on a closed FIFO (nothing is queued).
    fn push(&self, entries: impl IntoIterator<Item = Queued<K>>) -> Result<(), StoreError>
    where
        K: Object,
    {
        let flipped = {
            let mut state = self.lock();
            if state.life.closed {
                return Err(StoreError::Closed);
            }
            let flipped = state.life.written_locked();
            state.push_all_locked(entries);
            flipped
        };
        self.core.announce_synced(flipped);
        self.core.notify.notify_one();
        Ok(())
    }

    /// Ends a list (`replace` or a streamed one) whose entries the caller queued
    /// under `state`, and unlocks: the first list makes the FIFO populated, with
    /// every queued entry as its initial population, as client-go's `Replace`.
    fn end_list(&self, mut state: MutexGuard<'_, State<K>>) {
        state.life.streaming = false;
        if !state.life.populated {
            state.life.populated = true;
            state.life.initial_population_count = state.queue.len();
        }
        let flipped = state.life.check_synced_locked();
        let any_queued = !state.queue.is_empty();
        drop(state);
        self.core.announce_synced(flipped);
        if any_queued {
            self.core.notify.notify_one();
        }
    }

    /// The queued entries, oldest first (for tests, as client-go's `getItems`).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> Vec<Entry<K>> {
        self.lock().queue.iter().map(|q| q.entry.clone()).collect()
    }
}

/// A popped batch in its callback's hands: when the callback returns (or unwinds),
/// the batch counts as processed (for `has_synced` and `is_drained`).
struct Processed<'a, K> {
    fifo: &'a InOrderFifo<K>,
    count: usize,
}

impl<K> Drop for Processed<'_, K> {
    fn drop(&mut self) {
        self.fifo
            .core
            .processed(self.count, |state| state.in_flight = 0);
    }
}
