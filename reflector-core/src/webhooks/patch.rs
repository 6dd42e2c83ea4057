//! The JSON Patch a defaulting hook's changes make: computed from the typed object
//! before and after the hook, applied to the object the API server sent.

use json_patch::{AddOperation, Patch, PatchOperation, ReplaceOperation};
use serde_json::Value;

/// The patch that turns `sent` (the object as the API server sent it) into `sent`
/// with the hook's changes: the changes are the difference between `before` and
/// `after` (the typed object serialized before and after the hook), so fields the
/// type does not know, or serializes otherwise (a `null` it writes, an absent field
/// it reads as a default), are left as sent.
///
/// A change of a member `sent` lacks (the type serializes a `null` there, and the
/// hook set it) becomes an `add`; when a change still does not apply, the patch is
/// from `sent` to `after` instead: whole, and still a valid patch of `sent`.
pub(crate) fn defaulting_patch(sent: &Value, before: &Value, after: &Value) -> Patch {
    let changes = json_patch::diff(before, after);
    if changes.0.is_empty() {
        return changes;
    }
    let target = apply_leniently(sent, changes).unwrap_or_else(|| after.clone());
    json_patch::diff(sent, &target)
}

/// `sent` with `changes` applied one by one, a `replace` of a member `sent` lacks
/// made an `add`, a `remove` of one skipped; `None` when a change still does not
/// apply (its parent is missing).
fn apply_leniently(sent: &Value, changes: Patch) -> Option<Value> {
    let mut target = sent.clone();
    for change in changes.0 {
        if json_patch::patch(&mut target, std::slice::from_ref(&change)).is_ok() {
            continue;
        }
        match change {
            PatchOperation::Replace(ReplaceOperation { path, value }) => {
                let add = PatchOperation::Add(AddOperation { path, value });
                json_patch::patch(&mut target, &[add]).ok()?;
            }
            PatchOperation::Remove(_) => {}
            _ => return None,
        }
    }
    Some(target)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn applied(sent: &Value, patch: &Patch) -> Value {
        let mut out = sent.clone();
        json_patch::patch(&mut out, patch).unwrap();
        out
    }

    #[test]
    fn unknown_fields_are_left_as_sent() {
        let sent = json!({"spec": {"a": 1, "unknown": true}});
        let before = json!({"spec": {"a": 1}});
        let after = json!({"spec": {"a": 1, "b": 2}});
        let patch = defaulting_patch(&sent, &before, &after);
        assert_eq!(
            applied(&sent, &patch),
            json!({"spec": {"a": 1, "b": 2, "unknown": true}})
        );
    }

    #[test]
    fn a_member_the_type_writes_as_null_is_added() {
        // The type serializes `b: null`, the API server sent no `b`: the hook's
        // `replace` of `/spec/b` becomes an `add`.
        let sent = json!({"spec": {"a": 1}});
        let before = json!({"spec": {"a": 1, "b": null}});
        let after = json!({"spec": {"a": 1, "b": 3}});
        let patch = defaulting_patch(&sent, &before, &after);
        assert_eq!(applied(&sent, &patch), json!({"spec": {"a": 1, "b": 3}}));
        // Unknown fields survive that too.
        let sent = json!({"spec": {"a": 1, "unknown": true}});
        let patch = defaulting_patch(&sent, &before, &after);
        assert_eq!(
            applied(&sent, &patch),
            json!({"spec": {"a": 1, "b": 3, "unknown": true}})
        );
    }

    #[test]
    fn no_change_no_patch() {
        let sent = json!({"spec": {"a": 1, "x": 0}});
        let typed = json!({"spec": {"a": 1}});
        assert!(defaulting_patch(&sent, &typed, &typed).0.is_empty());
    }
}
