//! The DeltaFifo: per-key accumulated deltas, queued in first-enqueue order.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use foldhash::fast::RandomState;
use tokio::sync::Notify;

use super::delta::{Delta, DeltaObject, DeltaType, Deltas};
use super::error::FifoError;
use crate::object::{
    DeletedFinalStateUnknown, KeyError, KeyFunc, Object, ObjectKey, meta_namespace_key,
};
use crate::store::{KeyListerGetter, Store, StoreError, StoreSink, WatchAction};

/// A function applied to each object as it enters a [`DeltaFifo`], as client-go's
/// `TransformFunc`: typically strips fields the consumer never reads (such as
/// `managedFields`) to save memory.
///
/// It runs exactly once per object entering through `add`, `update`, `delete`,
/// `replace` or a streamed list page, before anyone else sees the object, and never
/// on tombstones nor on the `Sync` deltas of `resync` (those objects come from the
/// known objects, which were transformed already). Keep it fast: it runs under the
/// FIFO's lock.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::fifo::TransformFunc;
/// let strip: TransformFunc<ConfigMap> = Arc::new(|obj: Arc<ConfigMap>| {
///     let mut obj = Arc::unwrap_or_clone(obj);
///     obj.metadata.managed_fields = None;
///     Arc::new(obj)
/// });
/// # let _ = strip;
/// ```
pub type TransformFunc<K> = Arc<dyn Fn(Arc<K>) -> Arc<K> + Send + Sync>;

/// Configuration of a [`DeltaFifo`], as client-go's `DeltaFIFOOptions`. Every field
/// is optional.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::fifo::{DeltaFifo, DeltaFifoOptions};
/// let fifo = DeltaFifo::<ConfigMap>::new(DeltaFifoOptions::default().emit_delta_type_replaced(true));
/// assert!(fifo.is_empty());
/// ```
#[non_exhaustive]
pub struct DeltaFifoOptions<K> {
    /// Computes each object's key. Default: [`meta_namespace_key`] (`ns/name`), as
    /// client-go's `MetaNamespaceKeyFunc`.
    pub key_func: KeyFunc<K>,
    /// The keys the consumer already knows (the informer's indexer). Used by
    /// `delete` (an object known there is deleted even if not queued), `replace`
    /// (known keys missing from the list get a tombstone) and `resync`. Default:
    /// `None`, as client-go; then deletions are detected only among queued keys and
    /// `resync` does nothing.
    pub known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    /// Whether `replace` emits [`DeltaType::Replaced`] rather than
    /// [`DeltaType::Sync`]. Default: `false`, as client-go (for backward
    /// compatibility).
    pub emit_delta_type_replaced: bool,
    /// Applied to each object entering the FIFO. Default: `None`, as client-go.
    pub transform: Option<TransformFunc<K>>,
}

impl<K: Object> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        DeltaFifoOptions {
            key_func: Arc::new(meta_namespace_key::<K>),
            known_objects: None,
            emit_delta_type_replaced: false,
            transform: None,
        }
    }
}

impl<K> DeltaFifoOptions<K> {
    /// Sets the key function.
    #[must_use]
    pub fn key_func(mut self, key_func: KeyFunc<K>) -> Self {
        self.key_func = key_func;
        self
    }

    /// Sets the known objects (usually the informer's indexer).
    #[must_use]
    pub fn known_objects(mut self, known: Arc<dyn KeyListerGetter<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Sets whether `replace` emits `Replaced` instead of `Sync`.
    #[must_use]
    pub fn emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_delta_type_replaced = emit;
        self
    }

    /// Sets the transform applied to each object entering the FIFO.
    #[must_use]
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }
}

impl<K> fmt::Debug for DeltaFifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoOptions")
            .field("known_objects", &self.known_objects.is_some())
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced)
            .field("transform", &self.transform.is_some())
            .finish_non_exhaustive()
    }
}

/// One item handed out by [`DeltaFifo::pop`].
#[derive(Debug, Clone, PartialEq)]
pub struct PoppedItem<K> {
    /// The object's key.
    pub key: ObjectKey,
    /// Everything that happened to the object since it was queued, oldest first.
    /// Never empty.
    pub deltas: Deltas<K>,
    /// Whether the item belongs to the first `replace`'s list (popped before the
    /// FIFO has synced), as client-go's `isInInitialList`.
    pub is_in_initial_list: bool,
}

/// The FIFO's state. Every field is guarded by `DeltaFifo::state`.
/// Queue capacity above which a drained FIFO frees its room (a relist of more keys
/// than this). Small enough to matter, large enough that watch traffic, whose queue
/// stays short, never shrinks and regrows it.
const SHRINK_ABOVE: usize = 4096;

