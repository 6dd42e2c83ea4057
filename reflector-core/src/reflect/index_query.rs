//! `IndexQuery`: the untyped, never-failing index queries the generated
//! `<Kind>Indexes` traits are built on.

use std::sync::Arc;

use crate::informer::SharedIndexInformer;
use crate::lister::Lister;
use crate::object::{Object, ObjectKey};
use crate::store::{Indexer, StoreError};

/// Something that answers index queries about `K`s: a [`Lister`], an [`Indexer`]
/// or a [`SharedIndexInformer`]. The seam of the `<Kind>Indexes` traits
/// `#[derive(Reflect)]` generates, implemented for every `IndexQuery<Kind>`; users
/// call the generated typed methods (or [`Lister::by_index`]).
///
/// Queries never fail: an index that is not registered answers nothing (and logs at
/// `debug`), which is what an index with no matching object answers too.
pub trait IndexQuery<K> {
    /// The objects whose index `index` has value `value`; empty when none has, or
    /// when the index is not registered.
    fn query_index(&self, index: &str, value: &str) -> Vec<Arc<K>>;

    /// The keys of those objects, sorted.
    fn query_index_keys(&self, index: &str, value: &str) -> Vec<ObjectKey>;
}

fn or_empty<T>(index: &str, r: Result<Vec<T>, StoreError>) -> Vec<T> {
    r.unwrap_or_else(|e| {
        tracing::debug!(index, error = %e, "index query on a missing index answers nothing");
        Vec::new()
    })
}

impl<K: Object> IndexQuery<K> for Indexer<K> {
    fn query_index(&self, index: &str, value: &str) -> Vec<Arc<K>> {
        or_empty(index, self.by_index(index, value))
    }

    fn query_index_keys(&self, index: &str, value: &str) -> Vec<ObjectKey> {
        or_empty(index, self.index_keys(index, value))
    }
}

impl<K: Object> IndexQuery<K> for Lister<K> {
    fn query_index(&self, index: &str, value: &str) -> Vec<Arc<K>> {
        self.indexer().query_index(index, value)
    }

    fn query_index_keys(&self, index: &str, value: &str) -> Vec<ObjectKey> {
        self.indexer().query_index_keys(index, value)
    }
}

impl<K: Object> IndexQuery<K> for SharedIndexInformer<K> {
    fn query_index(&self, index: &str, value: &str) -> Vec<Arc<K>> {
        self.indexer().query_index(index, value)
    }

    fn query_index_keys(&self, index: &str, value: &str) -> Vec<ObjectKey> {
        self.indexer().query_index_keys(index, value)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::IndexQuery;
    use crate::store::{Indexer, Indexers, Store};

    /// A registered index answers its objects; an unregistered one answers nothing
    /// instead of an error.
    #[test]
    fn a_query_on_a_missing_index_answers_nothing() {
        let cache = Indexer::new(Indexers::new().with("by_name", |c: &ConfigMap| {
            c.metadata.name.clone().into_iter().collect()
        }));
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("a".into());
        cache.add(Arc::new(cm)).unwrap();
        assert_eq!(cache.query_index("by_name", "a").len(), 1);
        assert_eq!(cache.query_index_keys("by_name", "a").len(), 1);
        assert!(cache.query_index("no_such_index", "a").is_empty());
        assert!(cache.query_index_keys("no_such_index", "a").is_empty());
    }
}
