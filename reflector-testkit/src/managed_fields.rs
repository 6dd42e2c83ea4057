//! `metadata.managedFields`, kept on every write as the real fieldmanager does: which
//! field manager owns which fields (a [`FieldSet`] per manager), what a write added,
//! changed or removed ([`compare`]), and the bookkeeping of non-apply writes
//! ([`track_update`]). Server-side apply itself is in `apply.rs`.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::field_set::{FieldSet, Path, PathElement};
use crate::list_type::{ListType, list_type};
use crate::object::{metadata, metadata_mut, now_timestamp};
use crate::resource::ResourceInfo;

/// How a write's `managedFields` are kept.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Writer<'a> {
    /// A create, update or non-apply patch: the changed fields go to this manager's
    /// `Update` entry.
    Update(&'a str),
    /// A server-side apply or a `/scale` write: the object already carries the
    /// `managedFields` computed for it.
    Computed,
}

/// `Apply` or `Update`, as in `ManagedFieldsEntry.operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Operation {
    Apply,
    Update,
}

/// One `managedFields` entry, decoded.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// `""` for the main resource, `"status"` for status writes.
    pub subresource: String,
    /// The entry's `time`, kept as the JSON timestamp.
    pub time: Option<Value>,
    pub set: FieldSet,
}

impl Entry {
    /// Whether this entry is the one of `manager` for `operation` on `subresource`: the
    /// real manager identifier, in which the apiVersion counts for `Update` entries only.
    pub(crate) fn is(
        &self,
        manager: &str,
        operation: Operation,
        api_version: &str,
        subresource: &str,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource == subresource
            && (operation == Operation::Apply || self.api_version == api_version)
    }

    /// The manager as the real conflict messages print it: `"mgr"`, then
    /// ` with subresource "status"` and, for `Update` entries, ` using v1`.
    pub(crate) fn display(&self) -> String {
        let mut out = crate::status::go_quote(&self.manager);
        if !self.subresource.is_empty() {
            out.push_str(" with subresource ");
            out.push_str(&crate::status::go_quote(&self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(" using ");
            out.push_str(&self.api_version);
        }
        out
    }
}

/// Where a write lands, which decides what its managers can own: a main-resource write of
/// a resource with a status subresource owns nothing under `status`; a status write owns
/// only `status`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub info: &'a ResourceInfo,
    pub status_write: bool,
}

impl<'a> Scope<'a> {
    /// The scope of a write to `info`'s main resource or, with `status_write`, its status.
    pub(crate) const fn new(info: &'a ResourceInfo, status_write: bool) -> Self {
        Self { info, status_write }
    }

    /// The subresource of the entries written in this scope.
    pub(crate) fn subresource(&self) -> &'static str {
        if self.status_write { "status" } else { "" }
    }

    /// The part of `value` managers in this scope can own, without `managedFields`.
    pub(crate) fn visible(&self, value: &Value) -> Value {
        let Value::Object(map) = value else {
            return Value::Object(Map::new());
        };
        if self.status_write {
            let mut out = Map::new();
            if let Some(status) = map.get("status") {
                out.insert("status".to_owned(), status.clone());
            }
            return Value::Object(out);
        }
        let mut out = map.clone();
        if self.info.status_subresource {
            out.remove("status");
        }
        if let Some(Value::Object(meta)) = out.get_mut("metadata") {
            meta.remove("managedFields");
        }
        Value::Object(out)
    }

    /// The list type of the list at `names`.
    pub(crate) fn list_type(&self, names: &[&str]) -> ListType {
        list_type(&self.info.group, &self.info.kind, names)
    }

