//! Direct storage access (`ApiServer::insert`, `remove`, registering CRDs): writes as
//! etcd would take them, without the API's admission, preconditions or subresource rules.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{EventType, ResourceId, State};
use crate::object::{
    StoredObject, key_of, meta_str, metadata, metadata_mut, new_uid, now_timestamp, spec_part,
};

impl State {
    /// Direct create-or-replace, bypassing preconditions and subresource rules.
    pub(crate) fn upsert(
        &mut self,
        rid: ResourceId,
        mut value: Value,
    ) -> Result<Arc<StoredObject>, String> {
        let info = self.resources[rid].clone();
        if !value.is_object() {
            return Err("object is not a JSON object".to_owned());
        }
        let name = meta_str(&value, "name")
            .ok_or("metadata.name is required")?
            .to_owned();
        let namespace = meta_str(&value, "namespace").map(str::to_owned);
        if info.namespaced && namespace.is_none() {
            return Err(format!(
                "{} is namespaced: metadata.namespace is required",
                info.kind
            ));
        }
        Self::normalize(&info, &mut value, namespace.as_deref()).map_err(|e| e.message.clone())?;
        let key = key_of(namespace.as_deref().filter(|_| info.namespaced), &name);
        let old = self.get(rid, &key).map(|o| o.value());
        let meta = metadata_mut(&mut value);
        let old_meta = old.as_ref().and_then(metadata);
        for field in ["uid", "creationTimestamp"] {
            if !meta.contains_key(field) {
                let v = old_meta
                    .and_then(|m| m.get(field).cloned())
                    .unwrap_or_else(|| {
                        if field == "uid" {
                            Value::String(new_uid())
                        } else {
                            now_timestamp()
                        }
                    });
                meta.insert(field.to_owned(), v);
            }
        }
        if info.generation && !meta.contains_key("generation") {
            let old_generation = old_meta
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64);
            let generation = match (&old, old_generation) {
                (Some(o), Some(g)) => {
                    if spec_part(o) == spec_part(&value) {
                        g
                    } else {
                        g + 1
                    }
                }
                _ => 1,
            };
            metadata_mut(&mut value).insert("generation".to_owned(), json!(generation));
        }
        let event_type = if old.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        Ok(self.commit(rid, key, value, event_type))
    }

    /// Direct removal (no finalizer handling). Returns whether the object existed.
    pub(crate) fn remove(&mut self, rid: ResourceId, key: &str) -> bool {
        match self.get(rid, key) {
            Some(old) => {
                let value = old.value();
                self.commit(rid, old.key.clone(), value, EventType::Deleted);
                true
            }
            None => false,
        }
    }
}
