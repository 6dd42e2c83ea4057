//! From popped in-order entries to cache writes and notifications, as client-go's
//! `processDeltasInBatch` with atomic relists and resyncs.

use std::collections::HashSet;
use std::sync::Arc;

use crate::fifo::{Deltas, Entry, PoppedEntry, PoppedItem};
use crate::object::{MaybeTombstone, Object, ObjectKey};
use crate::store::{BatchWriter, Indexer};

use super::notification::Notification;
use super::process_deltas::process_deltas;

/// Applies a batch of in-order entries to the cache, in order, and collects the
/// notifications. A per-object delta is applied as a one-delta item of the
/// DeltaFifo would be; a whole list replaces the cache (see [`replace_all`]); a
/// resync re-delivers every cached object; a bookmark changes nothing.
///
/// `before` is what [`cached_before`] read of the cache before the batch's write.
pub(super) fn process_entries<K: Object>(
    indexer: &Indexer<K>,
    entries: Vec<PoppedEntry<K>>,
    popped_key_is_cache_key: bool,
    before: CachedBefore<K>,
    cache: &mut BatchWriter<'_, K>,
    out: &mut Vec<Notification<K>>,
) {
    let mut before = Some(before);
    for PoppedEntry {
        key,
        entry,
        is_in_initial_list,
    } in entries
    {
        match entry {
            Entry::Delta(delta) => {
                let Some(key) = key else { continue };
                let item = PoppedItem {
                    key,
                    deltas: Deltas::one(delta),
                    is_in_initial_list,
                };
                process_deltas(indexer, item, popped_key_is_cache_key, cache, out);
            }
            Entry::ReplacedAll { objects, .. } => {
                let keys = match before.take() {
                    Some(CachedBefore::Keys(keys)) => keys,
                    _ => Vec::new(),
                };
                replace_all(indexer, objects, keys, is_in_initial_list, cache, out);
            }
            Entry::SyncAll => {
                let objects = match before.take() {
                    Some(CachedBefore::Objects(objects)) => objects,
                    _ => Vec::new(),
                };
                // Every cached object, re-delivered to the handlers due for a resync.
                for obj in objects {
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

/// What a batch needs of the cache as it was before the batch: a whole list, its
/// keys; a resync, its objects. Either entry is alone in its batch.
pub(super) enum CachedBefore<K> {
    /// Nothing.
    Nothing,
    /// The cached keys, for a whole list.
    Keys(Vec<ObjectKey>),
    /// The cached objects, for a resync.
    Objects(Vec<Arc<K>>),
}

/// Reads what `entries` need of the cache before they are applied (see
/// [`CachedBefore`]). The informer is the cache's only writer, so nothing changes
/// it between this read and the batch's write.
pub(super) fn cached_before<K: Object>(
    indexer: &Indexer<K>,
    entries: &[PoppedEntry<K>],
) -> CachedBefore<K> {
    match entries.first().map(|p| &p.entry) {
        Some(Entry::ReplacedAll { .. }) => CachedBefore::Keys(indexer.list_keys()),
        Some(Entry::SyncAll) => CachedBefore::Objects(indexer.list()),
        _ => CachedBefore::Nothing,
    }
}

/// Replaces the cache with `objects` (cached before: `before`) in one write, then
/// notifies as client-go's atomic replace: a deletion (with a
/// [`MaybeTombstone::DeletedFinalStateUnknown`] tombstone) for every cached object
/// missing from the list, then an add for every listed object not cached and an
/// update for every one cached (a resync if its resource version did not change).
fn replace_all<K: Object>(
    indexer: &Indexer<K>,
    objects: Vec<Arc<K>>,
    before: Vec<ObjectKey>,
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
    let gone: Vec<ObjectKey> = before
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
