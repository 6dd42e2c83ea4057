//! The producer side: changes, relists and resyncs, as client-go's `DeltaFIFO` and
//! `RealFIFO` methods of the same names, in one place for both modes.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, MutexGuard};

use foldhash::fast::RandomState;

use super::state::State;
use super::{Delta, DeltaType, Entry, Fifo, FifoError};
use crate::object::{KeyError, MaybeTombstone, Object, ObjectKey};

impl<K: Object> Fifo<K> {
    /// Queues an `Added` delta.
    ///
    /// # Errors
    /// [`FifoError::Key`] if the key function fails; [`FifoError::Closed`] on a
    /// closed queue.
    pub fn add(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.change(DeltaType::Added, obj)
    }

    /// Queues an `Updated` delta.
    ///
    /// # Errors
    /// As [`add`](Fifo::add).
    pub fn update(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.change(DeltaType::Updated, obj)
    }

    /// Queues a `Deleted` delta. Per key, not if the key is neither queued nor
    /// cached: the deletion was already reported (by a relist, presumably) and is
    /// ignored; in order, always (the consumer ignores the deletion of an object it
    /// does not hold).
    ///
    /// # Errors
    /// As [`add`](Fifo::add).
    pub fn delete(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.change(DeltaType::Deleted, obj)
    }

    /// One watch change: keyed and transformed outside the lock, then queued.
    fn change(&self, delta_type: DeltaType, obj: Arc<K>) -> Result<(), FifoError> {
        let key = self.key_of(&obj)?;
        let obj = self.transformed(obj);
        // Per key a deletion consults the cache, so it waits for a running `pop`.
        let processing = (delta_type == DeltaType::Deleted && self.per_key())
            .then(|| self.lock_processing())
            .flatten();
        let (queued, flipped) = {
            let mut state = self.lock();
            if state.life.closed {
                return Err(FifoError::Closed);
            }
            let flipped = state.life.written_locked();
            (
                self.queue_change_locked(&mut state, delta_type, key, obj),
                flipped,
            )
        };
        drop(processing);
        self.announce_synced(flipped);
        if queued {
            self.notify.notify_one();
        }
        Ok(())
    }

    /// Queues one watch change (a deletion per key only of a queued or cached key)
    /// and notes its object's version; returns whether a new entry was queued.
    pub(super) fn queue_change_locked(
        &self,
        state: &mut State<K>,
        delta_type: DeltaType,
        key: ObjectKey,
        obj: Arc<K>,
    ) -> bool {
        let since = state.queued_num;
        state.note_version_locked(obj.meta().resource_version.as_deref().unwrap_or_default());
        if delta_type == DeltaType::Deleted
            && self.per_key()
            && !state.positions.contains_key(&key)
            && self.cache.as_ref().is_none_or(|c| c.get(&key).is_none())
        {
            return false;
        }
        state.push_deltas_locked(key, Delta::new(delta_type, obj), since, self.per_key())
    }

