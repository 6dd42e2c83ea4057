//! Type-specific defaulting and validation the real API server applies on writes.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::resource::ResourceInfo;
use crate::schema_validation::FieldError;
use crate::status::{ApiError, go_quote};

/// The QoS class the real server gives a new Pod: `BestEffort` when no container asks for
/// or limits CPU or memory, `Guaranteed` when every container limits both and requests
/// (where set) equal the limits, `Burstable` otherwise.
pub(super) fn pod_qos_class(spec: Option<&Value>) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|f| spec.and_then(|s| s.get(f)).and_then(Value::as_array))
        .flatten()
        .collect();
    let amount = |c: &Value, kind: &str, resource: &str| {
        c.pointer(&format!("/resources/{kind}/{resource}"))
            .filter(|v| !v.is_null())
            .cloned()
    };
    let resources = ["cpu", "memory"];
    let any = containers.iter().any(|c| {
        resources
            .iter()
            .any(|r| amount(c, "requests", r).is_some() || amount(c, "limits", r).is_some())
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        resources.iter().all(|r| match amount(c, "limits", r) {
            Some(limit) => amount(c, "requests", r).is_none_or(|request| request == limit),
            None => false,
        })
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The real `MaxSecretSize`: a ConfigMap's or a Secret's data may hold at most 1 MiB.
const MAX_DATA_SIZE: usize = 1024 * 1024;

/// Validates what the real server validates on every create and update of `value`
/// (`name` is the object's name): `metadata.labels` and `metadata.annotations`
/// (`ValidateObjectMeta`), then for core ConfigMaps and Secrets their keys and their
/// data's size. Every error is collected into one 422, as the real validation's
/// `field.ErrorList`.
pub(super) fn validate_write(
    info: &ResourceInfo,
    name: &str,
    value: &Value,
) -> Result<(), ApiError> {
    let meta = value.get("metadata");
    let mut errors = Vec::new();
    if let Some(labels) = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        for (key, value) in labels {
            for message in qualified_name_errors(key) {
                errors.push(FieldError::invalid(
                    "metadata.labels",
                    &go_quote(key),
                    &message,
                ));
            }
            let value = value.as_str().unwrap_or_default();
            for message in label_value_errors(value) {
                errors.push(FieldError::invalid(
                    "metadata.labels",
                    &go_quote(value),
                    &message,
                ));
            }
        }
    }
    if let Some(annotations) = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    {
        let mut size = 0;
        for (key, value) in annotations {
            for message in qualified_name_errors(&key.to_lowercase()) {
                errors.push(FieldError::invalid(
                    "metadata.annotations",
                    &go_quote(key),
                    &message,
                ));
            }
            size += key.len() + value.as_str().map_or(0, str::len);
        }
        if size > MAX_ANNOTATIONS_SIZE {
            errors.push(too_long("metadata.annotations", MAX_ANNOTATIONS_SIZE));
        }
    }
    if info.group.is_empty() && matches!(info.kind.as_str(), "ConfigMap" | "Secret") {
        for field in ["data", "binaryData", "stringData"] {
            let Some(map) = value.get(field).and_then(Value::as_object) else {
                continue;
            };
            // The real validation names `data` for a Secret's `stringData` too: it runs
            // after `stringData` was merged into `data`.
            let shown = if field == "stringData" { "data" } else { field };
            for key in map.keys() {
                for message in config_map_key_errors(key) {
                    errors.push(FieldError::invalid(
                        &format!("{shown}[{key}]"),
                        &go_quote(key),
                        &message,
                    ));
                }
            }
        }
        errors.extend(data_size_error(info, value));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_fields(
            &info.kind,
            &info.group,
            name,
            &errors,
        ))
    }
}

/// The real `TotalAnnotationSizeLimitB`: 256 KiB of annotation keys and values.
const MAX_ANNOTATIONS_SIZE: usize = 256 * 1024;

