//! A cache's read-only handle: a [`ThreadSafeStore`] keyed by a key function, with
//! named secondary indices, as client-go's `cache.Indexer` (`store.go`, `index.go`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::resource_version::StoreVersion;
use super::thread_safe_store::ThreadSafeStore;
use super::{KeyListerGetter, StoreError};
use crate::object::{KeyFunc, Object, ObjectKey, meta_namespace_key};

/// Computes the values an object is indexed under, as client-go's `IndexFunc`.
///
/// An object may yield zero, one or many values; it is found by
/// [`Indexer::by_index`] under each of them. The function must be pure: it is
/// called again on the stored object when that object is replaced or removed.
pub(crate) type IndexFunc<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The name of the built-in index by namespace, as client-go's `NamespaceIndex`.
pub const NAMESPACE_INDEX: &str = "namespace";

/// Indexes an object by its namespace, as client-go's `MetaNamespaceIndexFunc`.
///
/// Always yields exactly one value. As in client-go, a cluster-scoped object (no
/// namespace) yields the empty string, so `by_index(NAMESPACE_INDEX, "")` lists
/// cluster-scoped objects.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
/// use reflector::store::namespace_index_func;
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("prod".into());
/// assert_eq!(namespace_index_func(&cm), ["prod"]);
/// assert_eq!(namespace_index_func(&Namespace::default()), [""]);
/// ```
#[must_use]
pub fn namespace_index_func<K: kube::Resource>(obj: &K) -> Vec<String> {
    vec![obj.meta().namespace.clone().unwrap_or_default()]
}

/// Index name → index function, as client-go's `Indexers`.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use reflector::store::{namespace_index_func, Indexers, NAMESPACE_INDEX};
/// let indexers = Indexers::new()
///     .with(NAMESPACE_INDEX, namespace_index_func::<Pod>)
///     .with("node", |p: &Pod| {
///         p.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
///     });
/// assert_eq!(indexers.len(), 2);
/// assert!(indexers.contains("node"));
/// ```
pub struct Indexers<K> {
    /// The functions by index name.
    funcs: HashMap<String, IndexEntry<K>>,
}

/// One registered index: its function, and for the built-in namespace index the
/// borrowing form the store uses instead.
pub(crate) struct IndexEntry<K> {
    /// The function as registered; what `ThreadSafeStore::index` calls.
    pub(crate) func: IndexFunc<K>,
    /// Set only by [`Indexers::with_namespace_index`]: the object's namespace (`""`
    /// when cluster-scoped), borrowed from it. The store indexes with it without
    /// allocating, may take the namespace from the key instead (see
    /// `ThreadSafeStore::with_key_namespaces`), and it cannot panic.
    pub(crate) namespace_of: Option<fn(&K) -> &str>,
}

impl<K> Clone for IndexEntry<K> {
    fn clone(&self) -> Self {
        IndexEntry {
            func: Arc::clone(&self.func),
            namespace_of: self.namespace_of,
        }
    }
}

/// An object's namespace, `""` when cluster-scoped: the namespace index's value.
fn object_namespace<K: kube::Resource>(obj: &K) -> &str {
    obj.meta().namespace.as_deref().unwrap_or_default()
}

impl<K> Indexers<K> {
    /// No indices.
    #[must_use]
    pub fn new() -> Self {
        Indexers {
            funcs: HashMap::new(),
        }
    }

