//! Server-side apply (`PATCH` with `application/apply-patch+yaml`), as the real
//! fieldmanager and structured-merge-diff: the applied configuration is merged into the
//! live object (maps by key, keyed lists by item, other lists replaced), the applier's
//! `Apply` entry becomes exactly the fields it applied, fields it applied before and no
//! longer applies are removed unless another manager owns them, and changing a field
//! another manager owns is a 409 `Conflict` unless `force=true`.

use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::field_set::{FieldSet, Path, PathElement, path_string};
use crate::handlers::ObjectWrite;
use crate::list_type::ListType;
use crate::managed_fields::{self, Entry, Operation, Scope, Writer};
use crate::object::{key_of, metadata, metadata_mut};
use crate::query::{param, parse_bool};
use crate::router::json_response;
use crate::status::ApiError;

/// `application/apply-patch+yaml` (the body may be YAML or JSON, which is YAML too).
pub(crate) const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The manager the real server gives the fields of an object that had no
/// `managedFields` when it was first applied to.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The real server's bound on `fieldManager` (`FieldManagerMaxLength`).
const MAX_FIELD_MANAGER: usize = 128;

/// `fieldManager` and `force` of an apply, checked as the real `ValidatePatchOptions`.
struct ApplyOptions {
    manager: String,
    force: bool,
}

impl ApplyOptions {
    fn parse(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        let force = parse_bool(pairs, "force")?.unwrap_or(false);
        let manager = param(pairs, "fieldManager").unwrap_or_default().to_owned();
        if manager.is_empty() {
            return Err(invalid_patch_options(
                "fieldManager",
                "FieldValueRequired",
                "Required value: is required for apply patch",
            ));
        }
        if manager.len() > MAX_FIELD_MANAGER {
            return Err(invalid_patch_options(
                "fieldManager",
                "FieldValueTooLong",
                &format!("Too long: may not be more than {MAX_FIELD_MANAGER} bytes"),
            ));
        }
        Ok(Self { manager, force })
    }
}

/// The real 422 for invalid `PatchOptions` (no object name, group `meta.k8s.io`).
pub(crate) fn invalid_patch_options(field: &str, reason: &str, detail: &str) -> ApiError {
    ApiError::new(
        422,
        "Invalid",
        format!("PatchOptions.meta.k8s.io \"\" is invalid: {field}: {detail}"),
    )
    .with_details(json!({
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [{"reason": reason, "message": detail, "field": field}],
    }))
}

/// Decodes an apply body: JSON, else YAML; a mapping at the top.
fn decode(bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value = match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => value,
        Err(_) => serde_norway::from_slice::<Value>(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
    };
    match value {
        Value::Object(map) => Ok(map),
        other => Err(ApiError::bad_request(format!(
            "error decoding YAML: the applied configuration is not a mapping: {other}"
        ))),
    }
}