struct State<K> {
    /// Key to its pending deltas. Guarded by `DeltaFifo::state`. Every entry holds at
    /// least one delta; a key is here if and only if it is in `queue`. Hashed with
    /// foldhash (randomly seeded, as hashbrown's default): each add+pop hashes the
    /// key twice, and SipHash was a tenth of that path.
    items: HashMap<ObjectKey, Deltas<K>, RandomState>,
    /// Keys in first-enqueue order, each at most once. Guarded by `DeltaFifo::state`.
    queue: VecDeque<ObjectKey>,
    /// Whether the first `replace` happened, or an `add`/`update`/`delete` came
    /// first. Guarded by `DeltaFifo::state`.
    populated: bool,
    /// Items of the first `replace` not yet popped. Guarded by `DeltaFifo::state`.
    initial_population_count: usize,
    /// Latched `populated && initial_population_count == 0`: set once, by
    /// `check_synced_locked`, whose caller then wakes `wait_synced`. Guarded by
    /// `DeltaFifo::state`.
    synced: bool,
    /// Set by `close`; pops fail with `Closed` once the queue is drained, writes fail
    /// at once. Guarded by `DeltaFifo::state`.
    closed: bool,
    /// A first list is coming in page by page (`stream_list_page` took its first
    /// page into an empty FIFO); `finish_list_stream` ends it, `replace` or a
    /// refused first page cancels it. Guarded by `DeltaFifo::state`.
    streaming: bool,
}

/// Items a `pop` took, in its callback's hands; dropped when the callback returns
/// (or unwinds), which counts them out of the initial population.
struct Popped<'a, K> {
    fifo: &'a DeltaFifo<K>,
    count: usize,
}

impl<K> Drop for Popped<'_, K> {
    fn drop(&mut self) {
        self.fifo.finish_processing(self.count);
    }
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
/// [`DeletedFinalStateUnknown`] tombstone — and let `resync` re-deliver every cached
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
/// use reflector_core::fifo::{DeltaFifo, DeltaFifoOptions, DeltaType};
/// use reflector_core::store::Store;
///
/// let fifo = DeltaFifo::<ConfigMap>::new(DeltaFifoOptions::default());
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// let cm = Arc::new(cm);
/// fifo.add(cm.clone()).unwrap();
/// fifo.update(cm).unwrap();
///
/// let item = fifo.pop_item().await.unwrap();
/// assert_eq!(item.key.as_str(), "a");
/// let types: Vec<_> = item.deltas.iter().map(|d| d.delta_type).collect();
/// assert_eq!(types, [DeltaType::Added, DeltaType::Updated]);
/// # }
/// ```
pub struct DeltaFifo<K> {
    /// Guards the queue and its bookkeeping. Never held across an `.await`, nor
    /// while a `pop` callback runs.
    state: Mutex<State<K>>,
    /// Held by a `pop` from taking its items until its callback returned, and by
    /// every write that consults the known objects (`delete`, `replace`,
    /// `resync`), so those never see an item popped but not yet applied to the
    /// consumer's cache. `add` and `update` do not take it: they run while a
    /// callback applies the previous items. Lock order: this, then `state`. Never
    /// held across an `.await`.
    processing: Mutex<()>,
    /// Wakes `pop`s: `notify_one` per newly queued key, `notify_waiters` on `replace`,
    /// `resync` and `close`.
    notify: Notify,
    /// Wakes `wait_synced`s (`notify_waiters`) when `State::synced` is set.
    synced_notify: Notify,
    /// Immutable after construction.
    key_func: KeyFunc<K>,
    /// Immutable after construction. Called under `state`'s lock (lock order: FIFO,
    /// then the known objects' own lock).
    known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    /// Immutable after construction.
    emit_delta_type_replaced: bool,
    /// Immutable after construction. Called under `state`'s lock.
    transform: Option<TransformFunc<K>>,
}

impl<K: Object> Default for DeltaFifo<K> {
    fn default() -> Self {
        DeltaFifo::new(DeltaFifoOptions::default())
    }
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("DeltaFifo")
            .field("len", &state.queue.len())
            .field("populated", &state.populated)
            .field("initial_population_count", &state.initial_population_count)
            .field("closed", &state.closed)
            .finish_non_exhaustive()
    }
}

impl<K> DeltaFifo<K> {
    /// A FIFO configured by `options`, as client-go's `NewDeltaFIFOWithOptions`.
    #[must_use]
    pub fn new(options: DeltaFifoOptions<K>) -> Self {
        DeltaFifo {
            state: Mutex::new(State {
                items: HashMap::default(),
                queue: VecDeque::new(),
                populated: false,
                initial_population_count: 0,
                synced: false,
                closed: false,
                streaming: false,
            }),
            processing: Mutex::new(()),
            notify: Notify::new(),
            synced_notify: Notify::new(),
            key_func: options.key_func,
            known_objects: options.known_objects,
            emit_delta_type_replaced: options.emit_delta_type_replaced,
            transform: options.transform,
        }
    }

