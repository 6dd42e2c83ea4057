//! Listers: typed, read-only views of an informer's cache.
//!
//! A [`Lister`] reads the [`Indexer`] an informer fills: every read returns shared
//! [`Arc<K>`]s, never copies. Reads are eventually consistent with the API server:
//! they see what the informer has processed so far.

use std::sync::Arc;

use crate::object::{Object, ObjectKey, ObjectRef};
use crate::store::{Indexer, NAMESPACE_INDEX, StoreError};

/// A read-only view of an informer's cache, as client-go's generated listers.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::lister::Lister;
/// use reflector::store::{Indexers, Writer, NAMESPACE_INDEX, namespace_index_func};
///
/// let mut writer = Writer::new(Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<ConfigMap>));
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// cm.metadata.namespace = Some("prod".into());
/// writer.add(Arc::new(cm)).unwrap();
///
/// let lister = Lister::new(writer.reader());
/// assert!(lister.get(Some("prod"), "a").is_some());
/// assert_eq!(lister.list_namespace("prod").len(), 1);
/// assert!(lister.list_namespace("dev").is_empty());
/// ```
#[derive(Clone)]
pub struct Lister<K> {
    indexer: Indexer<K>,
}

impl<K> std::fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister").finish_non_exhaustive()
    }
}

impl<K: Object> Lister<K> {
    /// A lister over `indexer`.
    #[must_use]
    pub fn new(indexer: Indexer<K>) -> Self {
        Lister { indexer }
    }

    /// Every cached object.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        self.indexer.list()
    }

    /// The object `namespace/name` (or `name` when cluster-scoped).
    #[must_use]
    pub fn get(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        self.indexer.get(&ObjectKey::new(namespace, name))
    }

    /// The objects whose index `index` has value `value`.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no such index is registered.
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.indexer.by_index(index, value)
    }

    /// The typed keys of the objects whose index `index` has value `value`, sorted.
    /// (The [`Indexer`] underneath answers the untyped [`ObjectKey`]s it holds.)
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no such index is registered.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::lister::Lister;
    /// use reflector::object::ObjectRef;
    /// use reflector::store::{Indexers, Writer, NAMESPACE_INDEX};
    ///
    /// let mut writer = Writer::new(Indexers::<ConfigMap>::new().with_namespace_index());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.namespace = Some("prod".into());
    /// cm.metadata.name = Some("web".into());
    /// writer.add(Arc::new(cm)).unwrap();
    ///
    /// let lister = Lister::new(writer.reader());
    /// let keys: Vec<ObjectRef<ConfigMap>> = lister.index_keys(NAMESPACE_INDEX, "prod").unwrap();
    /// assert_eq!(keys, [ObjectRef::new(Some("prod"), "web")]);
    /// assert!(lister.index_keys("by_owner", "alice").is_err());
    /// ```
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectRef<K>>, StoreError> {
        typed_keys(&self.indexer, index, value)
    }

    /// Every cached object in `namespace`: through the namespace index when the
    /// indexer has one, else by a scan, as client-go's `ListAllByNamespace` (and its
    /// listers' `Pods(ns).List`). Get one object of a namespace with
    /// [`get`](Lister::get).
    #[must_use]
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        match self.indexer.by_index(NAMESPACE_INDEX, namespace) {
            Ok(items) => items,
            Err(_) => self
                .indexer
                .list()
                .into_iter()
                .filter(|o| o.meta().namespace.as_deref() == Some(namespace))
                .collect(),
        }
    }

    /// The resource version the cache has reached, as client-go's
    /// `LastStoreSyncResourceVersion` (see [`Indexer::resource_version`]): every
    /// event and bookmark of the informer's watch through it is in the cache.
    /// `None` before the first list.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::lister::Lister;
    /// use reflector::store::{Indexers, Writer};
    /// let mut writer = Writer::<ConfigMap>::new(Indexers::new());
    /// writer.replace(Vec::new(), "7").unwrap();
    /// assert_eq!(Lister::new(writer.reader()).resource_version().as_deref(), Some("7"));
    /// ```
    #[doc(alias = "LastStoreSyncResourceVersion")]
    #[must_use]
    pub fn resource_version(&self) -> Option<String> {
        self.indexer.resource_version()
    }

    /// The indexer underneath.
    #[must_use]
    pub fn indexer(&self) -> &Indexer<K> {
        &self.indexer
    }
}

/// The keys of index `index`'s objects with `value`, typed: the user-layer form of
/// [`Indexer::index_keys`] (free: an `ObjectRef` is its key and a marker).
pub(crate) fn typed_keys<K: Object>(
    cache: &Indexer<K>,
    index: &str,
    value: &str,
) -> Result<Vec<ObjectRef<K>>, StoreError> {
    let keys = cache.index_keys(index, value)?;
    Ok(keys.into_iter().map(ObjectRef::from_key).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Indexers, Writer};
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(ns: &str, name: &str) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.name = Some(name.into());
        c.metadata.namespace = Some(ns.into());
        Arc::new(c)
    }

    #[test]
    fn namespaced_list_scans_when_there_is_no_namespace_index() {
        let mut writer = Writer::new(Indexers::new());
        for (ns, n) in [("a", "1"), ("a", "2"), ("b", "3")] {
            writer.add(cm(ns, n)).unwrap();
        }
        let lister = Lister::new(writer.reader());
        assert_eq!(lister.list_namespace("a").len(), 2);
        assert_eq!(lister.list_namespace("b").len(), 1);
        assert!(lister.list_namespace("c").is_empty());
        assert!(matches!(
            lister.by_index("missing", "x"),
            Err(StoreError::UnknownIndex(_))
        ));
    }

    /// `index_keys` answers the typed keys (`ObjectRef<ConfigMap>`), sorted as the
    /// indexer's keys are; an unknown index is an error naming it.
    #[test]
    fn index_keys_are_typed_and_sorted() {
        let mut writer = Writer::new(Indexers::<ConfigMap>::new().with_namespace_index());
        for (ns, n) in [("a", "2"), ("b", "3"), ("a", "1")] {
            writer.add(cm(ns, n)).unwrap();
        }
        let lister = Lister::new(writer.reader());
        let keys: Vec<ObjectRef<ConfigMap>> = lister.index_keys(NAMESPACE_INDEX, "a").unwrap();
        assert_eq!(
            keys,
            [
                ObjectRef::new(Some("a"), "1"),
                ObjectRef::new(Some("a"), "2")
            ]
        );
        assert_eq!(
            lister.index_keys("by_owner", "x").unwrap_err(),
            StoreError::UnknownIndex("by_owner".into())
        );
    }
}