    /// Replaces what the consumer holds with `items`, the result of a list at
    /// `resource_version`. In order, one [`Entry::ReplacedAll`] the consumer applies
    /// at once; per key, a `Replaced` (or `Sync`) delta per item, then a `Deleted`
    /// delta with a [`MaybeTombstone::DeletedFinalStateUnknown`] tombstone for every
    /// key queued, or cached, but missing from `items`, carrying the newest object
    /// queued under the key, or else the cached one (a key whose newest queued change
    /// is a deletion keeps it; cached keys whose object vanished from the cache
    /// meanwhile get none, where client-go queues one without an object).
    ///
    /// The first list sets the initial population [`has_synced`](Fifo::has_synced)
    /// waits for: everything queued by then.
    ///
    /// # Errors
    /// [`FifoError::Key`] if the key function fails for an item (nothing is
    /// queued then); [`FifoError::Closed`] on a closed queue.
    pub fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), FifoError> {
        let transform = self.has_transform();
        self.replace_keyed(self.keyed(items, transform)?, resource_version)
    }

    /// Re-delivers what the consumer holds. In order, one [`Entry::SyncAll`]; per key,
    /// a `Sync` delta for every cached object with nothing queued under its key (a
    /// queued change is newer than the cached object, so re-delivering the cached one
    /// would go back in time), none without a cache.
    ///
    /// # Errors
    /// [`FifoError::Closed`] on a closed queue.
    pub fn resync(&self) -> Result<(), FifoError> {
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(FifoError::Closed);
        }
        let since = state.queued_num;
        let before = state.queue.len();
        if self.atomic {
            state.push_locked(None, Entry::SyncAll, since);
        } else if let Some(cache) = &self.cache {
            let stale: Vec<ObjectKey> = {
                let queued = state.queued_keys_locked();
                cache
                    .list_keys()
                    .into_iter()
                    .filter(|key| !queued.contains(key))
                    .collect()
            };
            for key in stale {
                let Some(obj) = cache.get(&key) else {
                    tracing::info!(key = %key, "cached key vanished from the cache during resync; not synced");
                    continue;
                };
                state.push_deltas_locked(
                    key,
                    Delta::new(DeltaType::Sync, obj),
                    since,
                    self.per_key(),
                );
            }
        }
        let queued = state.queue.len() > before;
        drop(state);
        drop(processing);
        if queued {
            self.notify.notify_waiters();
        }
        Ok(())
    }

    /// `items` with their keys, transformed with `transform`; the first key error
    /// fails them all.
    pub(super) fn keyed(
        &self,
        items: impl IntoIterator<Item = Arc<K>>,
        transform: bool,
    ) -> Result<Vec<(ObjectKey, Arc<K>)>, KeyError> {
        items
            .into_iter()
            .map(|obj| {
                let key = self.key_of(&obj)?;
                Ok((
                    key,
                    if transform {
                        self.transformed(obj)
                    } else {
                        obj
                    },
                ))
            })
            .collect()
    }

    /// The delta type of a listed object: `Replaced`, or per key `Sync` unless
    /// [`emit_replaced`](Fifo::emit_replaced).
    pub(super) fn listed_type(&self) -> DeltaType {
        if self.per_key() && !self.emit_replaced {
            DeltaType::Sync
        } else {
            DeltaType::Replaced
        }
    }

    /// [`replace`](Fifo::replace) with keyed, transformed items.
    pub(super) fn replace_keyed(
        &self,
        listed: Vec<(ObjectKey, Arc<K>)>,
        resource_version: &str,
    ) -> Result<(), FifoError> {
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(FifoError::Closed);
        }
        let since = state.queued_num;
        if self.atomic {
            let entry = Entry::ReplacedAll {
                objects: listed.into_iter().map(|(_, obj)| obj).collect(),
                resource_version: resource_version.to_owned(),
            };
            state.push_locked(None, entry, since);
        } else {
            self.queue_relist_locked(&mut state, listed, since);
        }
        state.note_version_locked(resource_version);
        drop(processing);
        self.end_list(state);
        Ok(())
    }

    /// A relist as per-object deltas (per key, or in order without atomic lists),
    /// computed against the queue and the cache: a `Deleted` tombstone for every key
    /// queued or cached but not listed — carrying the newest object queued under it,
    /// else the cached one; none for a key whose newest queued change is a deletion —
    /// and a listed delta per listed object. Per key the listed objects come first, as
    /// client-go's `DeltaFIFO.Replace`; in order the tombstones, as `RealFIFO.Replace`.
    fn queue_relist_locked(
        &self,
        state: &mut State<K>,
        listed: Vec<(ObjectKey, Arc<K>)>,
        since: u64,
    ) {
        let listed_keys: HashSet<&ObjectKey, RandomState> = listed.iter().map(|(k, _)| k).collect();
        // The newest queued change of each queued key, in the order first queued.
        let mut newest: Vec<(&ObjectKey, &Delta<K>)> = Vec::new();
        let mut position: HashMap<&ObjectKey, usize, RandomState> = HashMap::default();
        for queued in &state.queue {
            let (Some(key), Some(delta)) =
                (&queued.key, queued.entry.deltas().and_then(|d| d.newest()))
            else {
                continue;
            };
            match position.get(key) {
                Some(&i) => newest[i] = (key, delta),
                None => {
                    position.insert(key, newest.len());
                    newest.push((key, delta));
                }
            }
        }
        let mut tombstones: Vec<(ObjectKey, Arc<K>)> = newest
            .into_iter()
            .filter(|(key, delta)| {
                !listed_keys.contains(key) && delta.delta_type != DeltaType::Deleted
            })
            .map(|(key, delta)| (key.clone(), Arc::clone(delta.object.object())))
            .collect();
        if let Some(cache) = &self.cache {
            for key in cache.list_keys() {
                if listed_keys.contains(&key) || position.contains_key(&key) {
                    continue;
                }
                match cache.get(&key) {
                    Some(obj) => tombstones.push((key, obj)),
                    None => {
                        tracing::info!(key = %key, "cached key vanished from the cache during a relist; no tombstone queued");
                    }
                }
            }
        }
        drop(position);
        drop(listed_keys);
        let tombstones = tombstones.into_iter().map(|(key, obj)| {
            let tombstone = MaybeTombstone::DeletedFinalStateUnknown {
                key: key.clone(),
                obj,
            };
            (key, Delta::new(DeltaType::Deleted, tombstone))
        });
        let listed_type = self.listed_type();
        let listed = listed
            .into_iter()
            .map(|(key, obj)| (key, Delta::new(listed_type, obj)));
        let merge = self.per_key();
        let deltas: Vec<(ObjectKey, Delta<K>)> = if merge {
            listed.chain(tombstones).collect()
        } else {
            tombstones.chain(listed).collect()
        };
        for (key, delta) in deltas {
            state.push_deltas_locked(key, delta, since, merge);
        }
    }

    /// Ends a list (`replace` or a streamed one) whose entries the caller queued
    /// under `state`, and unlocks: the first list makes the queue populated, with
    /// everything queued as its initial population, as client-go's `Replace`. Then
    /// wakes `wait_synced` and the poppers (who also answer the list's version).
    pub(super) fn end_list(&self, mut state: MutexGuard<'_, State<K>>) {
        state.life.streaming = false;
        if !state.life.populated {
            state.life.populated = true;
            state.life.initial_population_count = state.queue.len();
        }
        let flipped = state.life.check_synced_locked();
        drop(state);
        self.announce_synced(flipped);
        self.notify.notify_waiters();
    }
}