    /// Takes the lock. A panic in a `pop` callback poisons it but leaves the state
    /// consistent (the item was removed before the callback ran), so poisoning is
    /// ignored.
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the processing lock (before `state`, never after). A panicking `pop`
    /// callback poisons it; its items were popped and are lost, nothing else is
    /// inconsistent, so poisoning is ignored.
    fn lock_processing(&self) -> MutexGuard<'_, ()> {
        self.processing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The key of `obj`, computed by the key function.
    ///
    /// # Errors
    /// [`FifoError::Key`] when the key function fails.
    pub fn key_of(&self, obj: &K) -> Result<ObjectKey, FifoError> {
        Ok((self.key_func)(obj)?)
    }

    /// The key of a delta's object: a tombstone's own key, else the key function's,
    /// as client-go's `KeyOf` on a `DeletedFinalStateUnknown`.
    ///
    /// # Errors
    /// [`FifoError::Key`] when the key function fails.
    pub fn key_of_object(&self, obj: &DeltaObject<K>) -> Result<ObjectKey, FifoError> {
        match obj {
            DeltaObject::Object(o) => self.key_of(o),
            DeltaObject::DeletedFinalStateUnknown(t) => Ok(t.key.clone()),
        }
    }

    /// The key of a `Deltas`: that of its newest object, as client-go's `KeyOf` on a
    /// `Deltas`.
    ///
    /// # Errors
    /// [`FifoError::EmptyDeltas`] when `deltas` is empty; [`FifoError::Key`] when
    /// the key function fails.
    pub fn key_of_deltas(&self, deltas: &Deltas<K>) -> Result<ObjectKey, FifoError> {
        let newest = deltas.newest().ok_or(FifoError::EmptyDeltas)?;
        self.key_of_object(&newest.object)
    }

