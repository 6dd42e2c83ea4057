//! The DeltaFifo: per-key accumulated deltas, queued in first-enqueue order.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::pin::pin;
use std::sync::{Arc, MutexGuard};

use foldhash::fast::RandomState;

use super::QueueOptions;
use super::delta::{Delta, DeltaType, Deltas};
use super::queue_core::{Lifecycle, QueueCore};
use crate::object::{KeyError, MaybeTombstone, Object, ObjectKey};
use crate::store::{Store, StoreError, StoreSink, WatchAction};

mod enqueue;
mod options;
mod sink;
mod state;
mod store;
#[cfg(test)]
mod tests;

use state::{Popped, SHRINK_ABOVE, State};

/// One item the informer pops: a key with its deltas.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PoppedItem<K> {
    /// The object's key.
    pub(crate) key: ObjectKey,
    /// Everything that happened to the object since it was queued, oldest first.
    /// Never empty.
    pub(crate) deltas: Deltas<K>,
    /// Whether the item belongs to the first `replace`'s list (popped before the
    /// FIFO has synced), as client-go's `isInInitialList`.
    pub(crate) is_in_initial_list: bool,
}

/// A producer-consumer queue of per-object changes, as client-go's `DeltaFIFO`.
///
/// A reflector produces (through [`Store`]: `add`, `update`, `delete`, `replace`,
/// `resync`) and an informer consumes with [`pop`](DeltaFifo::pop). Each key
/// accumulates its [`Deltas`] while it waits, and is queued once, in the order it was
/// first enqueued; popping hands out everything that happened to the object since it
/// was last popped. Two consecutive `Deleted` deltas collapse into one.
///
/// The optional *known objects* (the consumer's cache) let `replace` detect objects
/// deleted while the watch was down — each gets a `Deleted` delta carrying a
/// [`MaybeTombstone::DeletedFinalStateUnknown`] tombstone — and let `resync` re-deliver every cached
/// object that has no pending delta.
///
/// Several tasks may `pop` concurrently, but then (as in client-go) they may process
/// different versions of the same object at once; an informer pops from one task.
///
/// Differences from client-go: writes to a closed FIFO fail with
/// [`StoreError::Closed`] (client-go accepts them and never pops them); the
/// [`Store`] getters return the newest object (use
/// [`deltas`](DeltaFifo::deltas) for the whole `Deltas`).
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::fifo::{DeltaFifo, DeltaType};
/// use reflector::store::Store;
///
/// let fifo = DeltaFifo::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// let cm = Arc::new(cm);
/// fifo.add(cm.clone()).unwrap();
/// fifo.update(cm).unwrap();
///
/// let types = fifo
///     .pop(|deltas, _| deltas.iter().map(|d| d.delta_type).collect::<Vec<_>>())
///     .await
///     .unwrap();
/// assert_eq!(types, [DeltaType::Added, DeltaType::Updated]);
/// # }
/// ```
pub struct DeltaFifo<K> {
    /// The state under its lock; the processing lock, held by a `pop` from taking
    /// its items until its callback returned, and by every write that consults the
    /// known objects (`delete`, `replace`, `resync`), so those never see an item
    /// popped but not yet applied to the consumer's cache (`add` and `update` do not
    /// take it: they run while a callback applies the previous items); the
    /// poppers' wake-up (`notify_one` per newly queued key, `notify_waiters` on
    /// `replace`, `resync` and `close`).
    core: QueueCore<State<K>>,
    /// Keys, known objects and transform. Immutable after construction. The known
    /// objects and the transform are called under `state`'s lock (lock order: FIFO,
    /// then the known objects' own lock).
    options: QueueOptions<K>,
    /// Immutable after construction.
    emit_replaced: bool,
}

impl<K: Object> Default for DeltaFifo<K> {
    fn default() -> Self {
        DeltaFifo::new()
    }
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("DeltaFifo")
            .field("len", &state.queue.len())
            .field("populated", &state.life.populated)
            .field(
                "initial_population_count",
                &state.life.initial_population_count,
            )
            .field("closed", &state.life.closed)
            .finish_non_exhaustive()
    }
}

