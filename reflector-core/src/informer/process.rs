//! From a popped batch to cache writes and notifications, as client-go's
//! `processDeltasInBatch`: one place for both queue modes.

use std::collections::HashSet;
use std::sync::Arc;

use crate::fifo::{DeltaType, Deltas, Entry, Popped};
use crate::object::{MaybeTombstone, Object, ObjectKey};
use crate::store::{BatchWriter, Indexer};

use super::notification::Notification;

/// Applies a popped batch to the cache, in order, and collects the notifications:
/// an object's deltas as client-go's `processDeltas` ([`apply_deltas`]); a whole list
/// replaces the cache ([`replace_all`]); a resync re-delivers every cached object; a
/// bookmark changes nothing. `indexer` keys objects (it reads nothing).
pub(super) fn apply_batch<K: Object>(
    indexer: &Indexer<K>,
    batch: Vec<Popped<K>>,
    popped_key_is_cache_key: bool,
    cache: &mut BatchWriter<'_, K>,
    out: &mut Vec<Notification<K>>,
) {
    for Popped {
        key,
        entry,
        is_in_initial_list,
    } in batch
    {
        match entry {
            Entry::Deltas(deltas) => {
                let Some(key) = key else { continue };
                let keyed = popped_key_is_cache_key;
                apply_deltas(indexer, key, keyed, deltas, is_in_initial_list, cache, out);
            }
            Entry::ReplacedAll { objects, .. } => {
                replace_all(indexer, objects, is_in_initial_list, cache, out);
            }
            Entry::SyncAll => {
                // Every cached object, re-delivered to the handlers due for a resync.
                for obj in cache.objects() {
                    out.push(Notification::Update {
                        old: Arc::clone(&obj),
                        new: obj,
                        is_sync: true,
                    });
                }
            }
            Entry::Bookmark { .. } => {}
        }
    }
}

/// Applies one object's deltas to the cache and collects the notifications (an
/// update says whether it is a resync), as client-go's `processDeltas`. `key` is
/// the queue's key; it is the cache's too when `key_is_cache_key` (no transform
/// could change it), otherwise each stored object is keyed by `indexer`'s key
/// function, as client-go keys the transformed object.
pub(super) fn apply_deltas<K: Object>(
    indexer: &Indexer<K>,
    key: ObjectKey,
    key_is_cache_key: bool,
    deltas: Deltas<K>,
    is_in_initial_list: bool,
    cache: &mut BatchWriter<'_, K>,
    out: &mut Vec<Notification<K>>,
) {
    // The popped key and each delta's object are moved into the cache, not
    // cloned and dropped: every reference-count change is a locked instruction,
    // which waits until the cache's pending writes (table slots not in the CPU
    // cache) have landed (measured with the `informer` bench's pipeline).
    let count = deltas.len();
    let mut popped_key = Some(key);
    for (i, delta) in deltas.into_iter().enumerate() {
        let last = i + 1 == count;
        // Some until the last delta takes it.
        let Some(item_key) = popped_key.as_ref() else {
            break;
        };
        let delta_type = delta.delta_type;
        if delta_type == DeltaType::Deleted {
            cache.delete(item_key);
            out.push(Notification::Delete(delta.object));
            continue;
        }
        let obj = delta.object.into_object();
        let key = if !key_is_cache_key {
            match indexer.key_of(&obj) {
                Ok(key) => key,
                Err(e) => {
                    tracing::error!(key = %item_key, error = %e, "cannot cache the object");
                    continue;
                }
            }
        } else if last {
            let Some(key) = popped_key.take() else { break };
            key
        } else {
            item_key.clone()
        };
        let old = cache.upsert(key, Arc::clone(&obj));
        // A resync goes only to handlers due for one: every Sync delta, and a
        // relisted object whose resource version did not change, as client-go's
        // OnUpdate decides. A watch update never is one (and its old object, likely
        // out of the CPU cache by now, is not read).
        out.push(Notification::of_upsert(
            old,
            obj,
            is_in_initial_list,
            |old, new| match delta_type {
                DeltaType::Sync => true,
                DeltaType::Replaced => old.meta().resource_version == new.meta().resource_version,
                _ => false,
            },
        ));
    }
}

/// Replaces the cache with `objects` in the batch's one write, then notifies as
/// client-go's atomic replace: a deletion (with a
/// [`MaybeTombstone::DeletedFinalStateUnknown`] tombstone) for every cached object
/// missing from the list, then an add for every listed object not cached and an
/// update for every one cached (a resync if its resource version did not change).
fn replace_all<K: Object>(
    indexer: &Indexer<K>,
    objects: Vec<Arc<K>>,
    is_in_initial_list: bool,
    cache: &mut BatchWriter<'_, K>,
    out: &mut Vec<Notification<K>>,
) {
    let mut listed = Vec::with_capacity(objects.len());
    for obj in objects {
        match indexer.key_of(&obj) {
            Ok(key) => listed.push((key, obj)),
            Err(e) => tracing::error!(error = %e, "cannot cache a listed object"),
        }
    }
    let listed_keys: HashSet<&ObjectKey> = listed.iter().map(|(k, _)| k).collect();
    let gone: Vec<ObjectKey> = cache
        .keys()
        .into_iter()
        .filter(|k| !listed_keys.contains(k))
        .collect();
    drop(listed_keys);
    for key in gone {
        if let Some(obj) = cache.delete(&key) {
            out.push(Notification::Delete(
                MaybeTombstone::DeletedFinalStateUnknown { key, obj },
            ));
        }
    }
    for (key, obj) in listed {
        let old = cache.upsert(key, Arc::clone(&obj));
        out.push(Notification::of_upsert(
            old,
            obj,
            is_in_initial_list,
            |old, new| old.meta().resource_version == new.meta().resource_version,
        ));
    }
}
