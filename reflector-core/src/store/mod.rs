//! Stores: where objects live once they leave the queue.
//!
//! A cache has one [`Writer`] — the unique handle that writes it and moves its
//! resource version, owned by an informer's task (or a reflector writing straight
//! into it) — and any number of read-only [`Indexer`]s: objects by key in a
//! thread-safe map plus named secondary indices ([`Indexers`], e.g. the built-in
//! [`NAMESPACE_INDEX`]) answering "which objects have value *v*" in time proportional
//! to the answer. Items and indices share one lock, so reads are consistent and a
//! relist is seen whole or not at all.
//!
//! [`Store`] is the contract of a cache of your own behind a
//! [`Reflector`](crate::Reflector), as client-go's `cache.Store`.
//!
//! All methods are synchronous: implementations guard their state with one short-held
//! lock and never hold it across an `.await`.

mod indexer;
pub(crate) mod resource_version;
mod sink;
mod thread_safe_store;
mod unchanged;
mod writer;

pub use indexer::{Indexer, Indexers, NAMESPACE_INDEX, namespace_index_func};
pub(crate) use sink::{PlainStore, SinkError, StoreSink, WatchAction};
pub(crate) use thread_safe_store::BatchWriter;
pub(crate) use unchanged::unchanged;
pub use writer::Writer;
pub(crate) use writer::WriterSink;

use std::sync::Arc;

use crate::object::{KeyError, ObjectKey};

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
}

impl From<KeyError> for StoreError {
    fn from(e: KeyError) -> Self {
        StoreError::Key(e)
    }
}

/// A keyed collection of objects, as client-go's `cache.Store`.
///
/// A reflector given a `Store` ([`Reflector::new`](crate::Reflector::new)) writes
/// into it with `add`/`update`/`delete` for watch events (one call per event),
/// `replace` after each list, and `resync` on its resync timer. A custom cache
/// implements these verbs and nothing else; the batching a [`Fifo`](crate::fifo::Fifo)
/// and a cache's [`Writer`] do behind a reflector is theirs, chosen by the
/// reflector's constructor ([`Reflector::with_queue`](crate::Reflector::with_queue),
/// [`Reflector::with_cache`](crate::Reflector::with_cache)).
///
/// # Example
/// ```
/// use std::sync::{Arc, Mutex};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::object::ObjectKey;
/// use reflector::store::{Store, StoreError};
///
/// /// The names of what is stored, nothing else.
/// #[derive(Default)]
/// struct Names(Mutex<Vec<String>>);
/// impl Store<ConfigMap> for Names {
///     fn add(&self, obj: Arc<ConfigMap>) -> Result<(), StoreError> {
///         self.0.lock().unwrap().push(obj.metadata.name.clone().unwrap_or_default());
///         Ok(())
///     }
///     fn update(&self, obj: Arc<ConfigMap>) -> Result<(), StoreError> { self.add(obj) }
///     fn delete(&self, obj: Arc<ConfigMap>) -> Result<(), StoreError> {
///         self.0.lock().unwrap().retain(|n| Some(n) != obj.metadata.name.as_ref());
///         Ok(())
///     }
///     fn list(&self) -> Vec<Arc<ConfigMap>> { Vec::new() }
///     fn list_keys(&self) -> Vec<ObjectKey> { Vec::new() }
///     fn get_object(&self, _: &ConfigMap) -> Result<Option<Arc<ConfigMap>>, StoreError> { Ok(None) }
///     fn get(&self, _: &ObjectKey) -> Option<Arc<ConfigMap>> { None }
///     fn replace(&self, items: Vec<Arc<ConfigMap>>, _: &str) -> Result<(), StoreError> {
///         *self.0.lock().unwrap() = Vec::new();
///         items.into_iter().try_for_each(|obj| self.add(obj))
///     }
///     fn resync(&self) -> Result<(), StoreError> { Ok(()) }
/// }
/// let names = Names::default();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// names.add(Arc::new(cm)).unwrap();
/// assert_eq!(*names.0.lock().unwrap(), ["a"]);
/// ```
pub trait Store<K>: Send + Sync {
    /// Inserts or replaces the object under its key.
    ///
    /// # Errors
    /// The store's: [`StoreError::Key`] if the key function fails.
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
    /// The store's: [`StoreError::Key`] if the key function fails for an item
    /// (nothing is replaced then).
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError>;

    /// Re-delivers every object to whoever consumes the store (a no-op for a plain
    /// cache).
    ///
    /// # Errors
    /// The store's.
    fn resync(&self) -> Result<(), StoreError>;
}

/// The read-only view of a cache a [`Fifo`](crate::fifo::Fifo) consults to find
/// objects deleted while the watch was down, as client-go's `KeyListerGetter`.
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
