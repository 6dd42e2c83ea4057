//! Stores: where objects live once they leave the reflector.
//!
//! [`Store`] is the contract every sink of a reflector implements, as client-go's
//! `cache.Store`: the [`DeltaFifo`](crate::fifo::DeltaFifo) in front of an informer,
//! or a plain cache. [`KeyListerGetter`] is the read-only view the FIFO needs of the
//! informer's cache to detect deletions missed across a relist.
//!
//! [`Indexer`] is the informer's cache, as client-go's `cache.Indexer`: objects by
//! key in a [`ThreadSafeStore`] plus named secondary indices ([`Indexers`], e.g. the
//! built-in [`NAMESPACE_INDEX`]) answering "which objects have value *v*" in time
//! proportional to the answer. Items and indices share one lock, so reads are
//! consistent and a relist's `replace` is seen whole or not at all.
//!
//! All methods are synchronous: implementations guard their state with one short-held
//! lock and never hold it across an `.await`.

mod indexer;
mod thread_safe_store;
mod watch_action;

pub use indexer::{IndexFunc, Indexer, Indexers, NAMESPACE_INDEX, namespace_index_func};
pub(crate) use thread_safe_store::BatchWriter;
pub use thread_safe_store::ThreadSafeStore;
pub use watch_action::WatchAction;

use std::sync::Arc;

use crate::object::{KeyError, Object, ObjectKey};

/// Errors of the store module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The key function failed for an object. Not retryable: the object is malformed.
    #[error("cannot compute the object's key")]
    Key(#[source] KeyError),
    /// An index name was not registered. Not retryable: a programming error.
    #[error("index {0:?} does not exist")]
    UnknownIndex(String),
    /// `add_indexers` named an index that already exists. Not retryable.
    #[error("index {0:?} already exists")]
    IndexConflict(String),
    /// The store was closed (a closed DeltaFifo). Not retryable.
    #[error("store is closed")]
    Closed,
}

impl From<KeyError> for StoreError {
    fn from(e: KeyError) -> Self {
        StoreError::Key(e)
    }
}

/// A keyed collection of objects, as client-go's `cache.Store`.
///
/// A reflector writes into a `Store` with `add`/`update`/`delete` for watch events
/// (handed over in runs through [`apply_watch_run`](Store::apply_watch_run), which
/// calls them one by one unless the store overrides it), `replace` after each list,
/// and `resync` on its resync timer.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::store::{Indexer, Indexers, Store};
///
/// fn feed(store: &dyn Store<ConfigMap>, cm: ConfigMap) {
///     store.add(Arc::new(cm)).unwrap();
/// }
/// let cache = Indexer::<ConfigMap>::new(Indexers::new());
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// feed(&cache, cm);
/// assert_eq!(cache.len(), 1);
/// ```
pub trait Store<K: Object>: Send + Sync {
    /// Inserts or replaces the object under its key.
    ///
    /// # Errors
    /// [`StoreError::Key`] if the key function fails; [`StoreError::Closed`] on a
    /// closed FIFO.
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError>;

    /// Replaces the object under its key (inserting it if absent).
    ///
    /// # Errors
    /// As [`Store::add`].
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError>;

    /// Removes the object under its key; removing an absent key is not an error.
    ///
    /// # Errors
    /// As [`Store::add`].
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError>;

    /// Every object, in no particular order.
    fn list(&self) -> Vec<Arc<K>>;

    /// Every key, in no particular order.
    fn list_keys(&self) -> Vec<ObjectKey>;

    /// The object stored under `obj`'s key.
    ///
    /// # Errors
    /// [`StoreError::Key`] if the key function fails.
    fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError>;

    /// The object stored under `key`.
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>>;

    /// Replaces the whole content with `items`, the result of a list at
    /// `resource_version`.
    ///
    /// # Errors
    /// [`StoreError::Key`] if the key function fails for an item (nothing is
    /// replaced then); [`StoreError::Closed`] on a closed FIFO.
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError>;

    /// Re-delivers every object to whoever consumes the store (a no-op for a plain
    /// cache; `Sync` deltas for a DeltaFifo).
    ///
    /// # Errors
    /// [`StoreError::Closed`] on a closed FIFO.
    fn resync(&self) -> Result<(), StoreError>;