    /// The path element of one item of a keyed list, or why it has none.
    pub(crate) fn element_of(item: &Value, list: ListType) -> Result<PathElement, String> {
        match list {
            ListType::Atomic => Err("atomic lists have no item keys".to_owned()),
            ListType::Set => match item {
                Value::Array(_) | Value::Object(_) => {
                    Err(format!("set item {item} is not a scalar"))
                }
                scalar => Ok(PathElement::Value(scalar.to_string())),
            },
            ListType::Map(keys) => {
                let Value::Object(fields) = item else {
                    return Err(format!("associative list item {item} is not an object"));
                };
                let mut key = Map::new();
                for field in keys {
                    let value = match (fields.get(field.name), field.default) {
                        (Some(v), _) if !v.is_null() => v.clone(),
                        (_, Some(default)) => Value::String(default.to_owned()),
                        _ => {
                            return Err(format!(
                                "associative list with keys has an element that omits key field {:?} (and doesn't have default value)",
                                field.name
                            ));
                        }
                    };
                    key.insert(field.name.to_owned(), value);
                }
                Ok(PathElement::Key(Value::Object(key).to_string()))
            }
        }
    }

    /// The path elements of every item of a keyed list; an error for an item without its
    /// keys or a key seen twice (the real typed conversion's errors).
    pub(crate) fn elements_of(items: &[Value], list: ListType) -> Result<Vec<PathElement>, String> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let element = Self::element_of(item, list).map_err(|e| format!("element {i}: {e}"))?;
            if !seen.insert(element.clone()) {
                return Err(format!(
                    "duplicate entries for key {}",
                    crate::field_set::path_string(std::slice::from_ref(&element))
                ));
            }
            out.push(element);
        }
        Ok(out)
    }

    /// The fields `value` sets (the real `ToFieldSet`): every scalar, empty object, atomic
    /// list and keyed-list item. Errors name the list whose items lack keys.
    pub(crate) fn field_set(&self, value: &Value) -> Result<FieldSet, String> {
        let mut set = FieldSet::default();
        self.collect(value, &mut Vec::new(), &mut Vec::new(), &mut set)?;
        Ok(strip(set))
    }

    fn collect<'v>(
        &self,
        value: &'v Value,
        path: &mut Path,
        names: &mut Vec<&'v str>,
        out: &mut FieldSet,
    ) -> Result<(), String> {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, child) in map {
                    path.push(PathElement::Field(key.clone()));
                    names.push(key);
                    self.collect(child, path, names, out)?;
                    names.pop();
                    path.pop();
                }
            }
            Value::Array(items) => match self.list_type(names) {
                ListType::Atomic => out.insert(path),
                list => {
                    let elements = Self::elements_of(items, list)
                        .map_err(|e| format!("{}: {e}", crate::field_set::path_string(path)))?;
                    for (element, item) in elements.into_iter().zip(items) {
                        path.push(element);
                        if matches!(list, ListType::Map(_)) {
                            self.collect(item, path, names, out)?;
                        }
                        out.insert(path);
                        path.pop();
                    }
                }
            },
            _ => out.insert(path),
        }
        Ok(())
    }
}

/// What a write did, as the real `typed.Comparison`.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Added or modified.
    pub(crate) fn changed(&self) -> FieldSet {
        strip(self.added.union(&self.modified))
    }
}

/// Compares two objects (already cut to a [`Scope`]'s visible part).
pub(crate) fn compare(scope: &Scope<'_>, lhs: &Value, rhs: &Value) -> Comparison {
    let mut out = Comparison::default();
    compare_at(
        scope,
        Some(lhs),
        Some(rhs),
        &mut Vec::new(),
        &mut Vec::new(),
        &mut out,
    );
    out
}

