//! CustomResourceDefinitions through the API, as the real apiextensions-apiserver serves
//! them: a CRD written to `/apis/apiextensions.k8s.io/v1/customresourcedefinitions` is
//! defaulted and validated, its served versions become resources (discovery, CRUD, watch,
//! `status` and `scale` subresources), its status gets `NamesAccepted` and `Established`,
//! custom objects are pruned, defaulted and validated against the version's
//! `openAPIV3Schema`, and deleting the CRD deletes its objects and stops serving it.
//!
//! Every function here runs with the `Shared::state` lock held (they take `State`).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use crate::object::{key_of, meta_str, now_timestamp};
use crate::resource::ResourceInfo;
use crate::schema_validation::FieldError;
use crate::state::{EventType, ResourceId, State};
use crate::status::{ApiError, go_quote};

mod admission;
mod scale;
mod scale_fields;
mod served;
mod storage;

pub(crate) use served::{CustomResources, Served};
pub(crate) use storage::initializing;

use scale::json_path;
pub(crate) use scale::scale;
pub(crate) use scale::{ScalePaths, scale_of};

/// The CRD resource's group.
pub(crate) const GROUP: &str = "apiextensions.k8s.io";
/// The CRD resource's plural.
const PLURAL: &str = "customresourcedefinitions";
/// The CRD resource's kind.
const KIND: &str = "CustomResourceDefinition";

/// Whether `rid` is the CRD resource itself.
fn is_crd_resource(state: &State, rid: ResourceId) -> bool {
    let info = &state.resources[rid];
    info.group == GROUP && info.plural == PLURAL
}

/// Checks a create or update before it is stored: a CRD is defaulted and validated as the
/// real server does (422 with its wording); a custom object is pruned, defaulted and
/// validated against its version's schema. `old` is the stored object on updates.
pub(crate) fn admit(
    state: &State,
    rid: ResourceId,
    name: &str,
    value: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if is_crd_resource(state, rid) {
        set_crd_defaults(value);
        let mut errors = validate_crd(name, value);
        if let Some(old) = old {
            errors.extend(validate_crd_update(value, old));
        }
        if errors.is_empty() {
            return Ok(());
        }
        return Err(ApiError::invalid_fields(KIND, GROUP, name, &errors));
    }
    let Some(schema) = state.custom.served(rid).and_then(|s| s.schema.clone()) else {
        return Ok(());
    };
    let write = admission::Write {
        rid,
        name,
        old,
        schema: &schema,
    };
    admission::admit(state, &write, value)
}

/// The real `SetDefaults` of a v1 CRD: `singular` (lower-case kind), `listKind`
/// (`{kind}List`), `conversion.strategy: None`.
fn set_crd_defaults(value: &mut Value) {
    let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !kind.is_empty() {
            names
                .entry("singular")
                .or_insert_with(|| json!(kind.to_lowercase()));
            names
                .entry("listKind")
                .or_insert_with(|| json!(format!("{kind}List")));
        }
    }
    spec.entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn required(field: &str) -> FieldError {
    FieldError::required(field)
}

fn invalid(field: &str, value: &str, detail: &str) -> FieldError {
    FieldError::invalid(field, &go_quote(value), detail)
}

/// The message of the real `IsDNS1035Label`, if `s` is not one.
fn dns1035_error(s: &str) -> Option<String> {
    let ok = s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    (!ok).then(|| {
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_owned()
    })
}

