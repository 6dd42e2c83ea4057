//! [`Writer`]: the one handle that writes a cache, and moves its resource version.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use super::sink::{SinkError, StoreSink, WatchAction};
use super::thread_safe_store::BatchWriter;
use super::{Indexer, Indexers, StoreError, unchanged};
use crate::object::{KeyError, Object, ObjectKey};

/// The unique writer of a cache: the one handle that adds, updates, deletes and
/// replaces its objects and moves its resource version (what read-your-writes waits
/// on), as kube-runtime's `reflector::store::Writer`. Not `Clone`: whoever owns it
/// (an informer's task, or a [`Reflector`](crate::Reflector) given it with
/// [`Reflector::with_cache`](crate::Reflector::with_cache)) is the cache's only
/// writer. Every other handle is a read-only [`Indexer`] ([`reader`](Writer::reader));
/// the writer reads as one too (it dereferences to its cache's `Indexer`).
///
/// Dropping the writer tells whoever waits for a resource version that the cache
/// will not move any more.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::store::{Indexers, Writer, NAMESPACE_INDEX};
///
/// let mut writer = Writer::new(Indexers::<ConfigMap>::new().with_namespace_index());
/// let reader = writer.reader();
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("prod".into());
/// cm.metadata.name = Some("web".into());
/// writer.add(Arc::new(cm)).unwrap();
/// assert_eq!(reader.by_index(NAMESPACE_INDEX, "prod").unwrap().len(), 1);
/// writer.replace(Vec::new(), "42").unwrap();
/// assert!(reader.is_empty());
/// assert_eq!(reader.resource_version().as_deref(), Some("42"));
/// ```
pub struct Writer<K> {
    /// The cache; its readers share it.
    cache: Indexer<K>,
}

impl<K> fmt::Debug for Writer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Writer").field(&self.cache).finish()
    }
}

/// Reads through the writer: its cache's read-only handle.
impl<K> std::ops::Deref for Writer<K> {
    type Target = Indexer<K>;

    fn deref(&self) -> &Indexer<K> {
        &self.cache
    }
}

impl<K> Drop for Writer<K> {
    /// The cache moves no more: whoever waits for a resource version is told.
    fn drop(&mut self) {
        self.cache.version().close();
    }
}

impl<K: Object> Writer<K> {
    /// An empty cache keyed by [`meta_namespace_key`](crate::object::meta_namespace_key)
    /// (`ns/name`), with `indexers`.
    #[must_use]
    pub fn new(indexers: Indexers<K>) -> Self {
        Writer {
            cache: Indexer::empty(None, indexers),
        }
    }

    /// An empty cache keyed by `key_fn`.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::object::ObjectKey;
    /// use reflector::store::{Indexers, Writer};
    /// // Key by name only, ignoring the namespace.
    /// let mut writer = Writer::<ConfigMap>::with_key_func(
    ///     |c: &ConfigMap| Ok(ObjectKey::new(None, c.metadata.name.as_deref().unwrap_or("?"))),
    ///     Indexers::new(),
    /// );
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("a".into());
    /// cm.metadata.name = Some("x".into());
    /// writer.add(Arc::new(cm)).unwrap();
    /// assert!(writer.reader().get(&ObjectKey::new(None, "x")).is_some());
    /// ```
    #[must_use]
    pub fn with_key_func(
        key_fn: impl Fn(&K) -> Result<ObjectKey, KeyError> + Send + Sync + 'static,
        indexers: Indexers<K>,
    ) -> Self {
        Writer {
            cache: Indexer::empty(Some(Arc::new(key_fn)), indexers),
        }
    }

    /// A read-only handle on the cache (as many as wanted; each sees every write).
    #[must_use]
    pub fn reader(&self) -> Indexer<K> {
        self.cache.clone()
    }

    /// Inserts or replaces the object under its key.
    ///
    /// # Errors
    /// [`StoreError::Key`] if the key function fails.
    pub fn add(&mut self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.cache.key_of(&obj)?;
        self.cache.table().upsert(key, obj);
        Ok(())
    }