    /// Adds (or replaces) the index `name` computed by `f`.
    #[must_use]
    pub fn with<F>(mut self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
    {
        self.insert(name, Arc::new(f));
        self
    }

    /// Adds the built-in index by namespace, [`NAMESPACE_INDEX`], as
    /// `with(NAMESPACE_INDEX, namespace_index_func::<K>)` does, but indexed without
    /// allocating: the store reads each object's namespace in place instead of
    /// collecting it into a `Vec<String>`. The informer registers it this way.
    ///
    /// The index is built on its first read (`by_index`, `index_keys`, `index`,
    /// `index_values` with [`NAMESPACE_INDEX`]), in one pass over the objects under
    /// the write lock, and kept up to date from then on: a cache never read by
    /// namespace never pays for keeping the index.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::store::{Indexers, Writer, NAMESPACE_INDEX};
    /// let mut writer = Writer::new(Indexers::<ConfigMap>::new().with_namespace_index());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("prod".into());
    /// cm.metadata.name = Some("web".into());
    /// writer.add(Arc::new(cm)).unwrap();
    /// assert_eq!(writer.reader().by_index(NAMESPACE_INDEX, "prod").unwrap().len(), 1);
    /// ```
    #[must_use]
    pub fn with_namespace_index(mut self) -> Self
    where
        K: kube::Resource + 'static,
    {
        self.funcs.insert(
            NAMESPACE_INDEX.to_owned(),
            IndexEntry {
                func: Arc::new(namespace_index_func::<K>),
                namespace_of: Some(object_namespace::<K>),
            },
        );
        self
    }

    /// Adds the index `name` computed by `f`; returns the function it replaced.
    pub(crate) fn insert(
        &mut self,
        name: impl Into<String>,
        f: IndexFunc<K>,
    ) -> Option<IndexFunc<K>> {
        self.funcs
            .insert(
                name.into(),
                IndexEntry {
                    func: f,
                    namespace_of: None,
                },
            )
            .map(|old| old.func)
    }

    /// The entry of index `name`.
    pub(crate) fn entry(&self, name: &str) -> Option<&IndexEntry<K>> {
        self.funcs.get(name)
    }

    /// Adds `entry` as index `name`, keeping its borrowing form.
    pub(crate) fn insert_entry(&mut self, name: impl Into<String>, entry: IndexEntry<K>) {
        self.funcs.insert(name.into(), entry);
    }

    /// The (name, entry) pairs, in no particular order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, &IndexEntry<K>)> {
        self.funcs.iter().map(|(n, e)| (n.as_str(), e))
    }

    /// Whether an index is called `name`.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    /// The index names, in no particular order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.funcs.keys().map(String::as_str)
    }

    /// How many indices.
    #[must_use]
    pub fn len(&self) -> usize {
        self.funcs.len()
    }

    /// Whether there are no indices.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }
}

impl<K> Default for Indexers<K> {
    fn default() -> Self {
        Indexers::new()
    }
}

impl<K> Clone for Indexers<K> {
    fn clone(&self) -> Self {
        Indexers {
            funcs: self.funcs.clone(),
        }
    }
}

impl<K> fmt::Debug for Indexers<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.names().collect();
        names.sort_unstable();
        f.debug_tuple("Indexers").field(&names).finish()
    }
}

/// A read-only handle on a cache: objects by key plus named secondary indices, as
/// client-go's `cache.Indexer` (its read half). The cache's one
/// [`Writer`](super::Writer) hands these out ([`Writer::reader`](super::Writer::reader));
/// an informer's is [`SharedIndexInformer::indexer`](crate::informer::SharedIndexInformer::indexer).
///
/// A cheap-to-clone handle: clones share one cache. Items and indices sit behind
/// one lock, so every read is consistent, and a relist swaps the whole content at
/// once. Reads hand out `Arc<K>` clones; treat them as immutable.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::store::{namespace_index_func, Indexers, Writer, NAMESPACE_INDEX};
///
/// let mut writer = Writer::new(
///     Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<ConfigMap>),
/// );
/// let cache = writer.reader();
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("prod".into());
/// cm.metadata.name = Some("web".into());
/// writer.add(Arc::new(cm)).unwrap();
///
/// let in_prod = cache.by_index(NAMESPACE_INDEX, "prod").unwrap();
/// assert_eq!(in_prod[0].metadata.name.as_deref(), Some("web"));
/// assert_eq!(cache.index_values(NAMESPACE_INDEX), ["prod"]);
/// assert!(cache.by_index("no-such-index", "prod").is_err());
/// ```
pub struct Indexer<K> {
    /// Shared with every clone.
    inner: Arc<Inner<K>>,
}

/// What every [`Indexer`] clone shares.
struct Inner<K> {
    /// Computes each object's key.
    key_fn: KeyFunc<K>,
    /// Items and indices.
    store: ThreadSafeStore<K>,
    /// The resource version the items stand at (shared with the controllers that
    /// wait on it); moved only by the cache's `Writer`.
    version: Arc<StoreVersion>,
}

