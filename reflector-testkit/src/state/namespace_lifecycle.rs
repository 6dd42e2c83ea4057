//! Namespace lifecycle, as the real namespace strategy, `NamespaceLifecycle` admission and
//! namespace controller run it: the server starts with the namespaces the real one
//! creates for itself (`default`, `kube-system`, `kube-public`, `kube-node-lease`); a write
//! of a namespaced object in a namespace that does not exist is the real 404
//! `namespaces "x" not found`; deleting a namespace marks it `Terminating`
//! (`deletionTimestamp`, `status.phase`), deletes every object in it (objects with
//! finalizers wait for them), and removes the namespace once nothing is left in it; a
//! create in a terminating namespace is the real 403. Here the controller's work is done
//! within the DELETE, and its last step when the last object held by finalizers goes.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Deleted, EventType, Preconditions, ResourceId, State};
use crate::object::{StoredObject, key_of, metadata, metadata_mut, new_uid, now_timestamp};
use crate::resource::ResourceInfo;
use crate::status::{ApiError, status_details};

/// The namespaces the real API server creates for itself at start (its `default`,
/// `kube-system` and `kube-public`; `kube-node-lease` from the node lease controller).
pub(crate) const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The real Namespace strategy on create: the namespace controller's finalizer, `Active`,
/// and the name as the `kubernetes.io/metadata.name` label.
pub(super) fn set_namespace_defaults(name: &str, body: &mut Value) {
    if let Value::Object(m) = body {
        m.insert("spec".to_owned(), json!({"finalizers": ["kubernetes"]}));
        m.insert("status".to_owned(), json!({"phase": "Active"}));
    }
    let labels = metadata_mut(body)
        .entry("labels")
        .or_insert_with(|| json!({}));
    if let Value::Object(labels) = labels {
        labels.insert(
            "kubernetes.io/metadata.name".to_owned(),
            Value::String(name.to_owned()),
        );
    }
}

impl State {
    /// Stores the [`SYSTEM_NAMESPACES`] as part of the initial state: at the starting
    /// resourceVersion, before the event log begins (a watch from "now" does not see them
    /// arrive; a list, or a watch from `0`, does).
    pub(super) fn seed_system_namespaces(&mut self) {
        let Some(rid) = self.find("", "v1", "namespaces") else {
            return;
        };
        for name in SYSTEM_NAMESPACES {
            let mut value = json!({
                "kind": "Namespace",
                "apiVersion": "v1",
                "metadata": {
                    "name": name,
                    "uid": new_uid(),
                    "creationTimestamp": now_timestamp(),
                    "resourceVersion": self.rv.to_string(),
                },
            });
            set_namespace_defaults(name, &mut value);
            let key = key_of(None, name);
            let object = StoredObject::from_value(key.clone(), self.rv, &value);
            self.objects[rid].insert(key, Arc::new(object));
        }
    }

    /// Whether `rid` is the core Namespace resource.
    pub(super) fn is_namespace_resource(&self, rid: ResourceId) -> bool {
        let info = &self.resources[rid];
        info.group.is_empty() && info.kind == "Namespace"
    }

    /// The stored namespace `name`, if any.
    fn namespace_object(&self, name: &str) -> Option<(ResourceId, Arc<StoredObject>)> {
        let rid = self.find("", "v1", "namespaces")?;
        Some((rid, self.get(rid, name)?))
    }

    /// `NamespaceLifecycle` admission of a write of `name` (of `info`; a create when
    /// `create`): the real 404 `namespaces "x" not found` when its namespace does not
    /// exist, and for a create the real 403 when it is terminating. Deletes are not
    /// admitted here: the real plugin lets them through.
    pub(super) fn admit_in_namespace(
        &self,
        info: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        create: bool,
    ) -> Result<(), ApiError> {
        let Some(namespace) = namespace.filter(|_| info.namespaced) else {
            return Ok(());
        };
        let Some((_, stored)) = self.namespace_object(namespace) else {
            return Err(ApiError::not_found("namespaces", "", namespace));
        };
        let terminating =
            metadata(&stored.value()).is_some_and(|m| m.contains_key("deletionTimestamp"));
        if !create || !terminating {
            return Ok(());
        }
        let mut details = status_details(name, &info.group, &info.plural);
        details["causes"] = json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {namespace} is being terminated"),
            "field": "metadata.namespace",
        }]);
        let qualified = if info.group.is_empty() {
            info.plural.clone()
        } else {
            format!("{}.{}", info.plural, info.group)
        };
        Err(ApiError::new(
            403,
            "Forbidden",
            format!(
                "{qualified} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated"
            ),
        )
        .with_details(details))
    }

    /// DELETE of the namespace `value` (at `key`): `Terminating`, then every object in it
    /// deleted, then the namespace itself once empty. Answers the terminating namespace.
    pub(super) fn terminate_namespace(
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
        if let Value::Object(root) = &mut value {
            root.insert("spec".to_owned(), json!({"finalizers": ["kubernetes"]}));
            let status = root.entry("status").or_insert_with(|| json!({}));
            if let Value::Object(status) = status {
                status.insert("phase".to_owned(), json!("Terminating"));
            }
        }
        let terminating = self.commit(rid, key, value, EventType::Modified);
        let namespaced: Vec<ResourceId> = self
            .served()
            .filter(|(_, info)| info.namespaced)
            .map(|(id, _)| id)
            .collect();
        for resource in namespaced {
            for object in self.snapshot(resource, Some(&name)) {
                // An Event deleted through one group is gone from the other already.
                let _ = self.delete(
                    resource,
                    Some(&name),
                    &object.name,
                    &Preconditions::default(),
                );
            }
        }
        self.finish_namespace_if_empty(&name);
        Deleted::Pending(terminating)
    }

    /// Removes the namespace `name` if it is terminating and holds no object any more.
    pub(super) fn finish_namespace_if_empty(&mut self, name: &str) {
        let Some((rid, namespace)) = self.namespace_object(name) else {
            return;
        };
        let value = namespace.value();
        if !metadata(&value).is_some_and(|m| m.contains_key("deletionTimestamp")) {
            return;
        }
        let empty = self
            .served()
            .filter(|(_, info)| info.namespaced)
            .all(|(id, _)| self.snapshot(id, Some(name)).is_empty());
        if empty {
            self.commit(rid, key_of(None, name), value, EventType::Deleted);
        }
    }
}
