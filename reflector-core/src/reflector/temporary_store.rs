//! The store a watch-list stream fills before the reflector's own store is replaced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::object::{Object, ObjectKey, meta_namespace_key};
use crate::store::{SinkError, StoreError, StoreSink, WatchAction};

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
    /// The real store's.
    pub(crate) fn finish(&self, resource_version: &str) -> Result<(), SinkError> {
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

impl<K: Object> TemporaryStore<K> {
    /// Removes a deleted object from what was collected.
    fn uncollect(&self, obj: &K) -> Result<(), StoreError> {
        let key = meta_namespace_key(obj)?;
        self.lock().items.remove(&key);
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
        failed: &mut dyn FnMut(WatchAction, SinkError),
    ) {
        if !self.streams() {
            for (action, obj) in run.drain(..) {
                let result = match action {
                    WatchAction::Delete => self.uncollect(&obj),
                    _ => self.collect(self.cache.prepare_listed(obj, true)),
                };
                if let Err(e) = result {
                    failed(action, e.into());
                }
            }
            return;
        }
        // A page: the run's adds and updates up to its next delete.
        let mut objects: Vec<Arc<K>> = Vec::with_capacity(run.len());
        let mut actions: Vec<WatchAction> = Vec::with_capacity(run.len());
        // A page the store does not take (a key it cannot compute) is collected
        // instead, for `finish` to hand over (and report) with the end of the list.
        let hand_on = |objects: &mut Vec<Arc<K>>,
                       actions: &mut Vec<WatchAction>,
                       failed: &mut dyn FnMut(WatchAction, SinkError)| {
            if objects.is_empty() {
                return;
            }
            match self.cache.stream_list_page(objects, false) {
                Ok(true) => {}
                Ok(false) => {
                    for (action, obj) in actions.iter().zip(objects.drain(..)) {
                        if let Err(e) = self.collect(obj) {
                            failed(*action, e.into());
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
                if let Err(e) = self.uncollect(&obj) {
                    failed(action, e.into());
                }
                self.cache
                    .apply_watch_run(&mut vec![(action, obj)], &mut *failed);
            } else {
                // Streamed into an empty store: nothing to look up.
                objects.push(self.cache.prepare_listed(obj, false));
                actions.push(action);
            }
        }
        hand_on(&mut objects, &mut actions, failed);
    }

    /// Nothing to re-deliver: the initial state is still being gathered.
    fn resync(&self) -> Result<(), SinkError> {
        Ok(())
    }

    /// Collects the list instead of what was collected.
    fn replace_listed(&self, items: Vec<Arc<K>>, _resource_version: &str) -> Result<(), SinkError> {
        let mut map = HashMap::with_capacity(items.len());
        for obj in items {
            map.insert(meta_namespace_key(obj.as_ref())?, obj);
        }
        self.lock().items = map;
        Ok(())
    }
}
