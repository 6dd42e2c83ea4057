//! Foreground deletion (`propagationPolicy: Foreground`) without a garbage collector: the
//! DELETE answers the object with the `foregroundDeletion` finalizer added, as the real
//! server does; where the real garbage collector would then delete its dependents and
//! take the finalizer off, this server takes it off itself as soon as no object names
//! this one in its `ownerReferences` (at once when none does; else once the test has
//! deleted the last of them).

use std::sync::Arc;

use serde_json::{Value, json};

use super::{EventType, ResourceId, State};
use crate::object::{StoredObject, meta_str, metadata, metadata_mut};

/// The finalizer of an object being deleted in the foreground.
pub(super) const FOREGROUND_DELETION: &str = "foregroundDeletion";

impl State {
    /// Whether any stored object names `uid` among its owners.
    fn has_dependents(&self, uid: &str) -> bool {
        let needle = format!("\"uid\":\"{uid}\"");
        self.served().any(|(rid, _)| {
            self.snapshot(rid, None).iter().any(|object| {
                // A cheap test on the bytes first; only then the owners themselves.
                contains_bytes(&object.json, needle.as_bytes())
                    && object
                        .value()
                        .pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|owners| owners.iter().any(|o| o["uid"] == uid))
            })
        })
    }

    /// Remembers `key` of `rid` as deleted in the foreground and takes its finalizer off if
    /// it has no dependents.
    pub(super) fn track_foreground(&mut self, rid: ResourceId, key: Arc<str>) {
        self.foreground.push((rid, key));
        self.finish_foreground();
    }

    /// Takes `foregroundDeletion` off every object deleted in the foreground that has no
    /// dependent left (deleting it when that was its last finalizer).
    pub(super) fn finish_foreground(&mut self) {
        let pending = std::mem::take(&mut self.foreground);
        for (rid, key) in pending {
            let Some(object) = self.get(rid, &key) else {
                continue;
            };
            let value = object.value();
            let uid = meta_str(&value, "uid").unwrap_or_default().to_owned();
            if self.has_dependents(&uid) {
                self.foreground.push((rid, key));
                continue;
            }
            self.drop_foreground_finalizer(rid, key, &object, value);
        }
    }

    fn drop_foreground_finalizer(
        &mut self,
        rid: ResourceId,
        key: Arc<str>,
        object: &Arc<StoredObject>,
        mut value: Value,
    ) {
        let rest: Vec<Value> = metadata(&value)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|f| *f != FOREGROUND_DELETION)
            .cloned()
            .collect();
        if rest.is_empty() {
            // The last finalizer: the object goes, its DELETED carrying what it had.
            self.commit(rid, key, object.value(), EventType::Deleted);
        } else {
            metadata_mut(&mut value).insert("finalizers".to_owned(), json!(rest));
            self.commit(rid, key, value, EventType::Modified);
        }
    }
}

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