/// The real CRD validation's checks for the common mistakes, with its wording.
fn validate_crd(name: &str, crd: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let group = str_at(crd, "/spec/group");
    let plural = str_at(crd, "/spec/names/plural");
    if name != format!("{plural}.{group}") {
        errors.push(invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errors.push(required("spec.group"));
    } else if !crate::object::valid_name(group) {
        errors.push(invalid(
            "spec.group",
            group,
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ));
    } else if !group.contains('.') {
        errors.push(invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    match str_at(crd, "/spec/scope") {
        "" => errors.push(required("spec.scope")),
        "Cluster" | "Namespaced" => {}
        other => errors.push(FieldError {
            field: "spec.scope".to_owned(),
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"",
                go_quote(other)
            ),
        }),
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        errors.push(FieldError {
            field: "spec.versions".to_owned(),
            reason: "FieldValueInvalid",
            message:
                "Invalid value: \"null\": must have exactly one version marked as storage version"
                    .to_owned(),
        });
    }
    let mut seen = BTreeSet::new();
    for (i, version) in versions.iter().enumerate() {
        let v = str_at(version, "/name");
        if let Some(e) = dns1035_error(v) {
            errors.push(invalid(&format!("spec.versions[{i}].name"), v, &e));
        }
        if !seen.insert(v.to_owned()) {
            errors.push(invalid(
                "spec.versions",
                v,
                "must contain unique version names",
            ));
        }
        match version.pointer("/schema/openAPIV3Schema") {
            None => errors.push(FieldError {
                message: "Required value: schemas are required".to_owned(),
                ..required(&format!("spec.versions[{i}].schema.openAPIV3Schema"))
            }),
            Some(schema) if schema.get("type").and_then(Value::as_str) != Some("object") => errors
                .push(FieldError {
                    message: "Required value: must not be empty at the root".to_owned(),
                    ..required(&format!("spec.versions[{i}].schema.openAPIV3Schema.type"))
                }),
            Some(schema) => errors.extend(crate::cel_rules::compile_errors(
                schema,
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
            )),
        }
    }
    let storage = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .count();
    if !versions.is_empty() && storage != 1 {
        errors.push(FieldError {
            field: "spec.versions".to_owned(),
            reason: "FieldValueInvalid",
            message: "Invalid value: ...: must have exactly one version marked as storage version"
                .to_owned(),
        });
    }
    if plural.is_empty() {
        errors.push(required("spec.names.plural"));
    } else if let Some(e) = dns1035_error(plural) {
        errors.push(invalid("spec.names.plural", plural, &e));
    }
    let singular = str_at(crd, "/spec/names/singular");
    if let Some(e) = dns1035_error(singular).filter(|_| !singular.is_empty()) {
        errors.push(invalid("spec.names.singular", singular, &e));
    }
    let kind = str_at(crd, "/spec/names/kind");
    if kind.is_empty() {
        errors.push(required("spec.names.kind"));
        errors.push(required("spec.names.listKind"));
    } else if let Some(e) = dns1035_error(&kind.to_lowercase()) {
        errors.push(invalid(
            "spec.names.kind",
            kind,
            &format!("may have mixed case, but should otherwise match: {e}"),
        ));
    }
    for (i, short) in crd
        .pointer("/spec/names/shortNames")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let short = short.as_str().unwrap_or_default();
        if let Some(e) = dns1035_error(short) {
            errors.push(invalid(&format!("spec.names.shortNames[{i}]"), short, &e));
        }
    }
    errors
}

/// The real update checks: `group` and `names.plural` never change; `scope` and
/// `names.kind` not once the CRD is established.
fn validate_crd_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let established = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    let mut fields = vec![
        ("spec.group", "/spec/group"),
        ("spec.names.plural", "/spec/names/plural"),
    ];
    if established {
        fields.push(("spec.scope", "/spec/scope"));
        fields.push(("spec.names.kind", "/spec/names/kind"));
    }
    fields
        .into_iter()
        .filter(|(_, pointer)| str_at(new, pointer) != str_at(old, pointer))
        .map(|(field, pointer)| invalid(field, str_at(new, pointer), "field is immutable"))
        .collect()
}

/// Called by `State::commit` before a write is stored: deleting a CRD first deletes every
/// object of its resources (as the real `customresourcecleanup` finalizer) and stops
/// serving them.
pub(crate) fn before_commit(
    state: &mut State,
    rid: ResourceId,
    value: &Value,
    event_type: EventType,
) {
    if event_type != EventType::Deleted || !is_crd_resource(state, rid) {
        return;
    }
    let name = meta_str(value, "name").unwrap_or_default().to_owned();
    for served in state.custom.of_crd(&name) {
        for object in state.snapshot(served, None) {
            state.remove(served, &object.key);
        }
        let rv = state.rv;
        state.custom.retire(served, rv);
    }
}

