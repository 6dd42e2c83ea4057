//! `IndexQuery`: the seam the generated `<Kind>Indexes` traits are built on. A query
//! answers the matching objects (or their typed keys), and a query of an index the
//! cache does not have is [`StoreError::UnknownIndex`] naming it, never an empty
//! answer that looks like "no match".

use std::sync::Arc;

use crate::informer::SharedIndexInformer;
use crate::lister::{Lister, typed_keys};
use crate::object::{Object, ObjectRef};
use crate::store::{Indexer, StoreError};

/// Something that answers index queries about `K`s: a [`Lister`], an [`Indexer`]
/// or a [`SharedIndexInformer`]. The seam of the `<Kind>Indexes` traits
/// `#[derive(Reflect)]` generates, implemented for every `IndexQuery<Kind>`; users
/// call the generated typed methods (or [`Lister::by_index`]).
///
/// The trait itself asks nothing of `K`, so a kind that is not a resource gets the
/// derive's one error, not one more per generated method.
pub trait IndexQuery<K> {
    /// The objects whose index `index` has value `value`, in no particular order.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] naming `index` when the cache has no such index.
    fn query_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError>;

    /// The typed keys of those objects, sorted.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] naming `index` when the cache has no such index.
    fn query_index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectRef<K>>, StoreError>;
}

impl<K: Object> IndexQuery<K> for Indexer<K> {
    fn query_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.by_index(index, value)
    }

    fn query_index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectRef<K>>, StoreError> {
        typed_keys(self, index, value)
    }
}

impl<K: Object> IndexQuery<K> for Lister<K> {
    fn query_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.by_index(index, value)
    }

    fn query_index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectRef<K>>, StoreError> {
        self.index_keys(index, value)
    }
}

impl<K: Object> IndexQuery<K> for SharedIndexInformer<K> {
    fn query_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.indexer().query_index(index, value)
    }

    fn query_index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectRef<K>>, StoreError> {
        self.indexer().query_index_keys(index, value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::IndexQuery;
    use crate::lister::Lister;
    use crate::object::ObjectRef;
    use crate::store::{Indexer, Indexers, StoreError, Writer};

    fn by_name_cache() -> Indexer<ConfigMap> {
        let mut writer = Writer::new(Indexers::new().with("by_name", |c: &ConfigMap| {
            c.metadata.name.clone().into_iter().collect()
        }));
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some("a".into());
        writer.add(Arc::new(cm)).unwrap();
        writer.reader()
    }

    /// A registered index answers its objects and their typed keys; an unregistered
    /// one is `UnknownIndex` naming it, through every queryable handle.
    #[test]
    fn a_query_on_a_missing_index_is_an_unknown_index_error() {
        let cache = by_name_cache();
        let lister = Lister::new(cache.clone());
        for q in [&cache as &dyn IndexQuery<ConfigMap>, &lister] {
            assert_eq!(q.query_index("by_name", "a").unwrap().len(), 1);
            assert_eq!(
                q.query_index_keys("by_name", "a").unwrap(),
                [ObjectRef::<ConfigMap>::new(Some("ns"), "a")]
            );
            let unknown = StoreError::UnknownIndex("no_such_index".into());
            assert_eq!(q.query_index("no_such_index", "a").unwrap_err(), unknown);
            assert_eq!(
                q.query_index_keys("no_such_index", "a").unwrap_err(),
                unknown
            );
        }
    }
}
