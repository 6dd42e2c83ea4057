//! A Pod's `binding` subresource: the scheduler's one way to set `spec.nodeName`.

use serde_json::{Value, json};

use super::{EventType, ResourceId, State};
use crate::object::{key_of, now_timestamp};
use crate::status::ApiError;

impl State {
    /// A Pod's binding to `node`: sets `spec.nodeName` and the `PodScheduled` condition,
    /// as the real `BindingREST`. 404 for a missing Pod, the real 409 when it already
    /// has a node.
    pub(crate) fn bind(
        &mut self,
        rid: ResourceId,
        namespace: &str,
        name: &str,
        node: &str,
    ) -> Result<(), ApiError> {
        let info = self.resources[rid].clone();
        let key = key_of(Some(namespace), name);
        let old = self
            .get(rid, &key)
            .ok_or_else(|| ApiError::not_found(&info.plural, &info.group, name))?;
        let mut value = old.value();
        if let Some(assigned) = value
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        {
            return Err(ApiError::conflict_because(
                "pods/binding",
                "",
                name,
                &format!("pod {name} is already assigned to node {assigned:?}"),
            ));
        }
        if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("nodeName".to_owned(), Value::String(node.to_owned()));
        }
        if let Some(status) = value.get_mut("status").and_then(Value::as_object_mut) {
            let conditions = status.entry("conditions").or_insert_with(|| json!([]));
            if let Value::Array(conditions) = conditions {
                conditions.retain(|c| c["type"] != "PodScheduled");
                conditions.push(json!({"type": "PodScheduled", "status": "True",
                    "lastProbeTime": null, "lastTransitionTime": now_timestamp()}));
            }
        }
        self.commit(rid, key, value, EventType::Modified);
        Ok(())
    }
}