/// Called by `State::commit` after a write is stored: a created or updated CRD starts (or
/// keeps) serving its served versions, stops serving the others, and gets its status
/// (`NamesAccepted`, `Established`, `acceptedNames`, `storedVersions`) as from the real
/// naming and establishing controllers, in a second write.
pub(crate) fn after_commit(
    state: &mut State,
    rid: ResourceId,
    value: &Value,
    event_type: EventType,
) {
    if event_type == EventType::Deleted || !is_crd_resource(state, rid) {
        return;
    }
    let Ok(crd) = serde_json::from_value::<CustomResourceDefinition>(value.clone()) else {
        return;
    };
    let name = crd.metadata.name.clone().unwrap_or_default();
    if crd.metadata.deletion_timestamp.is_some() {
        return;
    }
    // The real CRD handler builds a new storage (and watch cache) for a new CRD and
    // whenever its spec changes; status and metadata writes keep the storage.
    let spec_changed = state
        .log
        .iter()
        .rev()
        .find(|e| e.resource == rid)
        .is_none_or(|e| {
            e.prev
                .as_ref()
                .is_none_or(|prev| prev.value().get("spec") != value.get("spec"))
        });
    let mut serving = BTreeSet::new();
    for version in crd.spec.versions.iter().filter(|v| v.served) {
        let subresources = version.subresources.as_ref();
        let info = ResourceInfo {
            group: crd.spec.group.clone(),
            version: version.name.clone(),
            kind: crd.spec.names.kind.clone(),
            plural: crd.spec.names.plural.clone(),
            namespaced: crd.spec.scope == "Namespaced",
            status_subresource: subresources.is_some_and(|s| s.status.is_some()),
            delete_returns_object: false,
            unstructured: true,
            short_names: crd.spec.names.short_names.clone().unwrap_or_default(),
            categories: crd.spec.names.categories.clone().unwrap_or_default(),
            generation: true,
        };
        let served_rid = state.register(info);
        let schema = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| serde_json::to_value(s).ok())
            .map(Arc::new);
        let scale = subresources
            .and_then(|s| s.scale.as_ref())
            .map(|s| ScalePaths {
                spec_replicas: json_path(&s.spec_replicas_path),
                status_replicas: json_path(&s.status_replicas_path),
                label_selector: s.label_selector_path.as_deref().map(json_path),
            });
        if spec_changed || state.custom.storage_since(served_rid).is_none() {
            let rv = state.rv;
            state.custom.restart_storage(served_rid, rv);
            if let Some(schema) = &schema {
                storage::apply_schema_on_read(state, served_rid, schema);
            }
        }
        state.custom.serve(
            served_rid,
            Served {
                crd: name.clone(),
                schema,
                scale,
                selectable_fields: version
                    .selectable_fields
                    .iter()
                    .flatten()
                    .map(|f| f.json_path.clone())
                    .collect(),
                conversion: crate::webhooks::conversion::Conversion::of_crd(value)
                    .filter(|c| c.storage_version != version.name)
                    .map(Arc::new),
            },
        );
        serving.insert(served_rid);
    }
    for old in state.custom.of_crd(&name) {
        if !serving.contains(&old) {
            let rv = state.rv;
            state.custom.retire(old, rv);
        }
    }
    establish(state, rid, &name, value);
}

/// Writes the status the real controllers give an accepted CRD, unless it has it already.
fn establish(state: &mut State, rid: ResourceId, name: &str, value: &Value) {
    let mut accepted = value.pointer("/spec/names").cloned().unwrap_or_default();
    if let Value::Object(names) = &mut accepted {
        names.retain(|_, v| !v.is_null());
    }
    let storage: Vec<String> = value
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let mut stored: Vec<String> = value
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    for v in storage {
        if !stored.contains(&v) {
            stored.push(v);
        }
    }
    let condition_true = |ty: &str| {
        value
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == ty && c["status"] == "True")
    };
    let up_to_date = condition_true("NamesAccepted")
        && condition_true("Established")
        && value.pointer("/status/acceptedNames") == Some(&accepted)
        && value.pointer("/status/storedVersions") == Some(&json!(stored));
    if up_to_date {
        return;
    }
    let now = now_timestamp();
    let mut updated = value.clone();
    updated["status"] = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": accepted,
        "storedVersions": stored,
    });
    // Written by the API server's own CRD controller, as its `managedFields` say.
    let writer = crate::managed_fields::Writer::Update("kube-apiserver");
    if let Err(error) = state.update(rid, None, name, updated, true, writer) {
        tracing::warn!(crd = name, message = %error.message, "could not establish CRD");
    }
}

/// The CRD object `ApiServer::register` stores for `crd`, keeping the versions an earlier
/// registration of the same CRD served (each registered Rust type brings one version).
pub(crate) fn merged_registration(state: &State, crd: &CustomResourceDefinition) -> Value {
    let mut value = serde_json::to_value(crd).unwrap_or_default();
    let name = crd.metadata.name.as_deref().unwrap_or_default();
    let Some(crd_rid) = state.find(GROUP, "v1", PLURAL) else {
        return value;
    };
    let Some(existing) = state.get(crd_rid, &key_of(None, name)) else {
        return value;
    };
    let existing = existing.value();
    let new_storage = crd.spec.versions.iter().any(|v| v.storage);
    if let (Some(Value::Array(old)), Some(Value::Array(new))) = (
        existing.pointer("/spec/versions"),
        value.pointer_mut("/spec/versions"),
    ) {
        for version in old {
            if !new.iter().any(|v| v["name"] == version["name"]) {
                let mut version = version.clone();
                if new_storage {
                    version["storage"] = json!(false);
                }
                new.push(version);
            }
        }
    }
    value
}
