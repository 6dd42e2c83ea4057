//! Stores: where objects live once they leave the reflector.
//!
//! [`Store`] is the contract every sink of a reflector implements, as client-go's
//! `cache.Store`: the [`DeltaFifo`](crate::fifo::DeltaFifo) in front of an informer,
//! or a plain cache.
//!
//! [`Indexer`] is the informer's cache, as client-go's `cache.Indexer`: objects by
//! key in a thread-safe map plus named secondary indices ([`Indexers`], e.g. the
//! built-in [`NAMESPACE_INDEX`]) answering "which objects have value *v*" in time
//! proportional to the answer. Items and indices share one lock, so reads are
//! consistent and a relist's `replace` is seen whole or not at all.
//!
//! All methods are synchronous: implementations guard their state with one short-held
//! lock and never hold it across an `.await`.

mod indexer;
pub(crate) mod resource_version;
mod sink;
mod thread_safe_store;
mod unchanged;

pub use indexer::{Indexer, Indexers, NAMESPACE_INDEX, namespace_index_func};
pub(crate) use sink::{StoreSink, WatchAction, apply_each, sink_for};
pub(crate) use thread_safe_store::BatchWriter;
pub(crate) use unchanged::unchanged;

use std::any::Any;
use std::sync::Arc;

use crate::object::{KeyError, Object, ObjectKey};

/// Errors of the store module, and of the [`DeltaFifo`](crate::fifo::DeltaFifo) (a
/// store).
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
    /// The store was closed: a write to a closed DeltaFifo, or a `pop` once it is
    /// closed and every queued item has been popped (client-go's `ErrFIFOClosed`).
    /// Not retryable: the consumer loop should exit.
    #[error("store is closed")]
    Closed,
    /// A key was asked of an empty [`Deltas`](crate::fifo::Deltas), as client-go's
    /// `ErrZeroLengthDeltasObject`. Not retryable: a DeltaFifo never hands out empty
    /// `Deltas`, so the caller built one.
    #[error("0 length Deltas object; can't get key")]
    EmptyDeltas,
}

impl From<KeyError> for StoreError {
    fn from(e: KeyError) -> Self {
        StoreError::Key(e)
    }
}

/// A keyed collection of objects, as client-go's `cache.Store`.
///
/// A reflector writes into a `Store` with `add`/`update`/`delete` for watch events
/// (one call per event), `replace` after each list, and `resync` on its resync
/// timer. A custom cache implements these verbs and nothing else; the batching the
/// [`DeltaFifo`](crate::fifo::DeltaFifo) and [`Indexer`] do behind a reflector is
/// internal (the reflector recognises them, as client-go's type assertions do;
/// hence the `Any` bound, which every `'static` type meets).
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::store::{Indexer, Indexers, Store};
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
pub trait Store<K: Object>: Any + Send + Sync {
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
    #[doc(alias = "Get")]
    fn get_object(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError>;

    /// The object stored under `key`.
    #[doc(alias = "GetByKey")]
    fn get(&self, key: &ObjectKey) -> Option<Arc<K>>;

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
}

/// The read-only view of a cache a [`DeltaFifo`](crate::fifo::DeltaFifo) consults to
/// find objects deleted while the watch was down, as client-go's `KeyListerGetter`.
pub(crate) trait KeyListerGetter<K>: Send + Sync {
    /// Every key the cache holds.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The object under `key`, if cached.
    fn get(&self, key: &ObjectKey) -> Option<Arc<K>>;
    /// Whether the cache holds nothing (lets callers skip per-object lookups, as
    /// during an initial list). Default: `false`, which is always safe.
    fn is_empty(&self) -> bool {
        false
    }
}