fn compare_at<'v>(
    scope: &Scope<'_>,
    lhs: Option<&'v Value>,
    rhs: Option<&'v Value>,
    path: &mut Path,
    names: &mut Vec<&'v str>,
    out: &mut Comparison,
) {
    let object_or_absent = |v: Option<&Value>| v.is_none_or(Value::is_object);
    if object_or_absent(lhs) && object_or_absent(rhs) {
        let left = lhs.and_then(Value::as_object);
        let right = rhs.and_then(Value::as_object);
        if left.is_none_or(Map::is_empty) && right.is_none_or(Map::is_empty) {
            leaf(lhs, rhs, path, out);
            return;
        }
        let keys: BTreeSet<&'v String> =
            left.into_iter().chain(right).flat_map(Map::keys).collect();
        for key in keys {
            path.push(PathElement::Field(key.clone()));
            names.push(key);
            let (l, r) = (
                left.and_then(|m| m.get(key)),
                right.and_then(|m| m.get(key)),
            );
            compare_at(scope, l, r, path, names, out);
            names.pop();
            path.pop();
        }
        added_or_removed(lhs, rhs, path, out);
        return;
    }
    let array_or_absent = |v: Option<&Value>| v.is_none_or(Value::is_array);
    let list = scope.list_type(names);
    if array_or_absent(lhs) && array_or_absent(rhs) && list != ListType::Atomic {
        let keyed = |v: Option<&'v Value>| match v.and_then(Value::as_array) {
            Some(items) => Scope::elements_of(items, list)
                .ok()
                .map(|elements| elements.into_iter().zip(items).collect::<Vec<_>>()),
            None => Some(Vec::new()),
        };
        if let (Some(left), Some(right)) = (keyed(lhs), keyed(rhs)) {
            let elements: BTreeSet<&PathElement> =
                left.iter().chain(&right).map(|(e, _)| e).collect();
            let find = |side: &[(PathElement, &'v Value)], e: &PathElement| {
                side.iter().find(|(k, _)| k == e).map(|(_, v)| *v)
            };
            for element in elements {
                path.push(element.clone());
                let (l, r) = (find(&left, element), find(&right, element));
                if matches!(list, ListType::Map(_)) {
                    compare_at(scope, l, r, path, names, out);
                } else {
                    leaf(l, r, path, out);
                }
                path.pop();
            }
            added_or_removed(lhs, rhs, path, out);
            return;
        }
    }
    leaf(lhs, rhs, path, out);
}

fn leaf(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(l), Some(r)) if l != r => out.modified.insert(path),
        _ => {}
    }
}

fn added_or_removed(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (lhs, rhs) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        _ => {}
    }
}