impl<K: Object> DeltaFifo<K> {
    /// An empty FIFO keyed by `ns/name`, with no known objects, no transform and
    /// `Sync` deltas on `replace`, as client-go's `NewDeltaFIFOWithOptions` with
    /// empty options; the builder methods ([`known_objects`](DeltaFifo::cache),
    /// [`transform`](DeltaFifo::transform), ...) configure it before it is shared.
    #[must_use]
    pub fn new() -> Self {
        DeltaFifo {
            core: QueueCore::new(State {
                items: HashMap::default(),
                queue: VecDeque::new(),
                life: Lifecycle::new(),
                handed_rv: String::new(),
                watermark_due: false,
            }),
            options: QueueOptions::new(),
            emit_replaced: false,
        }
    }
}

impl<K> DeltaFifo<K> {
    /// Takes the lock (see [`QueueCore::lock`]).
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.core.lock()
    }

    /// Takes the processing lock (before `state`, never after).
    fn lock_processing(&self) -> MutexGuard<'_, ()> {
        self.core.lock_processing()
    }

    /// The key of `obj`, computed by the key function.
    ///
    /// # Errors
    /// [`StoreError::Key`] when the key function fails.
    pub fn key_of(&self, obj: &K) -> Result<ObjectKey, StoreError> {
        Ok(self.options.key_of(obj)?)
    }

    /// The key of a delta's object: a tombstone's own key, else the key function's,
    /// as client-go's `KeyOf` on a `DeletedFinalStateUnknown`.
    ///
    /// # Errors
    /// [`StoreError::Key`] when the key function fails.
    pub fn key_of_object(&self, obj: &MaybeTombstone<K>) -> Result<ObjectKey, StoreError> {
        match obj {
            MaybeTombstone::Object(o) => self.key_of(o),
            MaybeTombstone::DeletedFinalStateUnknown { key, .. } => Ok(key.clone()),
        }
    }

    /// The key of a `Deltas`: that of its newest object, as client-go's `KeyOf` on a
    /// `Deltas`.
    ///
    /// # Errors
    /// [`StoreError::EmptyDeltas`] when `deltas` is empty; [`StoreError::Key`] when
    /// the key function fails.
    pub fn key_of_deltas(&self, deltas: &Deltas<K>) -> Result<ObjectKey, StoreError> {
        let newest = deltas.newest().ok_or(StoreError::EmptyDeltas)?;
        self.key_of_object(&newest.object)
    }

    /// Whether the first `replace`'s items have all been popped — or an
    /// `add`/`update`/`delete` came before any `replace`. As client-go's `HasSynced`:
    /// it turns true only once the `pop` callback of the last initial item returned.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.core.has_synced()
    }

    /// After one key was offered to the queue (lock released): wakes the sync waiters if
    /// the FIFO just synced, and one popper if the key was queued.
    #[inline]
    fn wake_after_enqueue(&self, queued: bool, flipped: bool) {
        self.core.announce_synced(flipped);
        if queued {
            self.core.notify.notify_one();
        }
    }

    /// Waits until [`has_synced`](DeltaFifo::has_synced) is true, as client-go's
    /// `HasSyncedChecker().Done()`. Returns at once if it already is.
    ///
    /// # Cancel safety
    /// Cancel safe: it only observes.
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::DeltaFifo;
    /// use reflector::store::Store;
    /// let fifo = DeltaFifo::<ConfigMap>::default();
    /// fifo.replace(vec![], "1").unwrap(); // an empty first list: synced at once
    /// fifo.wait_synced().await;
    /// assert!(fifo.has_synced());
    /// # }
    /// ```
    pub async fn wait_synced(&self) {
        self.core.wait_synced().await;
    }

    /// Closes the FIFO: pending and future `pop`s return the queued items, then
    /// [`StoreError::Closed`]; so do writes. Idempotent.
    pub fn close(&self) {
        self.core.close();
    }

    /// Whether [`close`](DeltaFifo::close) was called.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.core.is_closed()
    }

    /// The number of queued keys.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether no key is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lock().queue.is_empty()
    }

    /// A copy of the pending deltas of `obj`'s key, as client-go's `Get`.
    ///
    /// # Errors
    /// [`StoreError::Key`] when the key function fails.
    pub fn deltas(&self, obj: &K) -> Result<Option<Deltas<K>>, StoreError> {
        let key = self.key_of(obj)?;
        Ok(self.deltas_by_key(&key))
    }

    /// A copy of the pending deltas under `key`, as client-go's `GetByKey`. The copy
    /// shares the objects (`Arc`s), not the list.
    #[must_use]
    pub fn deltas_by_key(&self, key: &ObjectKey) -> Option<Deltas<K>> {
        self.lock().items.get(key).cloned()
    }

    /// Waits for a queued item, removes it and runs `process` on its [`Deltas`] (never
    /// empty) and on whether it belongs to the first `replace`'s list (popped before
    /// the FIFO has synced), as client-go's `Pop` and `PopProcessFunc(obj,
    /// isInInitialList)`. The object's key is its newest delta's object's
    /// ([`deletion_handling_key`](crate::object::deletion_handling_key) reads it
    /// from a tombstone too). Whatever `process` updates (the informer's indexer, the known objects)
    /// changes atomically with the queue for `delete`, `replace`, `resync` and
    /// [`has_synced`](DeltaFifo::has_synced), which wait for a running `process`,
    /// so none of them sees the item missing from both the queue and the cache.
    /// Unlike client-go, `add` and `update` do not wait: a reflector queues the next
    /// events while the consumer applies the previous ones. Items come out in the
    /// order their keys were first queued.
    ///
    /// `process` must be quick and must not call this FIFO's `pop`, `delete`,
    /// `replace` or `resync` (the processing lock is not reentrant: that
    /// deadlocks). If it panics, the item is lost and the panic propagates; the FIFO
    /// stays usable.
    ///
    /// # Errors
    /// [`StoreError::Closed`] once the FIFO is closed **and** drained: items queued
    /// before `close` are still handed out.
    ///
    /// # Cancel safety
    /// Cancel safe. The item is removed and `process` runs within a single
    /// synchronous section, after the last `.await`; a `pop` dropped while waiting
    /// takes nothing, and a wake-up it received passes to another waiting `pop`.
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::DeltaFifo;
    /// use reflector::store::{Store, StoreError};
    ///
    /// let fifo = DeltaFifo::<ConfigMap>::default();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// fifo.add(Arc::new(cm)).unwrap();
    /// fifo.close();
    /// let n = fifo.pop(|deltas, initial| (deltas.len(), initial)).await.unwrap();
    /// assert_eq!(n, (1, false));
    /// assert_eq!(fifo.pop(|_, _| ()).await, Err(StoreError::Closed));
    /// # }
    /// ```
    pub async fn pop<R>(
        &self,
        process: impl FnOnce(Deltas<K>, bool) -> R,
    ) -> Result<R, StoreError> {
        self.pop_one(|item| process(item.deltas, item.is_in_initial_list))
            .await
    }

    /// As [`pop`](DeltaFifo::pop), handing `process` the whole item, key included.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`pop`](DeltaFifo::pop).
    pub(crate) async fn pop_one<R>(
        &self,
        process: impl FnOnce(PoppedItem<K>) -> R,
    ) -> Result<R, StoreError> {
        let mut process = Some(process);
        loop {
            // Without the watermark a pop hands over at least one item, so this
            // loop runs once.
            let processed = self
                .pop_some(1, false, |items, _| {
                    let first = items.into_iter().next()?;
                    process.take().map(|p| p(first))
                })
                .await?;
            if let Some(result) = processed {
                return Ok(result);
            }
        }
    }

    /// As [`pop`](DeltaFifo::pop), for up to `max` queued items at once (at least
    /// one; `max` 0 counts as 1): `process` gets them in queue order, under the
    /// processing lock, as if they were popped one after another with nothing queued
    /// in between. Handing items over in batches lets a consumer pay its own
    /// per-round costs (locks, wake-ups of downstream tasks) once per batch.
    ///
    /// `process` also gets the consumer's new **watermark** when there is one: the
    /// resource version through which everything the reflector handed over (list,
    /// watch events, bookmarks; see [`StoreSink::handed_over`]) is applied once this
    /// batch is. This FIFO's rule is the conservative one: a version is answered
    /// only by a batch that leaves the queue empty (per-key queueing reorders
    /// events across keys, so a partly drained queue vouches for nothing), and only
    /// when it changed since last answered. A version handed over while the queue is
    /// empty wakes the consumer with a batch of no items carrying it.
    ///
    /// # Errors
    /// [`StoreError::Closed`] once the FIFO is closed and drained.
    ///
    /// # Cancel safety
    /// Cancel-safe, as [`pop`](DeltaFifo::pop).
    pub(crate) async fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(Vec<PoppedItem<K>>, Option<String>) -> R,
    ) -> Result<R, StoreError> {
        self.pop_some(max, true, process).await
    }

    /// Waits for a queued item and pops it with up to `max - 1` more, handing
    /// `process` the items and, if `watermark`, the consumer's new watermark (see
    /// [`pop_batch`](DeltaFifo::pop_batch)), under the processing lock. Without
    /// `watermark` the items are never empty.
    async fn pop_some<R>(
        &self,
        max: usize,
        watermark: bool,
        process: impl FnOnce(Vec<PoppedItem<K>>, Option<String>) -> R,
    ) -> Result<R, StoreError> {
        let mut notified = pin!(self.core.notify.notified());
        // Whether `notified` is registered with the `Notify` (so `notify_one` reaches
        // it). Registration costs a lock inside the `Notify`, so the first check of
        // each round is made without it, and the state is checked again after
        // registering: a wake-up sent between the two checks is then not lost.
        let mut registered = false;
        loop {
            {
                let processing = self.lock_processing();
                let mut state = self.lock();
                let mut items = Vec::new();
                if let Some(first) = Self::pop_front_locked(&mut state) {
                    let more = max.saturating_sub(1).min(state.queue.len());
                    items.reserve_exact(more + 1);
                    items.push(first);
                    while items.len() <= more {
                        match Self::pop_front_locked(&mut state) {
                            Some(item) => items.push(item),
                            None => break,
                        }
                    }
                }
                let reached = if watermark {
                    Self::take_watermark_locked(&mut state)
                } else {
                    None
                };
                if !items.is_empty() || reached.is_some() {
                    drop(state);
                    // The items count as popped (for `has_synced`) only once
                    // `process` returned, or unwound.
                    let popped = Popped {
                        fifo: self,
                        count: items.len(),
                    };
                    let result = process(items, reached);
                    drop(popped);
                    drop(processing);
                    return Ok(result);
                }
                if state.life.closed {
                    return Err(StoreError::Closed);
                }
            }
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

    /// The watermark a batch that leaves the queue as it is now may answer: the
    /// handed-over version, if the queue is empty and the version was not answered
    /// yet (it then counts as answered).
    fn take_watermark_locked(state: &mut State<K>) -> Option<String> {
        if !state.watermark_due || !state.queue.is_empty() {
            return None;
        }
        state.watermark_due = false;
        Some(state.handed_rv.clone())
    }

    /// Notes that the reflector handed everything over through `resource_version`
    /// (a list's, an event's or a bookmark's); answers whether the queue is empty,
    /// so the caller wakes the consumer to answer the new watermark.
    fn hand_over_locked(state: &mut State<K>, resource_version: &str) -> bool {
        if resource_version.is_empty() || state.handed_rv == resource_version {
            return false;
        }
        resource_version.clone_into(&mut state.handed_rv);
        state.watermark_due = true;
        state.queue.is_empty()
    }

    /// Removes the first queued key and its deltas, or returns `None` when the queue
    /// is empty. The caller counts the item out of the initial population (see
    /// [`Popped`]) once it has been processed.
    fn pop_front_locked(state: &mut State<K>) -> Option<PoppedItem<K>> {
        while let Some(key) = state.queue.pop_front() {
            let is_in_initial_list = !state.life.synced;
            let removed = state.items.remove(&key);
            if state.queue.is_empty() && state.queue.capacity() > SHRINK_ABOVE {
                // A list's worth of keys went through; give the room back rather
                // than keep it for the life of the informer.
                state.queue.shrink_to_fit();
                state.items.shrink_to_fit();
            }
            match removed {
                Some(deltas) => {
                    return Some(PoppedItem {
                        key,
                        deltas,
                        is_in_initial_list,
                    });
                }
                None => {
                    tracing::error!(key = %key, "DeltaFifo: key was queued without deltas; skipped")
                }
            }
        }
        None
    }

    /// Counts `count` processed items out of the initial population; the last one
    /// makes [`has_synced`](DeltaFifo::has_synced) true.
    fn finish_processing(&self, count: usize) {
        self.core.processed(count, |_| {});
    }

    /// As [`pop`](DeltaFifo::pop), returning the whole item (for tests).
    #[cfg(test)]
    pub(crate) async fn pop_item(&self) -> Result<PoppedItem<K>, StoreError> {
        self.pop_one(|item| item).await
    }
}