/// A `Too long` field error of the real wording.
fn too_long(field: &str, max: usize) -> FieldError {
    FieldError {
        field: field.to_owned(),
        reason: "FieldValueTooLong",
        message: format!("Too long: may not be more than {max} bytes"),
    }
}

/// The real `RegexError` text: `msg (e.g. 'a',  or 'b', regex used for validation is
/// 'fmt')` (the double space is the real one's).
fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        examples.join(" or ")
    )
}

/// Whether `s` is non-empty, starts and ends with an ASCII alphanumeric character and has
/// only those and `extra` in between.
fn alphanumeric_with(s: &str, extra: &[char]) -> bool {
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    ends(s.chars().next())
        && ends(s.chars().last())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
}

const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FORMAT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

/// The real `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name of at
/// most 63 characters.
fn qualified_name_errors(value: &str) -> Vec<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MESSAGE,
                    QUALIFIED_NAME_FORMAT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    let mut errors = Vec::new();
    match prefix {
        Some("") => errors.push("prefix part must be non-empty".to_owned()),
        Some(prefix) => errors.extend(
            dns_subdomain_errors(prefix)
                .into_iter()
                .map(|e| format!("prefix part {e}")),
        ),
        None => {}
    }
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_owned());
    }
    if !alphanumeric_with(name, &['-', '_', '.']) {
        errors.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MESSAGE,
                QUALIFIED_NAME_FORMAT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errors
}

/// The real `IsDNS1123Subdomain`.
fn dns_subdomain_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push("must be no more than 253 characters".to_owned());
    }
    let valid = value.split('.').all(|label| {
        alphanumeric_with(label, &['-']) && !label.chars().any(|c| c.is_ascii_uppercase())
    });
    if !valid {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
            "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
            &["example.com"],
        ));
    }
    errors
}

/// The real `IsValidLabelValue`: empty, or at most 63 characters of the qualified name's
/// alphabet.
fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    if !value.is_empty() && !alphanumeric_with(value, &['-', '_', '.']) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// The real `IsConfigMapKey` (also a Secret's keys).
fn config_map_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if key.len() > 253 {
        errors.push("must be no more than 253 characters".to_owned());
    }
    if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    {
        errors.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match key {
        "." => errors.push("must not be '.'".to_owned()),
        ".." => errors.push("must not be '..'".to_owned()),
        _ if key.starts_with("..") => errors.push("must not start with '..'".to_owned()),
        _ => {}
    }
    errors
}

/// The real validation's error for a core ConfigMap or Secret whose data exceeds
/// [`MAX_DATA_SIZE`]: a ConfigMap counts `data` and (decoded) `binaryData` and reports
/// the whole object (field `[]`); a Secret counts (decoded) `data` merged with
/// `stringData` and reports `data`.
fn data_size_error(info: &ResourceInfo, value: &Value) -> Option<FieldError> {
    use base64::Engine as _;
    let decoded = |s: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_or(s.len(), |b| b.len())
    };
    let sizes = |field: &str, decode: bool| -> BTreeMap<&str, usize> {
        value
            .get(field)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
            .map(|(k, v)| (k, if decode { decoded(v) } else { v.len() }))
            .collect()
    };
    let (total, field): (usize, &str) = match (info.group.as_str(), info.kind.as_str()) {
        ("", "ConfigMap") => (
            sizes("data", false).values().sum::<usize>()
                + sizes("binaryData", true).values().sum::<usize>(),
            "[]",
        ),
        ("", "Secret") => {
            let mut data = sizes("data", true);
            data.extend(sizes("stringData", false));
            (data.values().sum(), "data")
        }
        _ => return None,
    };
    (total > MAX_DATA_SIZE).then(|| too_long(field, MAX_DATA_SIZE))
}

