//! Deleting a CustomResourceDefinition as the real apiextensions-apiserver does: the
//! DELETE marks it (`deletionTimestamp`, the `customresourcecleanup.apiextensions.k8s.io`
//! finalizer, a `Terminating` condition) and answers it; its cleanup then deletes every
//! object of its kind through the usual delete (objects with finalizers wait for them),
//! creates of new objects are refused meanwhile, and the CRD goes once the last object
//! is gone, its kind then no longer served.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Deleted, EventType, Preconditions, ResourceId, State};
use crate::object::{StoredObject, key_of, meta_str, metadata, metadata_mut, now_timestamp};
use crate::status::ApiError;

/// The finalizer the real server puts on a CRD being deleted.
const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// `value` (a CRD) with its `Terminating` condition set as given.
fn set_terminating(value: &mut Value, status: &str, reason: &str, message: &str) {
    let condition = json!({"type": "Terminating", "status": status,
        "lastTransitionTime": now_timestamp(), "reason": reason, "message": message});
    let root = match value {
        Value::Object(root) => root,
        _ => return,
    };
    let status_field = root.entry("status").or_insert_with(|| json!({}));
    if !status_field.is_object() {
        *status_field = json!({});
    }
    let conditions = status_field
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    if let Some(Value::Array(conditions)) = conditions {
        conditions.retain(|c| c["type"] != "Terminating");
        conditions.push(condition);
    }
}

fn finalizers(value: &Value) -> Vec<String> {
    metadata(value)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect()
}

impl State {
    /// Whether `rid` is the CustomResourceDefinition resource.
    pub(super) fn is_crd_resource(&self, rid: ResourceId) -> bool {
        let info = &self.resources[rid];
        info.group == crate::crd::GROUP && info.kind == "CustomResourceDefinition"
    }

    /// The CRD serving custom resource `rid`, with its resource id, if it is stored.
    pub(crate) fn crd_of(&self, rid: ResourceId) -> Option<(ResourceId, Arc<StoredObject>)> {
        let name = self.custom.served(rid)?.crd.clone();
        let crd_rid = self.find(crate::crd::GROUP, "v1", "customresourcedefinitions")?;
        Some((crd_rid, self.get(crd_rid, &name)?))
    }

    /// The real answer to a create of a custom object whose CRD is being deleted.
    pub(super) fn refuse_create_while_terminating(&self, rid: ResourceId) -> Result<(), ApiError> {
        let terminating = self
            .crd_of(rid)
            .is_some_and(|(_, crd)| crd.value().pointer("/metadata/deletionTimestamp").is_some());
        if !terminating {
            return Ok(());
        }
        let info = &self.resources[rid];
        Err(ApiError::new(
            403,
            "Forbidden",
            "create not allowed while custom resource definition is terminating",
        )
        .with_details(json!({"group": info.group, "kind": info.plural})))
    }

    /// DELETE of the CRD `value` (at `key`): marked as the real registry marks it and
    /// answered so; then its cleanup runs (unless this is a dry run).
    pub(super) fn delete_crd(
        &mut self,
        rid: ResourceId,
        key: Arc<str>,
        mut value: Value,
        old: Arc<StoredObject>,
    ) -> Deleted {
        if !super::delete::mark_deleting(&mut value) {
            return Deleted::Pending(old);
        }
        let name = key.to_string();
        let mut all = finalizers(&value);
        if !all.iter().any(|f| f == CLEANUP_FINALIZER) {
            all.push(CLEANUP_FINALIZER.to_owned());
        }
        metadata_mut(&mut value).insert("finalizers".to_owned(), json!(all));
        set_terminating(
            &mut value,
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
        let marked = self.commit(rid, key.clone(), value.clone(), EventType::Modified);
        if self.dry_run {
            return Deleted::Pending(marked);
        }
        // The finalizer controller: in progress, then every object deleted.
        set_terminating(
            &mut value,
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
        metadata_mut(&mut value).remove("resourceVersion");
        self.commit(rid, key, value, EventType::Modified);
        let served: Vec<ResourceId> = self
            .served()
            .filter(|(id, _)| self.custom.served(*id).is_some_and(|s| s.crd == name))
            .map(|(id, _)| id)
            .collect();
        for resource in served {
            for object in self.snapshot(resource, None) {
                let namespace = object.namespace.clone();
                let _ = self.delete(
                    resource,
                    namespace.as_deref(),
                    &object.name,
                    &Preconditions::default(),
                );
            }
        }
        self.finish_crd_if_empty(&name);
        Deleted::Pending(marked)
    }

    /// After custom object `rid` was deleted: removes its CRD if the CRD is being deleted
    /// and none of its objects is left.
    pub(super) fn finish_crd_of(&mut self, rid: ResourceId) {
        if let Some(name) = self.custom.served(rid).map(|s| s.crd.clone()) {
            self.finish_crd_if_empty(&name);
        }
    }

    /// Removes the CRD `name` (its cleanup finalizer taken off, `Terminating` False) if it
    /// is being deleted and none of its objects is left.
    fn finish_crd_if_empty(&mut self, name: &str) {
        let Some(crd_rid) = self.find(crate::crd::GROUP, "v1", "customresourcedefinitions") else {
            return;
        };
        let Some(crd) = self.get(crd_rid, name) else {
            return;
        };
        let mut value = crd.value();
        let all = finalizers(&value);
        if meta_str(&value, "deletionTimestamp").is_none()
            || !all.iter().any(|f| f == CLEANUP_FINALIZER)
        {
            return;
        }
        let empty = self
            .served()
            .filter(|(id, _)| self.custom.served(*id).is_some_and(|s| s.crd == name))
            .all(|(id, _)| self.count(id) == 0);
        if !empty {
            return;
        }
        let rest: Vec<String> = all.into_iter().filter(|f| f != CLEANUP_FINALIZER).collect();
        metadata_mut(&mut value).insert("finalizers".to_owned(), json!(rest));
        set_terminating(
            &mut value,
            "False",
            "InstanceDeletionCompleted",
            "removed all instances",
        );
        let event = if rest.is_empty() {
            EventType::Deleted
        } else {
            EventType::Modified
        };
        self.commit(crd_rid, key_of(None, name), value, event);
    }
}
