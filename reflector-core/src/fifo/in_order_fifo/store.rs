//! The producer side: the in-order FIFO as a [`Store`], and the per-object deltas
//! a relist or a resync becomes without atomic events.

use std::collections::HashSet;
use std::sync::Arc;

use super::state::{Mark, Queued, State};
use super::{Entry, InOrderFifo};
use crate::fifo::{Delta, DeltaType};
use crate::object::{KeyError, MaybeTombstone, Object, ObjectKey};
use crate::store::{Store, StoreError};

impl<K: Object> InOrderFifo<K> {
    /// Keys each listed object, and transforms it with `transform` (a list the
    /// reflector hands over was transformed by `prepare_listed` already).
    pub(super) fn keyed_listed(
        &self,
        items: impl IntoIterator<Item = Arc<K>>,
        transform: bool,
    ) -> Result<Vec<(ObjectKey, Arc<K>)>, KeyError> {
        items
            .into_iter()
            .map(|obj| {
                let key = self.options.key_of(&obj)?;
                let obj = if transform {
                    self.options.transformed(obj)
                } else {
                    obj
                };
                Ok((key, obj))
            })
            .collect()
    }

    /// [`replace`](Store::replace) with keyed, transformed items.
    pub(super) fn replace_keyed(
        &self,
        listed: Vec<(ObjectKey, Arc<K>)>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(StoreError::Closed);
        }
        if self.atomic {
            let entry = Entry::ReplacedAll {
                objects: listed.into_iter().map(|(_, obj)| obj).collect(),
                resource_version: resource_version.to_owned(),
            };
            state.push_all_locked([Queued {
                key: None,
                entry,
                mark: Mark::Version(resource_version.to_owned()),
            }]);
        } else {
            let mut entries = self.relist_deltas_locked(&state, listed);
            if let Some(last) = entries.last_mut()
                && !resource_version.is_empty()
            {
                last.mark = Mark::Version(resource_version.to_owned());
            }
            state.push_all_locked(entries);
        }
        drop(processing);
        self.end_list(state);
        Ok(())
    }

    /// One watch change (`add`, `update`, `delete`): keyed and transformed outside
    /// the lock, then queued.
    fn change(&self, delta_type: DeltaType, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.options.key_of(&obj)?;
        let obj = self.options.transformed(obj);
        self.push([Queued::delta(
            key,
            Delta::new(delta_type, obj),
            Mark::Object,
        )])
    }

    /// The per-object entries of a relist without atomic events, as client-go's
    /// `RealFIFO.Replace`: first a `Deleted` tombstone for every key missing from
    /// `listed` whose last queued delta is not a deletion (carrying that delta's
    /// object), in queue order; then one for every cached key missing from the list
    /// with nothing queued (carrying the cached object); then a `Replaced` delta per
    /// listed object.
    fn relist_deltas_locked(
        &self,
        state: &State<K>,
        listed: Vec<(ObjectKey, Arc<K>)>,
    ) -> Vec<Queued<K>> {
        let listed_keys: HashSet<&ObjectKey> = listed.iter().map(|(k, _)| k).collect();
        let mut last_queued: Vec<(&ObjectKey, &Delta<K>)> = Vec::new();
        let mut position = std::collections::HashMap::new();
        for queued in &state.queue {
            if let (Some(key), Entry::Delta(delta)) = (&queued.key, &queued.entry) {
                match position.get(key) {
                    Some(&i) => last_queued[i] = (key, delta),
                    None => {
                        position.insert(key, last_queued.len());
                        last_queued.push((key, delta));
                    }
                }
            }
        }
        let mut out = Vec::new();
        for (key, delta) in &last_queued {
            if listed_keys.contains(key) || delta.delta_type == DeltaType::Deleted {
                continue;
            }
            let obj = Arc::clone(delta.object.object());
            out.push(tombstone((*key).clone(), obj));
        }
        if let Some(known) = &self.options.known_objects {
            for key in known.list_keys() {
                if listed_keys.contains(&key) || position.contains_key(&key) {
                    continue;
                }
                let Some(obj) = known.get(&key) else {
                    continue;
                };
                out.push(tombstone(key, obj));
            }
        }
        drop(position);
        drop(listed_keys);
        for (key, obj) in listed {
            out.push(Queued::delta(
                key,
                Delta::new(DeltaType::Replaced, obj),
                Mark::None,
            ));
        }
        out
    }
}