/// The spec fields a Pod update may change, as the real `ValidatePodUpdate` lists them.
const POD_UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The real `ValidatePodUpdate`'s rule for a core Pod's `spec`: containers may not be
/// added or removed, and nothing but the fields of [`POD_UPDATABLE`] may change (the
/// 422's diff lists the changed fields, old then new, one a line).
pub(super) fn validate_pod_update(
    info: &ResourceInfo,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    if !(info.group.is_empty() && info.kind == "Pod") {
        return Ok(());
    }
    let empty = Value::Object(serde_json::Map::new());
    let old_spec = old.get("spec").unwrap_or(&empty);
    let new_spec = new.get("spec").unwrap_or(&empty);
    let forbid = |field: &str, detail: String| {
        Err(ApiError::invalid_fields(
            &info.kind,
            &info.group,
            name,
            &[FieldError {
                field: field.to_owned(),
                reason: "FieldValueForbidden",
                message: format!("Forbidden: {detail}"),
            }],
        ))
    };
    let containers = |spec: &Value, field: &str| {
        spec.get(field)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    for field in ["containers", "initContainers"] {
        if containers(old_spec, field) != containers(new_spec, field) {
            return forbid(
                &format!("spec.{field}"),
                "pod updates may not add or remove containers".to_owned(),
            );
        }
    }
    let mut munged = new_spec.clone();
    for field in ["containers", "initContainers"] {
        let old_items = old_spec.get(field).and_then(Value::as_array);
        if let (Some(items), Some(old_items)) = (
            munged.get_mut(field).and_then(Value::as_array_mut),
            old_items,
        ) {
            for (item, old_item) in items.iter_mut().zip(old_items) {
                match (item.as_object_mut(), old_item.get("image")) {
                    (Some(item), Some(image)) => {
                        item.insert("image".to_owned(), image.clone());
                    }
                    (Some(item), None) => {
                        item.remove("image");
                    }
                    _ => {}
                }
            }
        }
    }
    if let Some(munged) = munged.as_object_mut() {
        for field in [
            "activeDeadlineSeconds",
            "terminationGracePeriodSeconds",
            "tolerations",
        ] {
            match old_spec.get(field) {
                Some(value) => munged.insert(field.to_owned(), value.clone()),
                None => munged.remove(field),
            };
        }
    }
    if &munged == old_spec {
        return Ok(());
    }
    let mut diff = String::new();
    let fields: std::collections::BTreeSet<&String> = old_spec
        .as_object()
        .into_iter()
        .chain(munged.as_object())
        .flat_map(|m| m.keys())
        .collect();
    for field in fields {
        let (before, after) = (old_spec.get(field), munged.get(field));
        if before != after {
            if let Some(before) = before {
                diff.push_str(&format!("\n  - {field}: {before}"));
            }
            if let Some(after) = after {
                diff.push_str(&format!("\n  + {field}: {after}"));
            }
        }
    }
    forbid(
        "spec",
        format!("pod updates may not change fields other than {POD_UPDATABLE}{diff}"),
    )
}

/// The real `ValidateNoNewFinalizers`: an object being deleted may lose finalizers but
/// not gain any (`metadata.finalizers: Forbidden: no new finalizers([b]) can be added if
/// the object is being deleted`).
pub(super) fn validate_no_new_finalizers(
    info: &ResourceInfo,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    let finalizers = |v: &Value| -> std::collections::BTreeSet<String> {
        v.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect()
    };
    if old.pointer("/metadata/deletionTimestamp").is_none() {
        return Ok(());
    }
    let old_set = finalizers(old);
    let extra: Vec<String> = finalizers(new).difference(&old_set).cloned().collect();
    if extra.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(
        &info.kind,
        &info.group,
        name,
        &[FieldError {
            field: "metadata.finalizers".to_owned(),
            reason: "FieldValueForbidden",
            message: format!(
                "Forbidden: no new finalizers([{}]) can be added if the object is being deleted",
                extra.join(" ")
            ),
        }],
    ))
}