/// Removes `null` map values: an applied `null` (kubectl's `creationTimestamp: null`)
/// sets nothing here.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// `PATCH` with an apply body: creates the object when absent (201), else applies (200).
pub(crate) fn apply(write: ObjectWrite<'_>) -> Result<Response, ApiError> {
    let ObjectWrite {
        shared,
        repr,
        rid,
        namespace,
        name,
        status: status_write,
        pairs,
        body,
    } = write;
    let options = ApplyOptions::parse(pairs)?;
    let mut config = Value::Object(decode(&body.bytes)?);
    drop_nulls(&mut config);
    let mut state = shared.write_state(pairs);
    let info = state.resources[rid].clone();
    let applied_version = config.get("apiVersion").and_then(Value::as_str);
    if applied_version != Some(info.api_version().as_str()) {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {}, expected: {}",
            applied_version.unwrap_or_default(),
            info.api_version()
        )));
    }
    match config.get("kind").and_then(Value::as_str) {
        Some(kind) if kind == info.kind => {}
        kind => {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): kind {:?} in the applied configuration",
                info.kind,
                kind.unwrap_or_default()
            )));
        }
    }
    if metadata(&config).is_some_and(|m| m.contains_key("managedFields")) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    if let Some(applied_name) = metadata(&config)
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        && applied_name != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({applied_name}) does not match the name on the URL ({name})"
        )));
    }
    refuse_undeclared_fields(&state, rid, namespace, name, &config)?;
    let scope = Scope::new(&info, status_write);
    let key = key_of(namespace.filter(|_| info.namespaced), name);
    let live = state.get(rid, &key);
    if live.is_none() && status_write {
        return Err(ApiError::not_found(&info.plural, &info.group, name));
    }
    let live_value = live.as_ref().map_or_else(
        || managed_fields::empty_object(&info),
        |object| object.value(),
    );
    let applied = scope.visible(&config);
    let applied_set = scope.field_set(&applied).map_err(|e| {
        ApiError::internal(&format!(
            "failed to create typed patch object ({}/{name}; {}): {e}",
            namespace.unwrap_or_default(),
            info.api_version()
        ))
    })?;
    let mut entries = managed_fields::decode(&live_value)
        .map_err(|e| ApiError::internal(&format!("failed to decode managed fields: {e}")))?;
    if entries.is_empty() && live.is_some() {
        // The real `skipNonAppliedManager`: fields set before anyone applied belong to
        // `before-first-apply`.
        let comparison = managed_fields::compare(
            &scope,
            &scope.visible(&managed_fields::empty_object(&info)),
            &scope.visible(&live_value),
        );
        managed_fields::record_update(&mut entries, &scope, BEFORE_FIRST_APPLY, &comparison);
    }

    let mut merged = live_value.clone();
    metadata_mut(&mut merged).remove("managedFields");
    merge(&scope, &mut merged, &config, &mut Vec::new());
    if live.is_none() {
        metadata_mut(&mut merged).remove("resourceVersion");
        metadata_mut(&mut merged).insert("name".to_owned(), Value::String(name.to_owned()));
    }

    let subresource = scope.subresource();
    let position = entries
        .iter()
        .position(|e| e.is(&options.manager, Operation::Apply, "", subresource));
    let last_applied = position.map(|i| entries[i].set.clone());
    let applier = match position {
        Some(i) => i,
        None => {
            entries.push(Entry {
                manager: options.manager.clone(),
                operation: Operation::Apply,
                api_version: info.api_version(),
                subresource: subresource.to_owned(),
                time: None,
                set: FieldSet::default(),
            });
            entries.len() - 1
        }
    };
    entries[applier].set = applied_set;
    entries[applier].api_version = info.api_version();
    if let Some(last) = last_applied {
        let owned = entries
            .iter()
            .fold(FieldSet::default(), |all, e| all.union(&e.set));
        prune(&scope, &mut merged, &last.difference(&owned), &owned);
    }

    let comparison =
        managed_fields::compare(&scope, &scope.visible(&live_value), &scope.visible(&merged));
    let changed = comparison.changed();
    let conflicts: Vec<(&Entry, FieldSet)> = entries
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != applier)
        .map(|(_, e)| (e, e.set.intersection(&changed)))
        .filter(|(_, set)| !set.is_empty())
        .collect();
    if !conflicts.is_empty() && !options.force {
        return Err(conflict_error(conflicts));
    }
    for (i, entry) in entries.iter_mut().enumerate() {
        if i != applier {
            entry.set = entry
                .set
                .difference(&changed)
                .difference(&comparison.removed);
        }
    }
    let mut live_without_fields = live_value.clone();
    metadata_mut(&mut live_without_fields).remove("managedFields");
    if merged != live_without_fields {
        entries[applier].time = Some(crate::object::now_timestamp());
    }
    managed_fields::encode(&mut merged, entries);

    match live {
        None => {
            let created = state.create(rid, namespace, merged, Writer::Apply)?;
            Ok(json_response(201, repr.render(&created)))
        }
        Some(_) => {
            let updated =
                state.update(rid, namespace, name, merged, status_write, Writer::Apply)?;
            Ok(json_response(200, repr.render(&updated)))
        }
    }
}

/// The real 500 of an applied configuration of a custom object with a field its schema
/// does not declare (structured-merge-diff cannot type it), whatever `fieldValidation`
/// says: `failed to create typed patch object (ns/name; group/version, Kind=K):
/// .spec.bogus: field not declared in schema`.
fn refuse_undeclared_fields(
    state: &crate::state::State,
    rid: crate::state::ResourceId,
    namespace: Option<&str>,
    name: &str,
    config: &Value,
) -> Result<(), ApiError> {
    let Some(schema) = state.custom.served(rid).and_then(|s| s.schema.clone()) else {
        return Ok(());
    };
    let pruned = crate::schema_validation::admit(&schema, &mut config.clone()).pruned;
    let Some(first) = pruned.iter().find(|p| !p.starts_with("metadata.")) else {
        return Ok(());
    };
    let info = &state.resources[rid];
    Err(ApiError::internal(&format!(
        "failed to create typed patch object ({}/{name}; {}, Kind={}): .{first}: field not declared in schema",
        namespace.unwrap_or_default(),
        info.api_version(),
        info.kind
    )))
}