/// A `Deleted` delta of `key` carrying a `DeletedFinalStateUnknown` tombstone.
fn tombstone<K: Object>(key: ObjectKey, obj: Arc<K>) -> Queued<K> {
    let tombstone = MaybeTombstone::DeletedFinalStateUnknown {
        key: key.clone(),
        obj,
    };
    Queued::delta(key, Delta::new(DeltaType::Deleted, tombstone), Mark::None)
}

/// The producer side, as client-go's `RealFIFO` methods of the same names.
impl<K: Object> Store<K> for InOrderFifo<K> {
    /// Queues an `Added` delta.
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.change(DeltaType::Added, obj)
    }

    /// Queues an `Updated` delta.
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.change(DeltaType::Updated, obj)
    }

    /// Queues a `Deleted` delta, whether or not the object is queued or cached (the
    /// consumer ignores the deletion of an object it does not hold).
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.change(DeltaType::Deleted, obj)
    }

    /// The object of every queued per-object delta, in queue order (an object
    /// changed twice appears twice).
    fn list(&self) -> Vec<Arc<K>> {
        let state = self.lock();
        state
            .queue
            .iter()
            .filter_map(|q| match &q.entry {
                Entry::Delta(d) => Some(Arc::clone(d.object.object())),
                _ => None,
            })
            .collect()
    }

    /// The keys of the queued per-object deltas, each once, in the order first queued.
    fn list_keys(&self) -> Vec<ObjectKey> {
        let state = self.lock();
        let mut seen = HashSet::new();
        state
            .queue
            .iter()
            .filter_map(|q| q.key.as_ref())
            .filter(|key| seen.insert(*key))
            .cloned()
            .collect()
    }

    /// The newest object queued under `obj`'s key.
    fn get_object(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.options.key_of(obj)?;
        Ok(self.get(&key))
    }

    /// The newest object queued under `key`.
    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let state = self.lock();
        state.queue.iter().rev().find_map(|q| match &q.entry {
            Entry::Delta(d) if q.key.as_ref() == Some(key) => Some(Arc::clone(d.object.object())),
            _ => None,
        })
    }

    /// With atomic events, queues the whole list as one [`Entry::ReplacedAll`] at
    /// `resource_version`; without, the per-object deltas of client-go's
    /// `RealFIFO.Replace` (tombstones first, then a `Replaced` delta per item),
    /// computed against the queue and the cache. The first `replace` sets the
    /// initial population [`has_synced`](InOrderFifo::has_synced) waits for: every
    /// entry queued by then.
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        self.replace_keyed(self.keyed_listed(items, true)?, resource_version)
    }

    /// With atomic events, queues one [`Entry::SyncAll`]; without, a `Sync` delta
    /// for every cached object with nothing queued under its key (a queued change is
    /// newer than the cached object), as client-go's `RealFIFO.Resync`.
    fn resync(&self) -> Result<(), StoreError> {
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(StoreError::Closed);
        }
        let entries = if self.atomic {
            vec![Queued {
                key: None,
                entry: Entry::SyncAll,
                mark: Mark::None,
            }]
        } else {
            let Some(known) = &self.options.known_objects else {
                return Ok(());
            };
            let queued: HashSet<&ObjectKey> =
                state.queue.iter().filter_map(|q| q.key.as_ref()).collect();
            let mut entries = Vec::new();
            for key in known.list_keys() {
                if queued.contains(&key) {
                    continue;
                }
                if let Some(obj) = known.get(&key) {
                    entries.push(Queued::delta(
                        key,
                        Delta::new(DeltaType::Sync, obj),
                        Mark::None,
                    ));
                }
            }
            entries
        };
        let any = !entries.is_empty();
        state.push_all_locked(entries);
        drop(state);
        drop(processing);
        if any {
            self.core.notify.notify_one();
        }
        Ok(())
    }
}
