//! [`Fifo`]: the queue, its configuration, and what it tells about itself.

use std::fmt;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use super::state::State;
use super::{Deltas, FifoError, QueueMode};
use crate::object::{KeyError, KeyFunc, Object, ObjectKey, meta_namespace_key};
use crate::store::{Indexer, KeyListerGetter};

/// A function applied to each object as it enters a queue (see
/// [`Fifo::transform`]).
pub(crate) type TransformFunc<K> = Arc<dyn Fn(Arc<K>) -> Arc<K> + Send + Sync>;

/// The producer-consumer queue between a reflector and an informer's cache, as
/// client-go's `Queue`: in order (client-go 1.36's `RealFIFO`, the default) or
/// accumulating per object key (client-go's `DeltaFIFO`); [`QueueMode`] says what
/// each guarantees.
///
/// A reflector produces (`add`, `update`, `delete`, `replace`, `resync`, or the
/// batched writes it makes through [`Reflector::with_queue`](crate::Reflector::with_queue))
/// and one consumer [`pop`](Fifo::pop)s [`Entry`](super::Entry)s. The optional
/// *cache* (the consumer's, [`cache`](Fifo::cache)) lets a relist in the per-key
/// mode tombstone objects deleted while the watch was down — each gets a `Deleted`
/// delta carrying a
/// [`MaybeTombstone::DeletedFinalStateUnknown`](crate::object::MaybeTombstone::DeletedFinalStateUnknown)
/// tombstone — and a resync re-deliver every cached object with nothing queued; in
/// the in-order mode the consumer compares a whole list against its cache itself.
///
/// [`has_synced`](Fifo::has_synced) (or [`wait_synced`](Fifo::wait_synced)) turns
/// true once the first list is popped and processed. The pages of a first list into
/// an empty queue may be queued as they arrive (the reflector offers each page).
///
/// Keep one consumer: two tasks popping at once could process two changes to one
/// object out of order. Differences from client-go: writes to a closed queue fail
/// with [`FifoError::Closed`] (client-go accepts them and never pops them); the
/// getters return the newest object (use [`deltas`](Fifo::deltas) for every change).
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::fifo::{DeltaType, Entry, Fifo, QueueMode};
///
/// let named = |name: &str| {
///     let mut cm = ConfigMap::default();
///     cm.metadata.name = Some(name.into());
///     Arc::new(cm)
/// };
/// for mode in [QueueMode::InOrder, QueueMode::PerKey] {
///     let fifo = Fifo::<ConfigMap>::new(mode);
///     fifo.add(named("a")).unwrap();
///     fifo.add(named("b")).unwrap();
///     fifo.update(named("a")).unwrap();
///     let first = fifo.pop(|entry, _| entry.deltas().unwrap().len()).await.unwrap();
///     // In order: a's add alone; per key: a's add and update together.
///     assert_eq!(first, if mode == QueueMode::InOrder { 1 } else { 2 });
/// }
/// # }
/// ```
#[doc(alias = "DeltaFifo")]
#[doc(alias = "InOrderFifo")]
pub struct Fifo<K> {
    /// The queue and its bookkeeping. Never held across an `.await`, nor while a
    /// `pop` callback runs.
    state: Mutex<State<K>>,
    /// Taken only when writes consult the cache (per key, or in order without
    /// atomic lists): by a `pop` until its callback returned, and by those writes
    /// (`delete` per key, `replace`, `resync`), so they never see an entry popped
    /// but not yet applied to the cache. Lock order: this, then `state`. Never held
    /// across an `.await`.
    processing: Mutex<()>,
    /// Wakes `pop`s.
    pub(super) notify: Notify,
    /// Wakes `wait_synced`s (`notify_waiters`) when the queue syncs.
    synced_notify: Notify,
    /// Immutable after construction, as are the fields below.
    pub(super) mode: QueueMode,
    /// In order: a relist, a resync and a bookmark are one entry each (always,
    /// outside this crate's tests). Per key: false.
    pub(super) atomic: bool,
    /// Per key: listed objects come as `Replaced` deltas, not `Sync`.
    pub(super) emit_replaced: bool,
    /// Keys objects. Default: `meta_namespace_key` (`ns/name`).
    key_func: KeyFunc<K>,
    /// The consumer's cache, read under the queue's lock (lock order: the queue,
    /// then the cache's own). Default: none.
    pub(super) cache: Option<Arc<dyn KeyListerGetter<K>>>,
    /// Applied to each object entering the queue, before the lock is taken.
    /// Default: none.
    transform: Option<TransformFunc<K>>,
}