/// The real `NewConflictError`: 409 `Conflict` naming each manager and field, with one
/// `FieldManagerConflict` cause per field.
fn conflict_error(mut conflicts: Vec<(&Entry, FieldSet)>) -> ApiError {
    conflicts.sort_by(|(a, _), (b, _)| {
        (&a.manager, a.operation, &a.api_version, &a.subresource).cmp(&(
            &b.manager,
            b.operation,
            &b.api_version,
            &b.subresource,
        ))
    });
    let mut causes = Vec::new();
    let mut lines = Vec::new();
    for (entry, set) in &conflicts {
        let manager = entry.display();
        lines.push(format!("conflicts with {manager}:"));
        for path in set.paths() {
            let field = path_string(&path);
            lines.push(format!("- {field}"));
            causes.push(json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with {manager}"),
                "field": field,
            }));
        }
    }
    let message = match causes.as_slice() {
        [only] => format!(
            "Apply failed with 1 conflict: {}: {}",
            only["message"].as_str().unwrap_or_default(),
            only["field"].as_str().unwrap_or_default()
        ),
        all => format!(
            "Apply failed with {} conflicts: {}",
            all.len(),
            lines.join("\n")
        ),
    };
    ApiError::new(409, "Conflict", message).with_details(json!({"causes": causes}))
}

/// Merges an applied configuration into `live`: maps key by key, keyed lists item by item
/// (new items appended), anything else replaced.
fn merge(scope: &Scope<'_>, live: &mut Value, applied: &Value, names: &mut Vec<String>) {
    match (live, applied) {
        (Value::Object(live), Value::Object(applied)) => {
            for (key, value) in applied {
                names.push(key.clone());
                match live.get_mut(key) {
                    Some(existing) => merge(scope, existing, value, names),
                    None => {
                        live.insert(key.clone(), value.clone());
                    }
                }
                names.pop();
            }
        }
        (live @ Value::Array(_), Value::Array(applied_items)) => {
            let list = scope.list_type(&name_refs(names));
            let Value::Array(live_items) = live else {
                return;
            };
            let keyed = (list != ListType::Atomic)
                .then(|| {
                    let live_keys = Scope::elements_of(live_items, list).ok()?;
                    let applied_keys = Scope::elements_of(applied_items, list).ok()?;
                    Some((live_keys, applied_keys))
                })
                .flatten();
            let Some((mut live_keys, applied_keys)) = keyed else {
                *live = applied.clone();
                return;
            };
            for (element, item) in applied_keys.into_iter().zip(applied_items) {
                match live_keys.iter().position(|k| *k == element) {
                    Some(i) if matches!(list, ListType::Map(_)) => {
                        merge(scope, &mut live_items[i], item, names);
                    }
                    Some(_) => {}
                    None => {
                        live_items.push(item.clone());
                        live_keys.push(element);
                    }
                }
            }
        }
        (live, applied) => *live = applied.clone(),
    }
}

fn name_refs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

