//! Strategic merge patch (`application/strategic-merge-patch+json`), as the real
//! `strategicpatch.StrategicMergeMapPatch` applies it to built-in kinds: maps merge key by
//! key (`null` deletes), lists with a patch merge key (a Pod's `containers` by `name`,
//! their `ports` by `containerPort`, `env` by `name`, `volumeMounts` by `mountPath`, ...;
//! the keys server-side apply uses, see `list_type`) merge item by item, `finalizers`
//! merge as a set, every other list is replaced. The directives kubectl sends are
//! honoured: `$patch: replace|delete|merge` in a map or list item, `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>`, and `$setElementOrder/<field>` (which orders a
//! merged list).

use serde_json::{Map, Value};

use crate::list_type::{ListType, list_type};
use crate::status::ApiError;

/// The kind a patch applies to, for its lists' merge keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind<'a> {
    pub(crate) group: &'a str,
    pub(crate) kind: &'a str,
}

const DELETE_FROM: &str = "$deleteFromPrimitiveList/";
const SET_ORDER: &str = "$setElementOrder/";

/// Applies `patch` (a JSON object) to `target`.
pub(crate) fn apply(kind: Kind<'_>, target: &mut Value, patch: &Value) -> Result<(), ApiError> {
    let Value::Object(patch) = patch else {
        return Err(ApiError::bad_request(
            "error decoding patch: the patch must be a JSON object",
        ));
    };
    merge_map(kind, &mut Vec::new(), target, patch)
}

fn bad_directive(what: &str) -> ApiError {
    ApiError::bad_request(format!("invalid patch: {what}"))
}

fn merge_map(
    kind: Kind<'_>,
    path: &mut Vec<String>,
    target: &mut Value,
    patch: &Map<String, Value>,
) -> Result<(), ApiError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("delete") => {
            *target = Value::Object(Map::new());
            return Ok(());
        }
        Some("replace") => {
            let mut replaced = patch.clone();
            replaced.remove("$patch");
            strip_directives(&mut replaced);
            *target = Value::Object(replaced);
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(bad_directive(&format!("unknown patch type {other:?}"))),
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target_map) = target else {
        unreachable!("made an object above")
    };
    if let Some(retain) = patch.get("$retainKeys") {
        let keep: Vec<&str> = retain
            .as_array()
            .ok_or_else(|| bad_directive("$retainKeys must be a list"))?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        target_map.retain(|k, _| keep.contains(&k.as_str()));
    }
    for (key, value) in patch {
        if let Some(field) = key.strip_prefix(DELETE_FROM) {
            if let (Some(Value::Array(items)), Some(gone)) =
                (target_map.get_mut(field), value.as_array())
            {
                items.retain(|item| !gone.contains(item));
            }
            continue;
        }
        if key.starts_with('$') {
            continue;
        }
        if value.is_null() {
            target_map.remove(key);
            continue;
        }
        path.push(key.clone());
        let order = patch
            .get(&format!("{SET_ORDER}{key}"))
            .and_then(Value::as_array);
        let slot = target_map.entry(key.clone()).or_insert(Value::Null);
        match value {
            Value::Object(child) => merge_map(kind, path, slot, child)?,
            Value::Array(items) => merge_list(kind, path, slot, items, order)?,
            other => *slot = other.clone(),
        }
        path.pop();
    }
    Ok(())
}