impl<K: Object> Default for Fifo<K> {
    /// An in-order queue (see [`Fifo::new`]).
    fn default() -> Self {
        Fifo::new(QueueMode::default())
    }
}

impl<K> fmt::Debug for Fifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("Fifo")
            .field("mode", &self.mode)
            .field("len", &state.queue.len())
            .field("populated", &state.life.populated)
            .field("closed", &state.life.closed)
            .finish_non_exhaustive()
    }
}

impl<K: Object> Fifo<K> {
    /// An empty queue in `mode`, keyed by `ns/name`, with no cache and no transform,
    /// as client-go 1.36's informers build theirs (in order) or
    /// `NewDeltaFIFOWithOptions` with empty options (per key); the builder methods
    /// configure it before it is shared.
    #[must_use]
    pub fn new(mode: QueueMode) -> Self {
        Fifo {
            state: Mutex::new(State::new()),
            processing: Mutex::new(()),
            notify: Notify::new(),
            synced_notify: Notify::new(),
            mode,
            atomic: mode == QueueMode::InOrder,
            emit_replaced: false,
            key_func: Arc::new(meta_namespace_key::<K>),
            cache: None,
            transform: None,
        }
    }

    /// Keys objects with `key_func`. Default: [`meta_namespace_key`] (`ns/name`), as
    /// client-go's `MetaNamespaceKeyFunc`.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::Fifo;
    /// use reflector::object::ObjectKey;
    /// // Key by name only, ignoring the namespace.
    /// let fifo = Fifo::<ConfigMap>::default()
    ///     .key_func(|c: &ConfigMap| Ok(ObjectKey::new(None, c.metadata.name.as_deref().unwrap_or("?"))));
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("a".into());
    /// cm.metadata.name = Some("x".into());
    /// fifo.add(Arc::new(cm)).unwrap();
    /// assert_eq!(fifo.list_keys(), [ObjectKey::new(None, "x")]);
    /// ```
    #[must_use]
    pub fn key_func(
        mut self,
        key_func: impl Fn(&K) -> Result<ObjectKey, KeyError> + Send + Sync + 'static,
    ) -> Self {
        self.key_func = Arc::new(key_func);
        self
    }

    /// Consults `cache` (a reader of the consumer's cache) for the objects it
    /// already holds. Per key: `delete` queues the deletion of an object cached even
    /// if not queued, `replace` tombstones cached keys missing from the list, and
    /// `resync` re-delivers cached objects. In both modes it lets the reflector hand
    /// an unchanged cached object to a relist instead of a fresh copy. Default: none,
    /// as client-go; then deletions are detected only among queued keys and a
    /// per-key `resync` does nothing.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::{DeltaType, Fifo, QueueMode};
    /// use reflector::store::{Indexers, Writer};
    /// let mut writer = Writer::<ConfigMap>::new(Indexers::new());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("gone".into());
    /// writer.add(Arc::new(cm)).unwrap();
    /// let fifo = Fifo::new(QueueMode::PerKey).cache(writer.reader());
    /// fifo.replace(vec![], "2").unwrap(); // "gone" is missing from the relist
    /// let deltas = fifo.deltas_by_key(&"gone".parse().unwrap()).unwrap();
    /// assert_eq!(deltas[0].delta_type, DeltaType::Deleted);
    /// assert!(deltas[0].object.is_tombstone());
    /// ```
    #[must_use]
    #[doc(alias = "KnownObjects")]
    pub fn cache(self, cache: Indexer<K>) -> Self {
        self.cache_view(Arc::new(cache))
    }