    /// Whether the first `replace`'s items have all been popped — or an
    /// `add`/`update`/`delete` came before any `replace`. As client-go's `HasSynced`:
    /// it turns true only once the `pop` callback of the last initial item returned.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        Self::has_synced_locked(&self.lock())
    }

    fn has_synced_locked(state: &State<K>) -> bool {
        state.synced
    }

    /// Latches `synced` once the initial population is popped; returns whether it
    /// was set just now, so the caller wakes `wait_synced` after unlocking. Called
    /// whenever `populated` or `initial_population_count` change.
    fn check_synced_locked(state: &mut State<K>) -> bool {
        let now = state.populated && state.initial_population_count == 0;
        let flipped = now && !state.synced;
        state.synced |= now;
        flipped
    }

    /// Wakes `wait_synced`s if `flipped`; call after unlocking.
    fn announce_synced(&self, flipped: bool) {
        if flipped {
            self.synced_notify.notify_waiters();
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
    /// use reflector_core::fifo::DeltaFifo;
    /// use reflector_core::store::Store;
    /// let fifo = DeltaFifo::<ConfigMap>::default();
    /// fifo.replace(vec![], "1").unwrap(); // an empty first list: synced at once
    /// fifo.wait_synced().await;
    /// assert!(fifo.has_synced());
    /// # }
    /// ```
    pub async fn wait_synced(&self) {
        loop {
            let mut notified = pin!(self.synced_notify.notified());
            notified.as_mut().enable();
            if self.has_synced() {
                return;
            }
            notified.await;
        }
    }

    /// Closes the FIFO: pending and future `pop`s return the queued items, then
    /// [`FifoError::Closed`]; writes fail with [`StoreError::Closed`]. Idempotent.
    pub fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// Whether [`close`](DeltaFifo::close) was called.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.lock().closed
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

    /// Whether no key is queued and none is being processed: everything written so
    /// far has been popped and its `pop` callback has returned.
    pub(crate) fn is_drained(&self) -> bool {
        let _processing = self.lock_processing();
        self.lock().queue.is_empty()
    }

    /// A copy of the pending deltas of `obj`'s key, as client-go's `Get`.
    ///
    /// # Errors
    /// [`FifoError::Key`] when the key function fails.
    pub fn deltas(&self, obj: &K) -> Result<Option<Deltas<K>>, FifoError> {
        let key = self.key_of(obj)?;
        Ok(self.deltas_by_key(&key))
    }

    /// A copy of the pending deltas under `key`, as client-go's `GetByKey`. The copy
    /// shares the objects (`Arc`s), not the list.
    #[must_use]
    pub fn deltas_by_key(&self, key: &ObjectKey) -> Option<Deltas<K>> {
        self.lock().items.get(key).cloned()
    }

    /// Waits for a queued item, removes it and runs `process` on it, as client-go's
    /// `Pop`: whatever `process` updates (the informer's indexer, the known objects)
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
    /// [`FifoError::Closed`] once the FIFO is closed **and** drained: items queued
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
    /// use reflector_core::fifo::{DeltaFifo, FifoError};
    /// use reflector_core::store::Store;
    ///
    /// let fifo = DeltaFifo::<ConfigMap>::default();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// fifo.add(Arc::new(cm)).unwrap();
    /// fifo.close();
    /// let n = fifo.pop(|item| item.deltas.len()).await.unwrap();
    /// assert_eq!(n, 1);
    /// assert_eq!(fifo.pop(|_| ()).await, Err(FifoError::Closed));
    /// # }
    /// ```
    pub async fn pop<R>(&self, process: impl FnOnce(PoppedItem<K>) -> R) -> Result<R, FifoError> {
        self.pop_some(1, |first, _| process(first)).await
    }

    /// As [`pop`](DeltaFifo::pop), for up to `max` queued items at once (at least
    /// one; `max` 0 counts as 1): `process` gets them in queue order, under the
    /// processing lock, as if they were popped one after another with nothing queued in between.
    /// Handing items over in batches lets a consumer pay its own per-round costs
    /// (locks, wake-ups of downstream tasks) once per batch.
    ///
    /// # Errors
    /// [`FifoError::Closed`] once the FIFO is closed and drained.
    ///
    /// # Cancel safety
    /// Cancel-safe, as [`pop`](DeltaFifo::pop).
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector_core::fifo::DeltaFifo;
    /// use reflector_core::store::Store;
    ///
    /// let fifo = DeltaFifo::<ConfigMap>::default();
    /// for name in ["a", "b", "c"] {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.name = Some(name.into());
    ///     fifo.add(Arc::new(cm)).unwrap();
    /// }
    /// let keys = fifo
    ///     .pop_batch(2, |items| items.iter().map(|i| i.key.to_string()).collect::<Vec<_>>())
    ///     .await
    ///     .unwrap();
    /// assert_eq!(keys, ["a", "b"]);
    /// # }
    /// ```
    pub async fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(Vec<PoppedItem<K>>) -> R,
    ) -> Result<R, FifoError> {
        self.pop_some(max, |first, rest| {
            let mut items = Vec::with_capacity(rest.len() + 1);
            items.push(first);
            items.extend(rest);
            process(items)
        })
        .await
    }

    /// Waits for a queued item and pops it with up to `max - 1` more, handing
    /// `process` the first and the rest under the processing lock.
    async fn pop_some<R>(
        &self,
        max: usize,
        process: impl FnOnce(PoppedItem<K>, Vec<PoppedItem<K>>) -> R,
    ) -> Result<R, FifoError> {
        let mut notified = pin!(self.notify.notified());
        // Whether `notified` is registered with the `Notify` (so `notify_one` reaches
        // it). Registration costs a lock inside the `Notify`, so the first check of
        // each round is made without it, and the state is checked again after
        // registering: a wake-up sent between the two checks is then not lost.
        let mut registered = false;
        loop {
            {
                let processing = self.lock_processing();
                let mut state = self.lock();
                if let Some(first) = Self::pop_front_locked(&mut state) {
                    let more = max.saturating_sub(1).min(state.queue.len());
                    let mut rest = Vec::with_capacity(more);
                    while rest.len() < more {
                        match Self::pop_front_locked(&mut state) {
                            Some(item) => rest.push(item),
                            None => break,
                        }
                    }
                    drop(state);
                    // The items count as popped (for `has_synced`) only once
                    // `process` returned, or unwound.
                    let popped = Popped {
                        fifo: self,
                        count: rest.len() + 1,
                    };
                    let result = process(first, rest);
                    drop(popped);
                    drop(processing);
                    return Ok(result);
                }
                if state.closed {
                    return Err(FifoError::Closed);
                }
            }
            if registered {
                notified.as_mut().await;
                notified.set(self.notify.notified());
                registered = false;
            } else {
                notified.as_mut().enable();
                registered = true;
            }
        }
    }

    /// Removes the first queued key and its deltas, or returns `None` when the queue
    /// is empty. The caller counts the item out of the initial population (see
    /// [`Popped`]) once it has been processed.
    fn pop_front_locked(state: &mut State<K>) -> Option<PoppedItem<K>> {
        while let Some(key) = state.queue.pop_front() {
            let is_in_initial_list = !Self::has_synced_locked(state);
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
        let flipped = {
            let mut state = self.lock();
            state.initial_population_count = state.initial_population_count.saturating_sub(count);
            Self::check_synced_locked(&mut state)
        };
        self.announce_synced(flipped);
    }

    /// As [`pop`](DeltaFifo::pop) with a callback that returns the item itself.
    ///
    /// # Errors
    /// As [`pop`](DeltaFifo::pop).
    ///
    /// # Cancel safety
    /// Cancel safe, as [`pop`](DeltaFifo::pop).
    pub async fn pop_item(&self) -> Result<PoppedItem<K>, FifoError> {
        self.pop(|item| item).await
    }
}

impl<K: Object> DeltaFifo<K> {
    /// Applies the transform, if any.
    fn transformed(&self, obj: Arc<K>) -> Arc<K> {
        match &self.transform {
            Some(t) => t(obj),
            None => obj,
        }
    }

    /// Appends a delta under `key`, queueing the key if it was not queued; returns
    /// whether it was newly queued. `transform` says whether the object is new to the
    /// FIFO (so the transform runs on it); tombstones are never transformed.
    fn queue_action_locked(
        &self,
        state: &mut State<K>,
        key: ObjectKey,
        delta_type: DeltaType,
        object: DeltaObject<K>,
        transform: bool,
    ) -> bool {
        let object = match object {
            DeltaObject::Object(o) if transform => DeltaObject::Object(self.transformed(o)),
            other => other,
        };
        let delta = Delta { delta_type, object };
        match state.items.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                e.get_mut().push_dedup(delta);
                false
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                state.queue.push_back(e.key().clone());
                e.insert(Deltas::one(delta));
                true
            }
        }
    }

    /// `items` with their keys; the first key error fails them all.
    fn keyed(
        &self,
        items: impl IntoIterator<Item = Arc<K>>,
    ) -> Result<Vec<(ObjectKey, Arc<K>)>, KeyError> {
        items
            .into_iter()
            .map(|obj| Ok(((self.key_func)(&obj)?, obj)))
            .collect()
    }

    /// Queues listed items with a `Replaced` (or `Sync`) delta each, as a streamed
    /// list's pages: every one is new to the FIFO, so the transform runs on it.
    fn queue_listed_locked(&self, state: &mut State<K>, keyed: Vec<(ObjectKey, Arc<K>)>) {
        let action = self.list_delta_type();
        let transform = self.transform.is_some();
        for (key, obj) in keyed {
            self.queue_action_locked(state, key, action, DeltaObject::Object(obj), transform);
        }
    }

    /// Ends a list (`replace` or a streamed one) and unlocks: the first list makes
    /// the FIFO populated, with every queued key as its initial population — the
    /// listed ones and inferred deletions, plus any a list streamed in and abandoned
    /// left queued (listed again or deleted now, so part of this population too).
    /// Then wakes `wait_synced` and the poppers.
    fn end_list(&self, mut state: MutexGuard<'_, State<K>>, processing: MutexGuard<'_, ()>) {
        state.streaming = false;
        if !state.populated {
            state.populated = true;
            state.initial_population_count = state.queue.len();
        }
        let flipped = Self::check_synced_locked(&mut state);
        let any_queued = !state.queue.is_empty();
        drop(state);
        drop(processing);
        self.announce_synced(flipped);
        if any_queued {
            self.notify.notify_waiters();
        }
    }

    /// The delta type of a listed item: `Replaced` if so configured, else `Sync`.
    fn list_delta_type(&self) -> DeltaType {
        if self.emit_delta_type_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        }
    }

    /// Whether `obj` is the very object the known objects hold under `key`. Called
    /// under `state`'s lock.
    fn is_known_locked(&self, key: &ObjectKey, obj: &Arc<K>) -> bool {
        self.known_objects
            .as_ref()
            .and_then(|known| known.get_by_key(key))
            .is_some_and(|cached| Arc::ptr_eq(&cached, obj))
    }

    /// `add` and `update`: key outside the lock, then append under it.
    fn add_or_update(&self, delta_type: DeltaType, obj: Arc<K>) -> Result<(), StoreError> {
        let key = (self.key_func)(&obj)?;
        let (queued, flipped) = {
            let mut state = self.lock();
            if state.closed {
                return Err(StoreError::Closed);
            }
            state.populated = true;
            let flipped = Self::check_synced_locked(&mut state);
            let queued = self.queue_action_locked(
                &mut state,
                key,
                delta_type,
                DeltaObject::Object(obj),
                true,
            );
            (queued, flipped)
        };
        self.announce_synced(flipped);
        if queued {
            self.notify.notify_one();
        }
        Ok(())
    }

    /// Queues `keyed` adds and updates under one lock, in order, and wakes the
    /// poppers once; leaves `keyed` empty. On a closed FIFO each is refused.
    fn queue_watch_run(
        &self,
        keyed: &mut Vec<(WatchAction, ObjectKey, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, StoreError),
    ) {
        let (newly_queued, flipped) = {
            let mut state = self.lock();
            if state.closed {
                drop(state);
                for (action, _, _) in keyed.drain(..) {
                    failed(action, StoreError::Closed);
                }
                return;
            }
            state.populated = true;
            let flipped = Self::check_synced_locked(&mut state);
            let mut newly_queued = 0_usize;
            for (action, key, obj) in keyed.drain(..) {
                let delta_type = match action {
                    WatchAction::Add => DeltaType::Added,
                    _ => DeltaType::Updated,
                };
                if self.queue_action_locked(
                    &mut state,
                    key,
                    delta_type,
                    DeltaObject::Object(obj),
                    true,
                ) {
                    newly_queued += 1;
                }
            }
            (newly_queued, flipped)
        };
        self.announce_synced(flipped);
        // Every waiting popper may find work now; one that has not registered yet
        // checks the queue after registering, so nothing is missed.
        match newly_queued {
            0 => {}
            1 => self.notify.notify_one(),
            _ => self.notify.notify_waiters(),
        }
    }

    /// The deletions `replace` infers for queued keys missing from the list: each
    /// key with the newest object it holds (a tombstone's inner object).
    fn missing_queued_locked(
        state: &State<K>,
        listed: &HashSet<ObjectKey, RandomState>,
    ) -> Vec<(ObjectKey, Arc<K>)> {
        state
            .queue
            .iter()
            .filter(|key| !listed.contains(*key))
            .filter_map(|key| {
                let newest = state.items.get(key)?.newest()?;
                Some((key.clone(), Arc::clone(newest.object.object())))
            })
            .collect()
    }
}

