//! The store a watch-list stream fills before the reflector's own store is replaced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::object::{Object, ObjectKey, meta_namespace_key};
use crate::store::{Store, StoreError, StoreSink, WatchAction, apply_each};

/// A plain map from key to object: it collects the initial events of a watch-list
/// so the real store sees them as one `replace`, as client-go's temporary store.
/// Each object is prepared by the real store as it arrives
/// ([`StoreSink::prepare_listed`]: transformed, and kept as the cached copy if it is
/// exactly the cached object), so a decoded duplicate is freed at once.
///
/// Into an empty informer (nothing queued, nothing cached, never populated), the
/// initial events are not collected: they go on to the real store as the pages of a
/// streamed first list ([`StoreSink::stream_list_page`]), so the informer works on
/// them while the rest arrive, and the reflector ends the list with
/// [`StoreSink::finish_list_stream`] at the initial-events-end bookmark
/// ([`TemporaryStore::finish`]). As for a streamed first list, this changes only *when*
/// objects arrive: such a list has nothing to delete and nothing to compare against.
pub(crate) struct TemporaryStore<K: Object> {
    /// Guarded by its own mutex; never held across an await.
    state: Mutex<Collected<K>>,
    /// The reflector's store, which prepares each object, and is handed the initial
    /// events directly when it takes them as a streamed list.
    cache: Arc<dyn StoreSink<K>>,
}

/// What a [`TemporaryStore`] has collected, and whether it streams instead.
struct Collected<K> {
    items: HashMap<ObjectKey, Arc<K>>,
    /// Whether the real store takes the initial events as a streamed list: `None`
    /// until the first run of events asks it.
    streaming: Option<bool>,
}

impl<K: Object> TemporaryStore<K> {
    pub(crate) fn new(cache: Arc<dyn StoreSink<K>>) -> Self {
        TemporaryStore {
            state: Mutex::new(Collected {
                items: HashMap::new(),
                streaming: None,
            }),
            cache,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Collected<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands the initial state to the real store at the initial-events-end bookmark:
    /// ends the streamed list if the events went on as one, else `replace`s the store
    /// with every collected object, as client-go does.
    ///
    /// # Errors
    /// As [`Store::replace`].
    pub(crate) fn finish(&self, resource_version: &str) -> Result<(), StoreError> {
        let (items, streamed) = {
            let mut state = self.lock();
            let items: Vec<Arc<K>> = state.items.drain().map(|(_, v)| v).collect();
            (items, state.streaming == Some(true))
        };
        if streamed {
            self.cache.finish_list_stream(items, resource_version)
        } else {
            self.cache.replace_listed(items, resource_version)
        }
    }

    /// Whether the initial events go on to the real store as a streamed list: asked
    /// once, with the first run (an empty first page only opens the list).
    fn streams(&self) -> bool {
        *self
            .lock()
            .streaming
            .get_or_insert_with(|| self.cache.stream_list_page(&[], true).unwrap_or(false))
    }

    /// Collects an object the real store prepared already.
    fn collect(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = meta_namespace_key(obj.as_ref())?;
        self.lock().items.insert(key, obj);
        Ok(())
    }
}

impl<K: Object> Store<K> for TemporaryStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.collect(self.cache.prepare_listed(obj, true))
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add(obj)
    }

    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = meta_namespace_key(obj.as_ref())?;
        self.lock().items.remove(&key);
        Ok(())
    }

    fn list(&self) -> Vec<Arc<K>> {
        self.lock().items.values().cloned().collect()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.lock().items.keys().cloned().collect()
    }

    fn get_object(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = meta_namespace_key(obj)?;
        Ok(self.lock().items.get(&key).cloned())
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.lock().items.get(key).cloned()
    }

    fn replace(&self, items: Vec<Arc<K>>, _resource_version: &str) -> Result<(), StoreError> {
        let mut map = HashMap::with_capacity(items.len());
        for obj in items {
            let obj = self.cache.prepare_listed(obj, true);
            map.insert(meta_namespace_key(obj.as_ref())?, obj);
        }
        self.lock().items = map;
        Ok(())
    }

    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

impl<K: Object> StoreSink<K> for TemporaryStore<K> {
    /// Collects the run, or, when the real store takes the initial events as a
    /// streamed list, hands its adds and updates on as list pages (an update of an
    /// object already handed on follows it as one more listed state) and its deletes
    /// as deletes, in order.
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, StoreError),
    ) {
        if !self.streams() {
            apply_each(self, run, failed);
            return;
        }
        // A page: the run's adds and updates up to its next delete.
        let mut objects: Vec<Arc<K>> = Vec::with_capacity(run.len());
        let mut actions: Vec<WatchAction> = Vec::with_capacity(run.len());
        // A page the store does not take (a key it cannot compute) is collected
        // instead, for `finish` to hand over (and report) with the end of the list.
        let hand_on = |objects: &mut Vec<Arc<K>>,
                       actions: &mut Vec<WatchAction>,
                       failed: &mut dyn FnMut(WatchAction, StoreError)| {
            if objects.is_empty() {
                return;
            }
            match self.cache.stream_list_page(objects, false) {
                Ok(true) => {}
                Ok(false) => {
                    for (action, obj) in actions.iter().zip(objects.drain(..)) {
                        if let Err(e) = self.collect(obj) {
                            failed(*action, e);
                        }
                    }
                }
                Err(e) => {
                    for action in actions.iter() {
                        failed(*action, e.clone());
                    }
                }
            }
            objects.clear();
            actions.clear();
        };
        for (action, obj) in run.drain(..) {
            if action == WatchAction::Delete {
                hand_on(&mut objects, &mut actions, failed);
                let result = self
                    .delete(Arc::clone(&obj))
                    .and_then(|()| self.cache.delete(obj));
                if let Err(e) = result {
                    failed(action, e);
                }
            } else {
                // Streamed into an empty store: nothing to look up.
                objects.push(self.cache.prepare_listed(obj, false));
                actions.push(action);
            }
        }
        hand_on(&mut objects, &mut actions, failed);
    }
}