fn merge_list(
    kind: Kind<'_>,
    path: &mut Vec<String>,
    target: &mut Value,
    patch: &[Value],
    order: Option<&Vec<Value>>,
) -> Result<(), ApiError> {
    let fields: Vec<&str> = path.iter().map(String::as_str).collect();
    let strategy = list_type(kind.group, kind.kind, &fields);
    // `{"$patch": "replace"}` among the items: the list is the other items.
    let replace = patch
        .iter()
        .any(|item| item.get("$patch").and_then(Value::as_str) == Some("replace"));
    if replace || !target.is_array() {
        let items = patch
            .iter()
            .filter(|item| item.get("$patch").is_none())
            .cloned()
            .map(|mut item| {
                if let Value::Object(m) = &mut item {
                    strip_directives(m);
                }
                item
            })
            .collect();
        *target = Value::Array(items);
        return Ok(());
    }
    let Value::Array(current) = target else {
        unreachable!("checked above")
    };
    match strategy {
        ListType::Atomic => {
            *current = patch.to_vec();
        }
        ListType::Set => {
            for item in patch {
                if !current.contains(item) {
                    current.push(item.clone());
                }
            }
        }
        ListType::Map(keys) => {
            let key = keys[0].name;
            for item in patch {
                let Some(wanted) = item.get(key) else {
                    return Err(ApiError::bad_request(format!(
                        "map: {item} does not contain declared merge key: {key}"
                    )));
                };
                let at = current.iter().position(|c| c.get(key) == Some(wanted));
                let directive = item.get("$patch").and_then(Value::as_str);
                match (at, directive) {
                    (Some(i), Some("delete")) => {
                        current.remove(i);
                    }
                    (None, Some("delete")) => {}
                    (Some(i), _) => {
                        if let Value::Object(child) = item {
                            merge_map(kind, path, &mut current[i], child)?;
                        }
                    }
                    (None, _) => {
                        let mut added = item.clone();
                        if let Value::Object(m) = &mut added {
                            strip_directives(m);
                        }
                        current.push(added);
                    }
                }
            }
            if let Some(order) = order {
                let rank = |item: &Value| {
                    order
                        .iter()
                        .position(|o| o.get(key).is_some() && o.get(key) == item.get(key))
                        .unwrap_or(usize::MAX)
                };
                current.sort_by_key(rank);
            }
        }
    }
    Ok(())
}

/// Removes directive keys (`$patch`, `$retainKeys`, ...) from an added map, at any depth.
fn strip_directives(map: &mut Map<String, Value>) {
    map.retain(|k, _| !k.starts_with('$'));
    for value in map.values_mut() {
        match value {
            Value::Object(child) => strip_directives(child),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(child) = item {
                        strip_directives(child);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const POD: Kind<'static> = Kind {
        group: "",
        kind: "Pod",
    };

    fn patched(mut target: Value, patch: Value) -> Value {
        apply(POD, &mut target, &patch).unwrap();
        target
    }

    #[test]
    fn containers_merge_by_name_and_other_lists_are_replaced() {
        let pod = json!({"metadata": {"finalizers": ["a"]}, "spec": {
            "containers": [{"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
                           {"name": "b", "image": "b:1"}],
            "tolerations": [{"key": "k"}]}});
        let out = patched(
            pod,
            json!({"metadata": {"finalizers": ["b"]}, "spec": {
                "containers": [{"name": "b", "image": "b:2"},
                               {"name": "a", "env": [{"name": "Y", "value": "2"}]}],
                "tolerations": [{"key": "t"}]}}),
        );
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {
                "containers": [{"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
                               {"name": "b", "image": "b:2"}],
                "tolerations": [{"key": "t"}]}})
        );
    }

    #[test]
    fn directives_delete_replace_retain_and_order() {
        let pod = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}});
        let out = patched(
            pod,
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"],
                    "labels": {"$patch": "replace", "z": "3"}},
                "spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                    "containers": [{"name": "b", "$patch": "delete"}]}}),
        );
        assert_eq!(
            out,
            json!({"metadata": {"finalizers": ["b"], "labels": {"z": "3"}},
                "spec": {"containers": [{"name": "c"}, {"name": "a"}]}})
        );
        let out = patched(
            json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }

    #[test]
    fn an_item_without_its_merge_key_is_refused() {
        let mut pod = json!({"spec": {"containers": [{"name": "a"}]}});
        let err = apply(
            POD,
            &mut pod,
            &json!({"spec": {"containers": [{"image": "x"}]}}),
        )
        .unwrap_err();
        assert_eq!(err.code, 400);
    }
}