    /// As [`cache`](Fifo::cache), for any view of a cache.
    #[must_use]
    pub(crate) fn cache_view(mut self, cache: Arc<dyn KeyListerGetter<K>>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Per key: whether a relist's objects come as [`DeltaType::Replaced`] deltas
    /// rather than [`DeltaType::Sync`]. Default: `false`, as client-go's `DeltaFIFO`
    /// (for backward compatibility); informers set it. In order they are always
    /// `Replaced`.
    ///
    /// [`DeltaType::Replaced`]: crate::fifo::DeltaType::Replaced
    /// [`DeltaType::Sync`]: crate::fifo::DeltaType::Sync
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::{DeltaType, Fifo, QueueMode};
    /// let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey).emit_replaced(true);
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// fifo.replace(vec![Arc::new(cm)], "1").unwrap();
    /// let deltas = fifo.deltas_by_key(&"a".parse().unwrap()).unwrap();
    /// assert_eq!(deltas[0].delta_type, DeltaType::Replaced);
    /// ```
    #[must_use]
    #[doc(alias = "EmitDeltaTypeReplaced")]
    pub fn emit_replaced(mut self, emit: bool) -> Self {
        self.emit_replaced = emit;
        self
    }

    /// Applies `transform` to each object as it enters the queue, as client-go's
    /// `TransformFunc`: typically strips fields the consumer never reads (such as
    /// `managedFields`) to save memory. Default: none, as client-go.
    ///
    /// It runs once per object entering through `add`, `update`, `delete`, `replace`
    /// or a list the reflector hands over, before the queue's lock is taken, and never
    /// on tombstones, on resynced objects nor on an unchanged cached object the
    /// reflector hands back (those were transformed when they came in).
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::Fifo;
    /// let fifo = Fifo::<ConfigMap>::default().transform(|obj: Arc<ConfigMap>| {
    ///     let mut obj = Arc::unwrap_or_clone(obj);
    ///     obj.data = None;
    ///     Arc::new(obj)
    /// });
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// cm.data = Some([("k".to_owned(), "v".to_owned())].into());
    /// fifo.add(Arc::new(cm)).unwrap();
    /// assert!(fifo.list()[0].data.is_none());
    /// ```
    #[must_use]
    pub fn transform(self, transform: impl Fn(Arc<K>) -> Arc<K> + Send + Sync + 'static) -> Self {
        self.shared_transform(Arc::new(transform))
    }

    /// As [`transform`](Fifo::transform), sharing a transform the caller keeps.
    #[must_use]
    pub(crate) fn shared_transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// In order, whether a relist, a resync and a watch bookmark each become one
    /// entry (the default, client-go's `AtomicFIFO`); without, a relist and a resync
    /// become per-object deltas computed against the cache, as client-go's
    /// `RealFIFO` without the feature (its ported tests run both).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn atomic(mut self, atomic: bool) -> Self {
        self.atomic = atomic && self.mode == QueueMode::InOrder;
        self
    }
}

