//! How a DeltaFifo is configured: keys, known objects, `Replaced` deltas and the
//! transform, set with builder methods before the FIFO is shared.

use std::sync::Arc;

use super::DeltaFifo;
use crate::fifo::TransformFunc;
use crate::object::{KeyError, KeyFunc, Object, ObjectKey};
use crate::store::{Indexer, KeyListerGetter};

impl<K> DeltaFifo<K> {
    /// Keys objects with `key_func`. Default: [`meta_namespace_key`] (`ns/name`), as
    /// client-go's `MetaNamespaceKeyFunc`.
    ///
    /// [`meta_namespace_key`]: crate::object::meta_namespace_key
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::DeltaFifo;
    /// use reflector::object::ObjectKey;
    /// use reflector::store::Store;
    /// // Key by name only, ignoring the namespace.
    /// let fifo = DeltaFifo::<ConfigMap>::new()
    ///     .key_func(|c: &ConfigMap| Ok(ObjectKey::new(None, c.metadata.name.as_deref().unwrap_or("?"))));
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("a".into());
    /// cm.metadata.name = Some("x".into());
    /// fifo.add(Arc::new(cm)).unwrap();
    /// assert!(fifo.deltas_by_key(&ObjectKey::new(None, "x")).is_some());
    /// ```
    #[must_use]
    pub fn key_func(
        mut self,
        key_func: impl Fn(&K) -> Result<ObjectKey, KeyError> + Send + Sync + 'static,
    ) -> Self {
        self.options.key_func = Arc::new(key_func) as KeyFunc<K>;
        self
    }

    /// Consults `known` (the informer's cache) for the keys the consumer already
    /// holds: `delete` deletes an object known there even if not queued, `replace`
    /// tombstones known keys missing from the list, and `resync` re-delivers known
    /// objects. Default: none, as client-go; then deletions are detected only among
    /// queued keys and `resync` does nothing.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::{DeltaFifo, DeltaType};
    /// use reflector::store::{Indexer, Indexers, Store};
    /// let cache = Indexer::<ConfigMap>::new(Indexers::new());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("gone".into());
    /// cache.add(Arc::new(cm)).unwrap();
    /// let fifo = DeltaFifo::new().cache(cache);
    /// fifo.replace(vec![], "2").unwrap(); // "gone" is missing from the relist
    /// let deltas = fifo.deltas_by_key(&"gone".parse().unwrap()).unwrap();
    /// assert_eq!(deltas[0].delta_type, DeltaType::Deleted);
    /// assert!(deltas[0].object.is_tombstone());
    /// ```
    #[must_use]
    #[doc(alias = "KnownObjects")]
    pub fn cache(self, known: Indexer<K>) -> Self
    where
        K: Object,
    {
        self.cache_view(Arc::new(known))
    }

    /// As [`known_objects`](DeltaFifo::cache), for any view of a cache.
    #[must_use]
    pub(crate) fn cache_view(mut self, known: Arc<dyn KeyListerGetter<K>>) -> Self {
        self.options.known_objects = Some(known);
        self
    }

    /// Whether `replace` emits [`DeltaType::Replaced`] rather than
    /// [`DeltaType::Sync`]. Default: `false`, as client-go (for backward
    /// compatibility); informers set it.
    ///
    /// [`DeltaType::Replaced`]: crate::fifo::DeltaType::Replaced
    /// [`DeltaType::Sync`]: crate::fifo::DeltaType::Sync
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::{DeltaFifo, DeltaType};
    /// use reflector::store::Store;
    /// let fifo = DeltaFifo::<ConfigMap>::new().emit_replaced(true);
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

    /// Applies `transform` to each object as it enters the FIFO, as client-go's
    /// `TransformFunc`: typically strips fields the consumer never reads (such as
    /// `managedFields`) to save memory. Default: none, as client-go.
    ///
    /// It runs exactly once per object entering through `add`, `update`, `delete`,
    /// `replace` or a streamed list page, before anyone else sees the object, and
    /// never on tombstones nor on the `Sync` deltas of `resync` (those objects come
    /// from the known objects, which were transformed already). Keep it fast: it runs
    /// under the FIFO's lock.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::DeltaFifo;
    /// use reflector::store::Store;
    /// let fifo = DeltaFifo::<ConfigMap>::new().transform(|obj: Arc<ConfigMap>| {
    ///     let mut obj = Arc::unwrap_or_clone(obj);
    ///     obj.data = None;
    ///     Arc::new(obj)
    /// });
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// cm.data = Some([("k".to_owned(), "v".to_owned())].into());
    /// fifo.add(Arc::new(cm)).unwrap();
    /// let deltas = fifo.deltas_by_key(&"a".parse().unwrap()).unwrap();
    /// assert!(deltas[0].object.object().data.is_none());
    /// ```
    #[must_use]
    pub fn transform(self, transform: impl Fn(Arc<K>) -> Arc<K> + Send + Sync + 'static) -> Self {
        self.shared_transform(Arc::new(transform))
    }

    /// As [`transform`](DeltaFifo::transform), sharing a transform the caller keeps.
    #[must_use]
    pub(crate) fn shared_transform(mut self, transform: TransformFunc<K>) -> Self {
        self.options.transform = Some(transform);
        self
    }
}