    /// Applies a run of watch events in order, each as the [`WatchAction`]'s own
    /// call would, and leaves `run` empty; `failed` is told of every event the store
    /// refused, with the error that call would have returned. A reflector hands over
    /// the events it takes from the stream in one poll this way (up to 1024), then
    /// reports their resource versions. Default: one call per event; the
    /// [`DeltaFifo`](crate::fifo::DeltaFifo) queues a run's adds and updates under
    /// one lock with one wake-up.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector_core::store::{Indexer, Indexers, Store, WatchAction};
    ///
    /// let cache = Indexer::<ConfigMap>::new(Indexers::new());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// let cm = Arc::new(cm);
    /// let mut run = vec![(WatchAction::Add, cm.clone()), (WatchAction::Delete, cm)];
    /// cache.apply_watch_run(&mut run, &mut |action, e| panic!("{action}: {e}"));
    /// assert!(run.is_empty());
    /// assert_eq!(cache.len(), 0);
    /// ```
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, StoreError),
    ) {
        for (action, obj) in run.drain(..) {
            let result = match action {
                WatchAction::Add => self.add(obj),
                WatchAction::Update => self.update(obj),
                WatchAction::Delete => self.delete(obj),
            };
            if let Err(e) = result {
                failed(action, e);
            }
        }
    }

    /// Told the resource version of every watch event the reflector handles, bookmarks
    /// included, as client-go's optional `ResourceVersionUpdater`. Default: ignored.
    fn update_resource_version(&self, _resource_version: &str) {}

    /// The object this store (or the cache behind it) already holds under `obj`'s key,
    /// if it has `obj`'s resourceVersion: the same state of the same object, since the
    /// API server gives every change a new resourceVersion. The reflector hands the
    /// cached `Arc` to [`replace`](Store::replace) instead of the freshly decoded copy,
    /// so a relist holds one copy of every unchanged object rather than two (its peak
    /// memory is the old cache plus what changed, not twice the cache). Default: `None`.
    fn cached_unchanged(&self, _obj: &K) -> Option<Arc<K>> {
        None
    }

    /// Offered one page of a list still being read, so the consumer can start on its
    /// objects before the last page is in; `first_page` says the page starts a list
    /// (its first page, or the single page of a list started over). Returns whether
    /// the store took the page; if it did, the reflector ends the list with
    /// [`finish_list_stream`](Store::finish_list_stream) and the items no page
    /// handed over, instead of [`replace`](Store::replace).
    ///
    /// A store takes pages only of a first list into an empty store (nothing queued,
    /// nothing cached, never populated), where `replace` would find nothing to delete
    /// and nothing to compare against, so taking the list page by page changes only
    /// *when* objects arrive. Default: never (`Ok(false)`).
    ///
    /// # Errors
    /// [`StoreError::Closed`] on a closed FIFO.
    fn stream_list_page(&self, _items: &[Arc<K>], _first_page: bool) -> Result<bool, StoreError> {
        Ok(false)
    }

    /// Ends a list whose pages [`stream_list_page`](Store::stream_list_page) took:
    /// `rest` holds the listed items no page handed over, `resource_version` is the
    /// list's. Default: [`replace`](Store::replace) with `rest` (a store that takes
    /// no page never sees this call).
    ///
    /// # Errors
    /// As [`replace`](Store::replace).
    fn finish_list_stream(
        &self,
        rest: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        self.replace(rest, resource_version)
    }
}

/// `cached`, if it is `obj`'s state: same resourceVersion (set on both).
pub(crate) fn same_state<K: Object>(cached: Option<Arc<K>>, obj: &K) -> Option<Arc<K>> {
    let rv = obj.meta().resource_version.as_deref()?;
    cached.filter(|c| c.meta().resource_version.as_deref() == Some(rv))
}

/// The read-only view of a cache a [`DeltaFifo`](crate::fifo::DeltaFifo) consults to
/// find objects deleted while the watch was down, as client-go's `KeyListerGetter`.
pub trait KeyListerGetter<K>: Send + Sync {
    /// Every key the cache holds.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The object under `key`, if cached.
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>>;
    /// Whether the cache holds nothing (lets callers skip per-object lookups, as
    /// during an initial list). Default: `false`, which is always safe.
    fn is_empty(&self) -> bool {
        false
    }
}
