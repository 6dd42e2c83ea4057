//! From popped deltas to cache writes and notifications, as client-go's
//! `processDeltas`.

use std::sync::Arc;

use crate::fifo::{DeltaType, PoppedItem};
use crate::object::Object;
use crate::store::{BatchWriter, Indexer};

use super::notification::Notification;

/// Applies one key's deltas to the cache and collects the notifications (an
/// update says whether it is a resync), as client-go's `processDeltas`.
pub(super) fn process_deltas<K: Object>(
    indexer: &Indexer<K>,
    item: PoppedItem<K>,
    popped_key_is_cache_key: bool,
    cache: &mut BatchWriter<'_, K>,
    out: &mut Vec<Notification<K>>,
) {
    let PoppedItem {
        key: popped_key,
        deltas,
        is_in_initial_list,
    } = item;
    // The popped key and each delta's object are moved into the cache, not
    // cloned and dropped: every reference-count change is a locked instruction,
    // which waits until the cache's pending writes (table slots not in the CPU
    // cache) have landed (measured with the `informer` bench's pipeline).
    let count = deltas.as_slice().len();
    let mut popped_key = Some(popped_key);
    for (i, delta) in deltas.into_iter().enumerate() {
        let last = i + 1 == count;
        // Some until the last delta takes it.
        let Some(item_key) = popped_key.as_ref() else {
            break;
        };
        match delta.delta_type {
            DeltaType::Sync | DeltaType::Replaced | DeltaType::Added | DeltaType::Updated => {
                let delta_type = delta.delta_type;
                let obj = delta.object.into_object();
                let key = if !popped_key_is_cache_key {
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
                // relisted object whose resource version did not change, as
                // client-go's OnUpdate decides. A watch update never is one (and its
                // old object, likely out of the CPU cache by now, is not read).
                out.push(Notification::of_upsert(
                    old,
                    obj,
                    is_in_initial_list,
                    |old, new| match delta_type {
                        DeltaType::Sync => true,
                        DeltaType::Replaced => {
                            old.meta().resource_version == new.meta().resource_version
                        }
                        _ => false,
                    },
                ));
            }
            DeltaType::Deleted => {
                cache.delete(item_key);
                out.push(Notification::Delete(delta.object));
            }
        }
    }
}
