//! DELETE of one object: preconditions, finalizers (`deletionTimestamp` set, the object
//! kept) and removal; a Namespace goes through its lifecycle instead.

use std::sync::Arc;

use kube::core::admission::Operation;
use serde_json::{Value, json};

use super::{EventType, ResourceId, State};
use crate::object::{StoredObject, key_of, meta_str, metadata, metadata_mut, now_timestamp};
use crate::status::ApiError;

/// What a DELETE did.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// The object is gone; this is its last state (carrying the delete's RV).
    Removed(Arc<StoredObject>),
    /// The object has finalizers: it stays, with `deletionTimestamp` set.
    Pending(Arc<StoredObject>),
}

/// Delete preconditions from `DeleteOptions.preconditions`.
#[derive(Debug, Default)]
pub(crate) struct Preconditions {
    pub resource_version: Option<String>,
    pub uid: Option<String>,
    /// `propagationPolicy: Foreground`: the object gets the `foregroundDeletion`
    /// finalizer (see `foreground`).
    pub foreground: bool,
}

/// Starts the deletion of `value`: `deletionTimestamp` now, `deletionGracePeriodSeconds`
/// 0. False (and `value` untouched) when it was being deleted already.
pub(super) fn mark_deleting(value: &mut Value) -> bool {
    if metadata(value).is_some_and(|m| m.contains_key("deletionTimestamp")) {
        return false;
    }
    let meta = metadata_mut(value);
    meta.insert("deletionTimestamp".to_owned(), now_timestamp());
    meta.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
    true
}

impl State {
    /// DELETE. With finalizers the object gets `deletionTimestamp` and stays; otherwise it
    /// is removed.
    pub(crate) fn delete(
        &mut self,
        rid: ResourceId,
        namespace: Option<&str>,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<Deleted, ApiError> {
        let info = self.resources[rid].clone();
        let key = key_of(namespace.filter(|_| info.namespaced), name);
        let old = self
            .get(rid, &key)
            .ok_or_else(|| ApiError::not_found(&info.plural, &info.group, name))?;
        let mut value = old.value();
        // The real server checks preconditions in `BeforeDelete` and names the object by
        // its Kind there, not by its plural resource.
        if let Some(rv) = preconditions
            .resource_version
            .as_deref()
            .filter(|rv| !rv.is_empty())
            && rv != old.rv.to_string()
        {
            return Err(ApiError::conflict_because(
                &info.kind,
                &info.group,
                name,
                &format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                    old.rv
                ),
            ));
        }
        let uid = meta_str(&value, "uid").unwrap_or_default().to_owned();
        if let Some(want) = preconditions.uid.as_deref().filter(|u| !u.is_empty())
            && want != uid
        {
            return Err(ApiError::conflict_because(
                &info.kind,
                &info.group,
                name,
                &format!(
                    "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
                ),
            ));
        }
        self.admission_point(None, |state, _| {
            state.seen(rid, Operation::Delete, "", None, Some(&value))
        });
        if self.is_namespace_resource(rid) {
            return Ok(self.terminate_namespace(rid, key, value, old));
        }
        if self.is_crd_resource(rid) {
            return Ok(self.delete_crd(rid, key, value, old));
        }
        if preconditions.foreground {
            let mut all: Vec<Value> = metadata(&value)
                .and_then(|m| m.get("finalizers"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if !all
                .iter()
                .any(|f| f == super::foreground::FOREGROUND_DELETION)
            {
                all.push(json!(super::foreground::FOREGROUND_DELETION));
            }
            metadata_mut(&mut value).insert("finalizers".to_owned(), json!(all));
        }
        let has_finalizers = metadata(&value)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if !has_finalizers {
            return Ok(Deleted::Removed(self.commit(
                rid,
                key,
                value,
                EventType::Deleted,
            )));
        }
        let meta = metadata_mut(&mut value);
        if meta.contains_key("deletionTimestamp") {
            return Ok(Deleted::Pending(old));
        }
        // Starting deletion bumps a generation the object has; it adds none.
        if let Some(generation) = meta.get("generation").and_then(Value::as_i64) {
            meta.insert("generation".to_owned(), json!(generation + 1));
        }
        meta.insert("deletionTimestamp".to_owned(), now_timestamp());
        meta.insert("deletionGracePeriodSeconds".to_owned(), json!(0));
        let pending = self.commit(rid, key.clone(), value, EventType::Modified);
        if preconditions.foreground && !self.dry_run {
            self.track_foreground(rid, key);
        }
        Ok(Deleted::Pending(pending))
    }
}