    /// Replaces the object under its key (inserting it if absent).
    ///
    /// # Errors
    /// [`StoreError::Key`] if the key function fails.
    pub fn update(&mut self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add(obj)
    }

    /// Removes the object under its key; removing an absent key is not an error.
    ///
    /// # Errors
    /// [`StoreError::Key`] if the key function fails.
    pub fn delete(&mut self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.cache.key_of(&obj)?;
        self.cache.table().delete(&key);
        Ok(())
    }

    /// Removes the object under `key`, as an informer does for a tombstone whose
    /// object may no longer compute the same key. Returns the removed object.
    pub fn delete_by_key(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        self.cache.table().delete(key)
    }

    /// Replaces the whole content with `items`, the result of a list at
    /// `resource_version`, in one swap (readers see the old content or the new), and
    /// moves the cache's resource version there.
    ///
    /// # Errors
    /// [`StoreError::Key`] if the key function fails for an item; nothing is replaced
    /// then.
    pub fn replace(
        &mut self,
        items: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let keyed = items
            .into_iter()
            .map(|obj| Ok((self.cache.key_of(&obj)?, obj)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        self.cache.table().replace(keyed);
        self.reached(resource_version);
        Ok(())
    }

    /// Registers more indices, indexing every object already cached, as client-go's
    /// `AddIndexers`.
    ///
    /// # Errors
    /// [`StoreError::IndexConflict`] if a name is already registered; nothing changes
    /// then.
    pub fn add_indexers(&mut self, indexers: Indexers<K>) -> Result<(), StoreError> {
        self.cache.add_indexers(indexers)
    }

    /// Runs `apply` with the cache's write lock held: several writes for the price
    /// of one lock, seen by readers all at once.
    pub(crate) fn write_batch<R>(&mut self, apply: impl FnOnce(&mut BatchWriter<'_, K>) -> R) -> R {
        self.cache.table().write_batch(apply)
    }

    /// Moves the cache's resource version to `resource_version` (call once the cache
    /// holds everything through it), waking whoever waits for it. An empty version
    /// changes nothing.
    pub(crate) fn reached(&mut self, resource_version: &str) {
        self.cache.version().set(resource_version);
    }
}

/// A cache's writer behind a reflector that writes straight into it (no queue):
/// every event handed over is applied at once, so the cache stands at each version
/// the reflector hands over.
pub(crate) struct WriterSink<K> {
    /// Held only for one call, never across an `.await`.
    writer: Mutex<Writer<K>>,
    /// A reader of the same cache, for lookups without the writer's lock.
    reader: Indexer<K>,
}

impl<K> WriterSink<K> {
    pub(crate) fn new(writer: Writer<K>) -> Self {
        let reader = writer.cache.clone();
        WriterSink {
            writer: Mutex::new(writer),
            reader,
        }
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, Writer<K>> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K: Object> StoreSink<K> for WriterSink<K> {
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, SinkError),
    ) {
        let mut writer = self.writer();
        for (action, obj) in run.drain(..) {
            let result = match action {
                WatchAction::Add | WatchAction::Update => writer.add(obj),
                WatchAction::Delete => writer.delete(obj),
            };
            if let Err(e) = result {
                failed(action, e.into());
            }
        }
    }

    /// A no-op: a cache has no consumer to re-deliver to.
    fn resync(&self) -> Result<(), SinkError> {
        Ok(())
    }

    fn replace_listed(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), SinkError> {
        Ok(self.writer().replace(items, resource_version)?)
    }

    /// Every event handed over is applied already: the cache stands at the version.
    fn handed_over(&self, resource_version: &str) {
        self.writer().reached(resource_version);
    }

    /// The cached copy if `obj` is exactly the cached object, else `obj`.
    fn prepare_listed(&self, obj: Arc<K>, look_up: bool) -> Arc<K> {
        let cache = &self.reader;
        if !look_up || cache.is_empty() {
            return obj;
        }
        let Ok(key) = cache.key_of(&obj) else {
            return obj;
        };
        unchanged(cache.get(&key), &obj).unwrap_or(obj)
    }
}