impl<K> Fifo<K> {
    /// Takes the lock. A panicking `pop` callback runs without it and its entries
    /// were removed before, so the state is never left half-changed; poisoning is
    /// ignored.
    pub(super) fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the processing lock (before `state`, never after) when writes consult
    /// the cache; a panicking `pop` callback poisons it, which is ignored (its
    /// entries are lost, nothing else is inconsistent).
    pub(super) fn lock_processing(&self) -> Option<MutexGuard<'_, ()>> {
        (!self.atomic).then(|| {
            self.processing
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        })
    }

    /// Whether changes accumulate per key.
    pub(super) fn per_key(&self) -> bool {
        self.mode == QueueMode::PerKey
    }

    /// The mode the queue was made with.
    #[must_use]
    pub fn mode(&self) -> QueueMode {
        self.mode
    }

    /// The key of `obj`, computed by the key function.
    ///
    /// # Errors
    /// The key function's [`KeyError`].
    pub fn key_of(&self, obj: &K) -> Result<ObjectKey, KeyError> {
        (self.key_func)(obj)
    }

    /// `obj` through the transform, if any.
    #[inline]
    pub(super) fn transformed(&self, obj: Arc<K>) -> Arc<K> {
        match &self.transform {
            Some(t) => t(obj),
            None => obj,
        }
    }

    /// Whether there is a transform.
    pub(super) fn has_transform(&self) -> bool {
        self.transform.is_some()
    }

    /// Whether the first list has been processed — or an `add`/`update`/`delete`
    /// came before any list — as client-go's `HasSynced`: it turns true only once the
    /// `pop` callback of the first list's last entry returned.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.lock().life.synced
    }

    /// Waits until [`has_synced`](Fifo::has_synced) is true, as client-go's
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
    /// use reflector::fifo::{Fifo, QueueMode};
    /// let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
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

    /// Wakes `wait_synced`s if `flipped`; call after unlocking.
    pub(super) fn announce_synced(&self, flipped: bool) {
        if flipped {
            self.synced_notify.notify_waiters();
        }
    }

    /// Closes the queue: pending and future `pop`s return the queued entries, then
    /// [`FifoError::Closed`]; writes fail at once. Idempotent.
    pub fn close(&self) {
        self.lock().life.closed = true;
        self.notify.notify_waiters();
    }

    /// Whether [`close`](Fifo::close) was called.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.lock().life.closed
    }

    /// The number of queued entries: changes in order, keys per key (client-go's
    /// `informer_queued_items`).
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether nothing is queued.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lock().queue.is_empty()
    }

    /// The newest object of every queued change, in queue order (per key, one per
    /// key; a tombstone's last known object for an inferred deletion).
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        let state = self.lock();
        state
            .queue
            .iter()
            .filter_map(|q| q.entry.deltas()?.newest())
            .map(|d| Arc::clone(d.object.object()))
            .collect()
    }

    /// The keys of the queued changes, each once, in the order first queued.
    #[must_use]
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        let state = self.lock();
        let mut seen = std::collections::HashSet::new();
        state
            .queue
            .iter()
            .filter_map(|q| q.key.as_ref())
            .filter(|key| seen.insert(*key))
            .cloned()
            .collect()
    }

    /// The newest object queued under `key`, as client-go's `GetByKey`.
    #[must_use]
    #[doc(alias = "GetByKey")]
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let state = self.lock();
        let queued = state
            .queue
            .iter()
            .rev()
            .find(|q| q.key.as_ref() == Some(key));
        Some(Arc::clone(
            queued?.entry.deltas()?.newest()?.object.object(),
        ))
    }

    /// Every change queued under `key`, oldest first (per key: the key's
    /// [`Deltas`]), as client-go's `DeltaFIFO.GetByKey`. The copy shares the objects
    /// (`Arc`s), not the list.
    #[must_use]
    pub fn deltas_by_key(&self, key: &ObjectKey) -> Option<Deltas<K>> {
        let state = self.lock();
        let all: Vec<_> = state
            .queue
            .iter()
            .filter(|q| q.key.as_ref() == Some(key))
            .filter_map(|q| q.entry.deltas())
            .flat_map(|d| d.iter().cloned())
            .collect();
        (!all.is_empty()).then(|| Deltas::from(all))
    }

    /// Every change queued under `obj`'s key (see [`deltas_by_key`](Fifo::deltas_by_key)),
    /// as client-go's `DeltaFIFO.Get`.
    ///
    /// # Errors
    /// The key function's [`KeyError`].
    pub fn deltas(&self, obj: &K) -> Result<Option<Deltas<K>>, KeyError> {
        Ok(self.deltas_by_key(&self.key_of(obj)?))
    }

    /// The newest object queued under `obj`'s key, as client-go's `Get`.
    ///
    /// # Errors
    /// The key function's [`KeyError`].
    #[doc(alias = "Get")]
    pub fn get_object(&self, obj: &K) -> Result<Option<Arc<K>>, KeyError> {
        Ok(self.get(&self.key_of(obj)?))
    }

    /// The queued entries, oldest first (for tests, as client-go's `getItems`).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> Vec<super::Entry<K>> {
        self.lock().queue.iter().map(|q| q.entry.clone()).collect()
    }

    /// Waits until an entry is queued (or, with `news`, the consumer's watermark
    /// moved) and takes the processing lock (when writes consult the cache) and the
    /// state's, both after the last `.await`.
    ///
    /// # Errors
    /// [`FifoError::Closed`] once the queue is closed and nothing is queued.
    ///
    /// # Cancel safety
    /// Cancel safe: it takes nothing.
    pub(super) async fn wait_ready(
        &self,
        news: bool,
    ) -> Result<(Option<MutexGuard<'_, ()>>, MutexGuard<'_, State<K>>), FifoError> {
        let mut notified = pin!(self.notify.notified());
        // Whether `notified` is registered with the `Notify` (so `notify_one` reaches
        // it). Registration costs a lock inside the `Notify`, so the first check of
        // each round is made without it, and the state is checked again after
        // registering: a wake-up sent between the two checks is then not lost.
        let mut registered = false;
        loop {
            {
                let processing = self.lock_processing();
                let state = self.lock();
                if !state.queue.is_empty() || (news && state.has_news_locked()) {
                    return Ok((processing, state));
                }
                if state.life.closed {
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
}
