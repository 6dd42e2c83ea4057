//! The store a watch-list stream fills before the reflector's own store is replaced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::object::{Object, ObjectKey, meta_namespace_key};
use crate::store::{Store, StoreError, StoreSink};

/// A plain map from key to object: it collects the initial events of a watch-list
/// so the real store sees them as one `replace`, as client-go's temporary store.
/// An object the real store already caches unchanged is kept as the cached copy, so
/// the decoded duplicate is freed as soon as it arrives.
pub(crate) struct TemporaryStore<K: Object> {
    /// Guarded by its own mutex; never held across an await.
    items: Mutex<HashMap<ObjectKey, Arc<K>>>,
    /// The reflector's store, asked for cached copies of unchanged objects.
    cache: Arc<dyn StoreSink<K>>,
}

impl<K: Object> TemporaryStore<K> {
    pub(crate) fn new(cache: Arc<dyn StoreSink<K>>) -> Self {
        TemporaryStore {
            items: Mutex::new(HashMap::new()),
            cache,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, Arc<K>>> {
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes every collected object out.
    pub(crate) fn drain(&self) -> Vec<Arc<K>> {
        self.lock().drain().map(|(_, v)| v).collect()
    }
}

impl<K: Object> Store<K> for TemporaryStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = meta_namespace_key(obj.as_ref())?;
        let obj = self.cache.cached_unchanged(&obj).unwrap_or(obj);
        self.lock().insert(key, obj);
        Ok(())
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add(obj)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = meta_namespace_key(obj.as_ref())?;
        self.lock().remove(&key);
        Ok(())
    }

    fn list(&self) -> Vec<Arc<K>> {
        self.lock().values().cloned().collect()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.lock().keys().cloned().collect()
    }

    fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = meta_namespace_key(obj)?;
        Ok(self.lock().get(&key).cloned())
    }

    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.lock().get(key).cloned()
    }

    fn replace(&self, items: Vec<Arc<K>>, _resource_version: &str) -> Result<(), StoreError> {
        let mut map = HashMap::with_capacity(items.len());
        for obj in items {
            map.insert(meta_namespace_key(obj.as_ref())?, obj);
        }
        *self.lock() = map;
        Ok(())
    }

    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

impl<K: Object> StoreSink<K> for TemporaryStore<K> {}