/// The producer side, as client-go's `DeltaFIFO` methods of the same names.
impl<K: Object> Store<K> for DeltaFifo<K> {
    /// Appends an `Added` delta.
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add_or_update(DeltaType::Added, obj)
    }

    /// Appends an `Updated` delta.
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add_or_update(DeltaType::Updated, obj)
    }

    /// Appends a `Deleted` delta, unless the key is neither queued nor among the
    /// known objects: then the deletion was already reported (by a relist,
    /// presumably) and is ignored.
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = (self.key_func)(&obj)?;
        let (queued, flipped) = {
            let _processing = self.lock_processing();
            let mut state = self.lock();
            if state.closed {
                return Err(StoreError::Closed);
            }
            state.populated = true;
            let flipped = Self::check_synced_locked(&mut state);
            let exists = state.items.contains_key(&key)
                || self
                    .known_objects
                    .as_ref()
                    .is_some_and(|known| known.get_by_key(&key).is_some());
            let queued = exists
                && self.queue_action_locked(
                    &mut state,
                    key,
                    DeltaType::Deleted,
                    DeltaObject::Object(obj),
                    true,
                );
            (queued, flipped)
        };
        self.announce_synced(flipped);
        if queued {
            self.notify.notify_one();
        }
        Ok(())
    }

    /// The newest object of every queued key, in queue order (a tombstone's last
    /// known object for an inferred deletion).
    fn list(&self) -> Vec<Arc<K>> {
        let state = self.lock();
        state
            .queue
            .iter()
            .filter_map(|key| state.items.get(key)?.newest())
            .map(|d| Arc::clone(d.object.object()))
            .collect()
    }

    /// The queued keys, in queue order.
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.lock().queue.iter().cloned().collect()
    }

    /// The newest object queued under `obj`'s key.
    fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = (self.key_func)(obj)?;
        Ok(self.get_by_key(&key))
    }

    /// The newest object queued under `key`.
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let state = self.lock();
        let newest = state.items.get(key)?.newest()?;
        Some(Arc::clone(newest.object.object()))
    }

    /// Appends a `Sync` (or `Replaced`) delta for each item, then a `Deleted`
    /// delta with a [`DeletedFinalStateUnknown`] tombstone for every key that is
    /// queued, or known, but missing from `items`. The tombstone carries the newest
    /// queued object of the key, or else the known object. A key already ending in
    /// an observed `Deleted` keeps it (the tombstone collapses into it). Known keys
    /// whose object vanished from the known objects meanwhile get no tombstone
    /// (client-go queues one without an object).
    ///
    /// The first `replace` sets the initial population that
    /// [`has_synced`](DeltaFifo::has_synced) waits for: every key it queued.
    fn replace(&self, items: Vec<Arc<K>>, _resource_version: &str) -> Result<(), StoreError> {
        let keyed = self.keyed(items)?;
        let action = self.list_delta_type();
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.closed {
            return Err(StoreError::Closed);
        }
        let mut listed = HashSet::with_capacity_and_hasher(keyed.len(), RandomState::default());
        for (key, obj) in keyed {
            listed.insert(key.clone());
            // An object the reflector took from the known objects (unchanged since it
            // was cached) was transformed when it first came in; never twice.
            let transform = self.transform.is_some() && !self.is_known_locked(&key, &obj);
            self.queue_action_locked(&mut state, key, action, DeltaObject::Object(obj), transform);
        }

        // Every listed key is queued now; when nothing else is, nothing is missing.
        let missing = if state.queue.len() > listed.len() {
            Self::missing_queued_locked(&state, &listed)
        } else {
            Vec::new()
        };
        for (key, obj) in missing {
            let tombstone = DeletedFinalStateUnknown {
                key: key.clone(),
                obj,
            };
            self.queue_action_locked(&mut state, key, DeltaType::Deleted, tombstone.into(), false);
        }

        if let Some(known) = &self.known_objects {
            for key in known.list_keys() {
                if listed.contains(&key) || state.items.contains_key(&key) {
                    continue;
                }
                let Some(obj) = known.get_by_key(&key) else {
                    tracing::info!(key = %key, "DeltaFifo: known key vanished from the known objects during replace; no tombstone queued");
                    continue;
                };
                let tombstone = DeletedFinalStateUnknown {
                    key: key.clone(),
                    obj,
                };
                self.queue_action_locked(
                    &mut state,
                    key,
                    DeltaType::Deleted,
                    tombstone.into(),
                    false,
                );
            }
        }

        self.end_list(state, processing);
        Ok(())
    }

    /// Appends a `Sync` delta for every known object whose key has no pending
    /// delta (a pending delta is newer than the known object, so re-delivering the
    /// known one would go back in time). Does nothing without known objects.
    fn resync(&self) -> Result<(), StoreError> {
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.closed {
            return Err(StoreError::Closed);
        }
        let Some(known) = &self.known_objects else {
            return Ok(());
        };
        let mut queued = false;
        for key in known.list_keys() {
            if state.items.contains_key(&key) {
                continue;
            }
            let Some(obj) = known.get_by_key(&key) else {
                tracing::info!(key = %key, "DeltaFifo: known key vanished from the known objects during resync; not synced");
                continue;
            };
            queued |= self.queue_action_locked(
                &mut state,
                key,
                DeltaType::Sync,
                DeltaObject::Object(obj),
                false,
            );
        }
        drop(state);
        drop(processing);
        if queued {
            self.notify.notify_waiters();
        }
        Ok(())
    }
}

