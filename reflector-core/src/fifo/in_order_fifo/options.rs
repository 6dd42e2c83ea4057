//! How an in-order FIFO is configured: keys, the consumer's cache, atomic events and
//! the transform, set with builder methods before the FIFO is shared.

use std::sync::Arc;

use super::InOrderFifo;
use crate::fifo::TransformFunc;
use crate::object::{KeyError, KeyFunc, Object, ObjectKey};
use crate::store::{Indexer, KeyListerGetter};

impl<K> InOrderFifo<K> {
    /// Keys objects with `key_func`. Default: [`meta_namespace_key`] (`ns/name`), as
    /// client-go's `MetaNamespaceKeyFunc`.
    ///
    /// [`meta_namespace_key`]: crate::object::meta_namespace_key
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::InOrderFifo;
    /// use reflector::object::ObjectKey;
    /// use reflector::store::Store;
    /// // Key by name only, ignoring the namespace.
    /// let fifo = InOrderFifo::<ConfigMap>::new()
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
        self.options.key_func = Arc::new(key_func) as KeyFunc<K>;
        self
    }

    /// Consults `known` (the consumer's cache) for the objects it already holds. Only
    /// without [atomic events](InOrderFifo::atomic), where `replace` tombstones known
    /// keys missing from the list and `resync` re-delivers known objects; with them
    /// (the default) the consumer compares a whole list against its cache itself.
    /// Also lets the reflector hand an unchanged cached object to `replace` instead
    /// of a fresh copy. Default: none.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::{DeltaType, Entry, InOrderFifo};
    /// use reflector::store::{Indexer, Indexers, Store};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cache = Indexer::<ConfigMap>::new(Indexers::new());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("gone".into());
    /// cache.add(Arc::new(cm)).unwrap();
    /// let fifo = InOrderFifo::new().cache(cache).atomic(false);
    /// fifo.replace(vec![], "2").unwrap(); // "gone" is missing from the relist
    /// let entry = fifo.pop(|entry, _| entry).await.unwrap();
    /// assert!(matches!(entry, Entry::Delta(d) if d.delta_type == DeltaType::Deleted && d.object.is_tombstone()));
    /// # }
    /// ```
    #[must_use]
    #[doc(alias = "KnownObjects")]
    pub fn cache(self, known: Indexer<K>) -> Self
    where
        K: Object,
    {
        self.cache_view(Arc::new(known))
    }

    /// As [`cache`](InOrderFifo::cache), for any view of a cache.
    #[must_use]
    pub(crate) fn cache_view(mut self, known: Arc<dyn KeyListerGetter<K>>) -> Self {
        self.options.known_objects = Some(known);
        self
    }

    /// Whether a relist, a resync and a watch bookmark each become one entry
    /// ([`Entry::ReplacedAll`](super::Entry::ReplacedAll),
    /// [`Entry::SyncAll`](super::Entry::SyncAll),
    /// [`Entry::Bookmark`](super::Entry::Bookmark)) that the consumer applies at
    /// once, as client-go's `AtomicFIFO` (and `UnlockWhileProcessingFIFO`, which
    /// follows from it: no write consults the consumer's cache, so none waits for a
    /// `pop` callback). Default: `true`, as client-go 1.36's informers. With
    /// `false`, a relist and a resync become per-object deltas computed against the
    /// [`cache`](InOrderFifo::cache), as client-go's `RealFIFO` without the feature.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::{Entry, InOrderFifo};
    /// use reflector::store::Store;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let fifo = InOrderFifo::<ConfigMap>::new();
    /// fifo.resync().unwrap();
    /// assert_eq!(fifo.pop(|entry, _| entry).await.unwrap(), Entry::SyncAll);
    /// # }
    /// ```
    #[must_use]
    pub fn atomic(mut self, atomic: bool) -> Self {
        self.atomic = atomic;
        self
    }

    /// Applies `transform` to each object as it enters the FIFO, as client-go's
    /// `TransformFunc` (typically to strip fields the consumer never reads). It runs
    /// once per object entering through `add`, `update`, `delete`, `replace` or a
    /// streamed list page, before the FIFO's lock is taken, and never on tombstones,
    /// on resynced objects nor on an unchanged cached object the reflector handed back
    /// (those were transformed when they came in). Default: none.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::InOrderFifo;
    /// use reflector::store::Store;
    /// let fifo = InOrderFifo::<ConfigMap>::new().transform(|obj: Arc<ConfigMap>| {
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

    /// As [`transform`](InOrderFifo::transform), sharing a transform the caller keeps.
    #[must_use]
    pub(crate) fn shared_transform(mut self, transform: TransformFunc<K>) -> Self {
        self.options.transform = Some(transform);
        self
    }
}