/// The field names along `path` (list items left out), for list types.
fn names_along(path: &[PathElement]) -> Vec<&str> {
    path.iter()
        .filter_map(|e| match e {
            PathElement::Field(name) => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

/// The value at `path`, if there is one.
fn locate<'v>(
    scope: &Scope<'_>,
    value: &'v mut Value,
    path: &[PathElement],
) -> Option<&'v mut Value> {
    let mut current = value;
    for (depth, element) in path.iter().enumerate() {
        current = match (current, element) {
            (Value::Object(map), PathElement::Field(name)) => map.get_mut(name)?,
            (Value::Array(items), PathElement::Index(i)) => items.get_mut(*i)?,
            (Value::Array(items), element) => {
                let list = scope.list_type(&names_along(&path[..depth]));
                items
                    .iter_mut()
                    .find(|item| Scope::element_of(item, list).as_ref() == Ok(element))?
            }
            _ => return None,
        };
    }
    Some(current)
}

/// Removes the value at `path`; whether there was one.
fn remove_at(scope: &Scope<'_>, value: &mut Value, path: &[PathElement]) -> bool {
    let Some((last, parent_path)) = path.split_last() else {
        return false;
    };
    let list = scope.list_type(&names_along(parent_path));
    match (locate(scope, value, parent_path), last) {
        (Some(Value::Object(map)), PathElement::Field(name)) => map.remove(name).is_some(),
        (Some(Value::Array(items)), PathElement::Index(i)) if *i < items.len() => {
            items.remove(*i);
            true
        }
        (Some(Value::Array(items)), element) => {
            match items
                .iter()
                .position(|item| Scope::element_of(item, list).as_ref() == Ok(element))
            {
                Some(i) => {
                    items.remove(i);
                    true
                }
                None => false,
            }
        }
        _ => false,
    }
}

/// Removes the fields in `gone` (applied before, owned by no one now) from `merged`,
/// outermost first, unless someone owns something below them or they are the key of a
/// list item that stays; then the objects this emptied, up to (not including) `metadata`
/// and the root, unless owned.
fn prune(scope: &Scope<'_>, merged: &mut Value, gone: &FieldSet, owned: &FieldSet) {
    let mut removed: Vec<Path> = Vec::new();
    for path in gone.paths() {
        let under_removed = removed.iter().any(|r| path.starts_with(r));
        if under_removed || owned.has_prefix(&path) || is_item_key(&path) {
            continue;
        }
        if !remove_at(scope, merged, &path) {
            continue;
        }
        for depth in (1..path.len()).rev() {
            let parent = &path[..depth];
            let is_metadata = matches!(parent, [PathElement::Field(f)] if f == "metadata");
            let emptied = matches!(parent.last(), Some(PathElement::Field(_)))
                && matches!(locate(scope, merged, parent), Some(Value::Object(m)) if m.is_empty());
            if is_metadata || !emptied || owned.has_prefix(parent) {
                break;
            }
            remove_at(scope, merged, parent);
        }
        removed.push(path);
    }
}

/// Whether `path` is a key field of an associative list item (`[name="c"].name`).
fn is_item_key(path: &[PathElement]) -> bool {
    match path {
        [.., PathElement::Key(key), PathElement::Field(field)] => {
            serde_json::from_str::<Map<String, Value>>(key).is_ok_and(|k| k.contains_key(field))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceInfo;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn merge_keeps_live_items_and_merges_applied_ones_by_key() {
        let info = ResourceInfo::of::<Pod>(true);
        let scope = Scope::new(&info, false);
        let mut live = json!({"spec": {"containers": [
            {"name": "a", "image": "1", "args": ["x"]},
            {"name": "b", "image": "2"}],
            "tolerations": [{"key": "t"}]}});
        let applied = json!({"spec": {"containers": [
            {"name": "b", "image": "3"}, {"name": "c", "image": "4"}],
            "tolerations": [{"key": "u"}]}});
        merge(&scope, &mut live, &applied, &mut Vec::new());
        assert_eq!(
            live,
            json!({"spec": {"containers": [
                {"name": "a", "image": "1", "args": ["x"]},
                {"name": "b", "image": "3"},
                {"name": "c", "image": "4"}],
                "tolerations": [{"key": "u"}]}})
        );
        let b = PathElement::Key(r#"{"name":"b"}"#.to_owned());
        let path = [
            PathElement::Field("spec".to_owned()),
            PathElement::Field("containers".to_owned()),
            b,
        ];
        assert!(remove_at(&scope, &mut live, &path));
        assert_eq!(live["spec"]["containers"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn prune_removes_maps_it_empties_but_not_metadata() {
        let info = ResourceInfo::of::<Pod>(true);
        let scope = Scope::new(&info, false);
        let mut merged = json!({"metadata": {"labels": {"a": "1"}}, "data": {"k": "v"}});
        let mut gone = FieldSet::default();
        let field = |s: &str| PathElement::Field(s.to_owned());
        gone.insert(&[field("metadata"), field("labels"), field("a")]);
        gone.insert(&[field("data"), field("k")]);
        prune(&scope, &mut merged, &gone, &FieldSet::default());
        assert_eq!(merged, json!({"metadata": {}}));
    }
}