impl<K> Clone for Indexer<K> {
    fn clone(&self) -> Self {
        Indexer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> Indexer<K> {
    /// The items and indices, for the cache's `Writer`.
    pub(super) fn table(&self) -> &ThreadSafeStore<K> {
        &self.inner.store
    }

    /// The resource version and its waits.
    pub(crate) fn version(&self) -> &Arc<StoreVersion> {
        &self.inner.version
    }
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Indexer").field(&self.inner.store).finish()
    }
}

impl<K: Object> Indexer<K> {
    /// An empty cache keyed by `key_fn`, or by [`meta_namespace_key`] (`ns/name`),
    /// whose keys the namespace index may then read.
    pub(super) fn empty(key_fn: Option<KeyFunc<K>>, indexers: Indexers<K>) -> Self {
        let keys_carry_namespace = key_fn.is_none();
        Indexer {
            inner: Arc::new(Inner {
                key_fn: key_fn.unwrap_or_else(|| Arc::new(meta_namespace_key::<K>)),
                store: ThreadSafeStore::with_key_namespaces(indexers, keys_carry_namespace),
                version: Arc::default(),
            }),
        }
    }

    /// The key of `obj`.
    pub(crate) fn key_of(&self, obj: &K) -> Result<ObjectKey, StoreError> {
        Ok((self.inner.key_fn)(obj)?)
    }

    /// The resource version the cache has reached, as client-go's
    /// `LastStoreSyncResourceVersion`: every list, watch event and bookmark its
    /// reflector handed over through it is applied (so bookmarks advance it too).
    /// `None` before the first list. Only the cache's [`Writer`](super::Writer) moves
    /// it: an informer's after each applied batch, a reflector writing straight into
    /// a cache with each list and run of events.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::store::{Indexers, Writer};
    /// let mut writer = Writer::<ConfigMap>::new(Indexers::new());
    /// let cache = writer.reader();
    /// assert_eq!(cache.resource_version(), None);
    /// writer.replace(Vec::new(), "42").unwrap();
    /// assert_eq!(cache.resource_version().as_deref(), Some("42"));
    /// ```
    #[doc(alias = "LastStoreSyncResourceVersion")]
    #[must_use]
    pub fn resource_version(&self) -> Option<String> {
        self.inner.version.get()
    }

    /// The object cached under `obj`'s key, as client-go's `Get`.
    ///
    /// # Errors
    /// [`StoreError::Key`] if the key function fails.
    #[doc(alias = "Get")]
    pub fn get_object(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        Ok(self.get(&self.key_of(obj)?))
    }

    /// The object under `key`.
    #[must_use]
    #[doc(alias = "GetByKey")]
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.inner.store.get(key)
    }

    /// Every object, in no particular order.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.store.list()
    }

    /// Every key, in no particular order.
    #[must_use]
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.store.list_keys()
    }

    /// How many objects are cached.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.store.len()
    }

    /// Whether the cache is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.inner.store.is_empty()
    }

    /// The cached objects sharing at least one of `obj`'s values for index
    /// `name` (each once, in no particular order), as client-go's `Index`.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        self.inner.store.index(name, obj)
    }

    /// The keys of the objects whose values for index `name` include `value`,
    /// sorted, as client-go's `IndexKeys`.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        self.inner.store.index_keys(name, value)
    }

    /// The objects whose values for index `name` include `value`, in no
    /// particular order, as client-go's `ByIndex`. Costs O(result).
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.inner.store.by_index(name, value)
    }

    /// Every value of index `name` with at least one object, in no particular
    /// order; empty for an unknown index, as client-go's `ListIndexFuncValues`.
    #[must_use]
    #[doc(alias = "ListIndexFuncValues")]
    pub fn index_values(&self, name: &str) -> Vec<String> {
        self.inner.store.index_values(name)
    }

    /// The registered index functions.
    #[must_use]
    pub fn indexers(&self) -> Indexers<K> {
        self.inner.store.indexers()
    }

    /// Registers more indices, indexing every object already cached, as
    /// client-go's `AddIndexers` (an informer may add indices after it started):
    /// what its `Writer` and its informer offer.
    ///
    /// # Errors
    /// [`StoreError::IndexConflict`] if a name is already registered; nothing
    /// changes then.
    pub(crate) fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError> {
        self.inner.store.add_indexers(indexers)
    }
}

impl<K: Object> KeyListerGetter<K> for Indexer<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        Indexer::list_keys(self)
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        Indexer::get(self, key)
    }

    fn is_empty(&self) -> bool {
        Indexer::is_empty(self)
    }
}

#[cfg(test)]
mod tests;