/// The reflector's batching and streaming hooks.
impl<K: Object> StoreSink<K> for DeltaFifo<K> {
    /// Queues the run's adds and updates under one lock and wakes the poppers once
    /// per stretch between deletions; a deletion is [`delete`](Store::delete)'s own
    /// (it consults the known objects under the processing lock). Keys are computed
    /// before locking, so a popper is never kept waiting on them.
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, StoreError),
    ) {
        let mut keyed = Vec::with_capacity(run.len());
        let mut events = run.drain(..);
        loop {
            let mut deletion = None;
            for (action, obj) in events.by_ref() {
                if action == WatchAction::Delete {
                    deletion = Some(obj);
                    break;
                }
                match (self.key_func)(&obj) {
                    Ok(key) => keyed.push((action, key, obj)),
                    Err(e) => failed(action, e.into()),
                }
            }
            if !keyed.is_empty() {
                self.queue_watch_run(&mut keyed, failed);
            }
            match deletion {
                Some(obj) => {
                    if let Err(e) = self.delete(obj) {
                        failed(WatchAction::Delete, e);
                    }
                }
                None => break,
            }
        }
    }

    /// The known object under `obj`'s key, if it has `obj`'s resourceVersion.
    fn cached_unchanged(&self, obj: &K) -> Option<Arc<K>> {
        let known = self.known_objects.as_ref().filter(|k| !k.is_empty())?;
        let key = (self.key_func)(obj).ok()?;
        crate::store::same_state(known.get_by_key(&key), obj)
    }

    /// Queues the page with a `Replaced` (or `Sync`) delta per item, as `replace`
    /// would, if the page belongs to a first list into an empty FIFO: with
    /// `first_page`, the FIFO must never have been populated and hold nothing, nor
    /// may the known objects; later pages follow a first page it took. The consumer
    /// pops these items while the rest of the list is read, each marked as in the
    /// initial list; [`has_synced`](DeltaFifo::has_synced) waits for
    /// [`finish_list_stream`](StoreSink::finish_list_stream). Refuses (`Ok(false)`)
    /// otherwise, or if a key cannot be computed (the final `replace` reports it).
    ///
    /// Unlike client-go, whose `Replace` queues a list only once it is complete,
    /// the first list's objects reach handlers while later pages are still being
    /// read. Nothing else changes: nothing could be deleted, nothing compared, and a
    /// list that fails part way is reconciled by the next one's `replace`.
    fn stream_list_page(&self, items: &[Arc<K>], first_page: bool) -> Result<bool, StoreError> {
        let Ok(keyed) = self.keyed(items.iter().cloned()) else {
            return Ok(false);
        };
        // The processing lock makes the emptiness check see popped items as cached.
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.closed {
            return Err(StoreError::Closed);
        }
        if first_page {
            state.streaming = !state.populated
                && state.queue.is_empty()
                && self.known_objects.as_ref().is_none_or(|k| k.is_empty());
        }
        drop(processing);
        if !state.streaming {
            return Ok(false);
        }
        self.queue_listed_locked(&mut state, keyed);
        let any_queued = !state.queue.is_empty();
        drop(state);
        if any_queued {
            self.notify.notify_waiters();
        }
        Ok(true)
    }

    /// Queues `rest` as [`stream_list_page`](StoreSink::stream_list_page) queued the
    /// pages, and ends the streamed list: the FIFO is populated, and every item still
    /// queued is the initial population [`has_synced`](DeltaFifo::has_synced) waits
    /// for. If no streamed list is under way, this is `replace(rest)`.
    fn finish_list_stream(
        &self,
        rest: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let keyed = self.keyed(rest.iter().cloned())?;
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.closed {
            return Err(StoreError::Closed);
        }
        if !state.streaming {
            drop(state);
            drop(processing);
            // The list started over after its streamed pages (an expired continue token), and
            // the new list found the FIFO no longer empty: `rest` is then the whole list.
            tracing::debug!("DeltaFifo: a streamed list was started over; replacing");
            return self.replace(rest, resource_version);
        }
        self.queue_listed_locked(&mut state, keyed);
        self.end_list(state, processing);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    fn cm(i: usize) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        Arc::new(cm)
    }

    /// `pop_batch` hands over at most `max` items in queue order, each marked as
    /// part of the initial list, and `has_synced` turns true only with the batch
    /// holding the last initial item.
    #[tokio::test]
    async fn pop_batch_takes_up_to_max_in_order() {
        let fifo = DeltaFifo::<ConfigMap>::default();
        fifo.replace((0..5).map(cm).collect(), "1").unwrap();
        let first = fifo
            .pop_batch(3, |items| {
                items
                    .iter()
                    .map(|i| (i.key.to_string(), i.is_in_initial_list))
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap();
        let want: Vec<(String, bool)> = (0..3).map(|i| (format!("cm-{i}"), true)).collect();
        assert_eq!(first, want);
        assert!(!fifo.has_synced());
        let rest = fifo.pop_batch(10, |items| items.len()).await.unwrap();
        assert_eq!(rest, 2, "only what is queued");
        assert!(fifo.has_synced());
        fifo.add(cm(9)).unwrap();
        let after = fifo
            .pop_batch(0, |items| items[0].is_in_initial_list)
            .await
            .unwrap();
        assert!(!after, "max 0 pops one, outside the initial list");
    }

    /// After a large list is drained the FIFO gives its room back; short queues
    /// (watch traffic) keep theirs.
    #[tokio::test]
    async fn drained_fifo_frees_the_room_of_a_large_list() {
        let fifo = DeltaFifo::<ConfigMap>::default();
        fifo.replace((0..10_000).map(cm).collect(), "1").unwrap();
        assert!(fifo.lock().queue.capacity() >= 10_000);
        for _ in 0..10_000 {
            fifo.pop(|_| ()).await.unwrap();
        }
        let (queue, items) = {
            let state = fifo.lock();
            (state.queue.capacity(), state.items.capacity())
        };
        assert!(queue <= SHRINK_ABOVE, "{queue}");
        assert!(items <= SHRINK_ABOVE, "{items}");

        for i in 0..100 {
            fifo.add(cm(i)).unwrap();
        }
        let grown = fifo.lock().queue.capacity();
        for _ in 0..100 {
            fifo.pop(|_| ()).await.unwrap();
        }
        assert_eq!(
            fifo.lock().queue.capacity(),
            grown,
            "short queues keep their room"
        );
    }
}
