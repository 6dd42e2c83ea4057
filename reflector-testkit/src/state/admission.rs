//! The two places a write meets its admission webhooks (see `webhooks::capture`): the
//! admission point, where the real server runs mutating admission, and the commit.
//! Without a capture (no webhook configuration, or a write the server makes itself) both
//! do nothing.

use std::sync::Arc;

use serde_json::Value;

use super::{EventType, ResourceId, State};
use kube::core::admission::Operation;

use crate::object::{meta_str, metadata_mut};
use crate::webhooks::capture::{Pass, Pending, Seen};

/// What the commit does with a write under a capture.
pub(super) enum Intercept {
    /// No capture, or not the request's first commit: store it as it is.
    Proceed,
    /// Store this instead (what the validating webhooks were shown).
    Store(Pending),
    /// Store nothing: answer the object as a dry run would.
    Dry,
}

impl State {
    /// The admission point of a write: `object` is the object submitted, which the
    /// mutating webhooks' result replaces; `seen` describes the write (called only under
    /// a capture, with the object).
    pub(crate) fn admission_point(
        &mut self,
        object: Option<&mut Value>,
        seen: impl FnOnce(&State, Option<&Value>) -> Seen,
    ) {
        let Some(mut capture) = self.admission.take() else {
            return;
        };
        if !capture.point_done {
            capture.point_done = true;
            let now = seen(self, object.as_deref());
            match capture.pass {
                Pass::Record => capture.seen = Some(now),
                Pass::Replay | Pass::Commit => {
                    if capture.seen.as_ref().is_some_and(|s| same_write(s, &now)) {
                        if let (Some(mutated), Some(object)) = (&capture.mutated, object) {
                            object.clone_from(mutated);
                        }
                    } else {
                        capture.stale = true;
                        self.dry_run = true;
                    }
                }
            }
        }
        self.admission = Some(capture);
    }

    /// What the admission point of a write of `rid` sees.
    pub(crate) fn seen(
        &self,
        rid: ResourceId,
        operation: Operation,
        subresource: &'static str,
        object: Option<&Value>,
        old_object: Option<&Value>,
    ) -> Seen {
        let info = &self.resources[rid];
        let either = |field: &str| {
            object
                .and_then(|o| meta_str(o, field))
                .or_else(|| old_object.and_then(|o| meta_str(o, field)))
                .map(str::to_owned)
        };
        let namespace = either("namespace").filter(|_| info.namespaced);
        let namespace_labels = if info.group.is_empty() && info.plural == "namespaces" {
            object
                .or(old_object)
                .and_then(|o| o.pointer("/metadata/labels"))
                .and_then(Value::as_object)
                .cloned()
                .or_else(|| Some(serde_json::Map::new()))
        } else {
            namespace
                .as_deref()
                .and_then(|ns| self.namespace_labels(ns))
        };
        Seen {
            operation,
            rid,
            subresource,
            name: either("name").unwrap_or_default(),
            namespace,
            object: object.cloned(),
            old_object: old_object.cloned(),
            namespace_labels,
            kind: None,
            scale: None,
        }
    }

    /// The labels of namespace `name`, if it exists.
    pub(crate) fn namespace_labels(&self, name: &str) -> Option<serde_json::Map<String, Value>> {
        let rid = self.find("", "v1", "namespaces")?;
        let namespace = self.get(rid, name)?;
        Some(
            namespace
                .value()
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        )
    }

    /// Decides what `commit` does with a write under a capture.
    pub(super) fn intercept_commit(
        &mut self,
        rid: ResourceId,
        key: &Arc<str>,
        value: &Value,
        event_type: EventType,
    ) -> Intercept {
        let Some(mut capture) = self.admission.take() else {
            return Intercept::Proceed;
        };
        let intercept = if capture.commit_done {
            Intercept::Proceed
        } else {
            capture.commit_done = true;
            match capture.pass {
                Pass::Record | Pass::Replay => {
                    capture.pending = Some(Pending {
                        rid,
                        key: key.clone(),
                        value: value.clone(),
                        event_type,
                        base_rv: self.get(rid, key).map(|o| o.rv),
                    });
                    Intercept::Dry
                }
                Pass::Commit => match capture.pending.take() {
                    Some(pending)
                        if pending.rid == rid
                            && pending.event_type == event_type
                            && self.get(rid, &pending.key).map(|o| o.rv) == pending.base_rv =>
                    {
                        Intercept::Store(pending)
                    }
                    _ => {
                        capture.stale = true;
                        self.dry_run = true;
                        Intercept::Dry
                    }
                },
            }
        };
        self.admission = Some(capture);
        intercept
    }
}

/// Whether two passes saw the same write at the admission point (`managedFields` aside:
/// an apply stamps them with the time).
fn same_write(a: &Seen, b: &Seen) -> bool {
    let comparable = |v: &Option<Value>| {
        v.clone().map(|mut v| {
            if v.get("metadata").is_some() {
                metadata_mut(&mut v).remove("managedFields");
            }
            v
        })
    };
    a.operation == b.operation
        && a.rid == b.rid
        && a.name == b.name
        && a.namespace == b.namespace
        && comparable(&a.object) == comparable(&b.object)
        && comparable(&a.old_object) == comparable(&b.old_object)
}