/// Removes the fields no manager owns however they are written, as the real
/// `stripMetaManager`: `apiVersion`, `kind`, `metadata` itself and its server-set fields.
pub(crate) fn strip(mut set: FieldSet) -> FieldSet {
    let field = |name: &str| PathElement::Field(name.to_owned());
    set.remove(&[field("apiVersion")]);
    set.remove(&[field("kind")]);
    set.remove(&[field("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.remove(&[field("metadata"), field(name)]);
    }
    set
}

/// An empty object of the resource's type, as the real create path's `New()` gives the
/// fieldmanager: a typed object serializes its non-pointer structs (`metadata`, a Pod's
/// `spec` and `status`, ...), a custom resource nothing.
pub(crate) fn empty_object(info: &ResourceInfo) -> Value {
    if info.unstructured {
        return json!({});
    }
    let mut empty = json!({"metadata": {}});
    if !info.group.is_empty() {
        return empty;
    }
    match info.kind.as_str() {
        "Pod" => {
            empty["spec"] = json!({"containers": null});
            empty["status"] = json!({});
        }
        "Node" | "Namespace" => {
            empty["spec"] = json!({});
            empty["status"] = json!({});
        }
        _ => {}
    }
    empty
}

/// Decodes `metadata.managedFields` (absent: none); the error says what is malformed.
pub(crate) fn decode(value: &Value) -> Result<Vec<Entry>, String> {
    let Some(list) = metadata(value).and_then(|m| m.get("managedFields")) else {
        return Ok(Vec::new());
    };
    if list.is_null() {
        return Ok(Vec::new());
    }
    let Value::Array(items) = list else {
        return Err("managedFields is not a list".to_owned());
    };
    let mut entries: Vec<Entry> = Vec::with_capacity(items.len());
    for item in items {
        let text = |f: &str| item.get(f).and_then(Value::as_str).unwrap_or_default();
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            other => return Err(format!("unknown operation {other:?}")),
        };
        match (text("fieldsType"), item.get("fieldsV1")) {
            ("FieldsV1", _) | ("", None) => {}
            (other, _) => return Err(format!("unknown fieldsType {other:?}")),
        }
        let set = match item.get("fieldsV1") {
            Some(fields) => FieldSet::from_fields_v1(fields)?,
            None => FieldSet::default(),
        };
        let entry = Entry {
            manager: text("manager").to_owned(),
            operation,
            api_version: text("apiVersion").to_owned(),
            subresource: text("subresource").to_owned(),
            time: item.get("time").filter(|t| !t.is_null()).cloned(),
            set,
        };
        let same = entries.iter_mut().find(|e| {
            e.is(
                &entry.manager,
                entry.operation,
                &entry.api_version,
                &entry.subresource,
            )
        });
        match same {
            Some(existing) => existing.set = existing.set.union(&entry.set),
            None => entries.push(entry),
        }
    }
    Ok(entries)
}

/// Writes `entries` (those owning something) into `value`'s `metadata.managedFields` in
/// the real order: `Apply` before `Update`, then by time, manager, apiVersion and
/// subresource. No entries: no `managedFields`.
pub(crate) fn encode(value: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.set.is_empty());
    let meta = metadata_mut(value);
    if entries.is_empty() {
        meta.remove("managedFields");
        return;
    }
    entries.sort_by(|a, b| {
        let time = |e: &Entry| e.time.as_ref().and_then(Value::as_str).map(str::to_owned);
        (
            a.operation,
            time(a),
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                time(b),
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let list = entries
        .into_iter()
        .map(|e| {
            let mut entry = json!({
                "manager": e.manager,
                "operation": match e.operation {
                    Operation::Apply => "Apply",
                    Operation::Update => "Update",
                },
                "apiVersion": e.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": e.set.to_fields_v1(),
            });
            if let Some(time) = e.time {
                entry["time"] = time;
            }
            if !e.subresource.is_empty() {
                entry["subresource"] = Value::String(e.subresource);
            }
            entry
        })
        .collect();
    meta.insert("managedFields".to_owned(), Value::Array(list));
}

/// Gives `changed` to `manager`'s `Update` entry (creating it, stamping its time) and takes
/// `changed` and `removed` away from every other entry.
pub(crate) fn record_update(
    entries: &mut Vec<Entry>,
    scope: &Scope<'_>,
    manager: &str,
    comparison: &Comparison,
) {
    let changed = comparison.changed();
    for entry in entries.iter_mut() {
        entry.set = entry
            .set
            .difference(&changed)
            .difference(&comparison.removed);
    }
    if !changed.is_empty() {
        let api_version = scope.info.api_version();
        let subresource = scope.subresource();
        let position = entries
            .iter()
            .position(|e| e.is(manager, Operation::Update, &api_version, subresource));
        let index = match position {
            Some(i) => i,
            None => {
                entries.push(Entry {
                    manager: manager.to_owned(),
                    operation: Operation::Update,
                    api_version,
                    subresource: subresource.to_owned(),
                    time: None,
                    set: FieldSet::default(),
                });
                entries.len() - 1
            }
        };
        let entry = &mut entries[index];
        entry.set = entry.set.union(&changed);
        entry.time = Some(now_timestamp());
    }
    entries.retain(|e| !e.set.is_empty());
}

/// Keeps `managedFields` for a non-apply write from `live` to `new`, as the real
/// fieldmanager's `Update`: the entries are the ones `new` carries when it carries
/// decodable ones (a client may set them; `[{}]` clears them) and the write is not to a
/// subresource, else `live`'s.
pub(crate) fn track_update(scope: &Scope<'_>, live: &Value, new: &mut Value, manager: &str) {
    let provided = metadata(new).and_then(|m| m.get("managedFields"));
    let reset = provided.is_some_and(|p| *p == json!([{}]));
    let mut entries = match decode(new) {
        _ if reset => Vec::new(),
        Ok(entries) if !entries.is_empty() && !scope.status_write => entries,
        _ => decode(live).unwrap_or_default(),
    };
    let comparison = compare(scope, &scope.visible(live), &scope.visible(new));
    record_update(&mut entries, scope, manager, &comparison);
    encode(new, entries);
}

/// The manager of a non-apply write: the `fieldManager` parameter, else the user agent up
/// to its first `/`, as the real server.
pub(crate) fn manager_of(field_manager: Option<&str>, user_agent: &str) -> String {
    match field_manager.filter(|m| !m.is_empty()) {
        Some(manager) => manager.to_owned(),
        None => user_agent.split('/').next().unwrap_or_default().to_owned(),
    }
}

#[cfg(test)]
mod tests;
