//! Structural-schema handling of custom objects, as the real apiextensions-apiserver does
//! on every write: prune unknown fields, apply `default`s, then validate against the CRD
//! version's `openAPIV3Schema`, with the real field errors' wording.

use serde_json::{Map, Value};

use crate::status::go_quote;

/// One field error, as the real `field.Error`: `field` is the dotted path, `message` the
/// error body (`Required value`, `Invalid value: ...`), `reason` the `StatusCause` reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    pub field: String,
    pub reason: &'static str,
    pub message: String,
}

impl FieldError {
    pub(crate) fn required(field: &str) -> Self {
        Self {
            field: field.to_owned(),
            reason: "FieldValueRequired",
            message: "Required value".to_owned(),
        }
    }

    /// `value` is printed as given (quote strings first).
    pub(crate) fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Self {
            field: field.to_owned(),
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value}: {detail}"),
        }
    }
}

/// What admitting an object found.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    /// Validation errors (the write is a 422 when any).
    pub errors: Vec<FieldError>,
    /// Dotted paths of the unknown fields pruned away.
    pub pruned: Vec<String>,
}

/// The `metadata` fields the real server keeps (those of `ObjectMeta`); others are pruned.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Prunes, defaults and validates a whole custom object in place against `schema` (the
/// version's `openAPIV3Schema`). `apiVersion`, `kind` and `metadata` are always kept;
/// `metadata` is pruned to the fields of `ObjectMeta`.
pub(crate) fn admit(schema: &Value, object: &mut Value) -> Admission {
    let mut admission = Admission::default();
    let Value::Object(fields) = object else {
        return admission;
    };
    if let Some(Value::Object(meta)) = fields.get_mut("metadata") {
        meta.retain(|k, _| {
            let keep = OBJECT_META_FIELDS.contains(&k.as_str());
            if !keep {
                admission.pruned.push(format!("metadata.{k}"));
            }
            keep
        });
    }
    let mut standard = Map::new();
    let mut rest = Map::new();
    for (key, value) in std::mem::take(fields) {
        if matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            standard.insert(key, value);
        } else {
            rest.insert(key, value);
        }
    }
    let mut root = Value::Object(rest);
    walk(schema, &mut root, "", &mut admission);
    if let Value::Object(checked) = root {
        standard.extend(checked);
    }
    *fields = standard;
    admission
}

/// The JSON type name go-openapi reports for a value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "integer" => is_integer(value),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        _ => true,
    }
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// How a value is printed after `Invalid value:` (Go's `%v` for numbers and booleans, `%q`
/// for strings).
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        other => other.to_string(),
    }
}

fn walk(schema: &Value, value: &mut Value, path: &str, out: &mut Admission) {
    let body_path = if path.is_empty() { "body" } else { path };
    if value.is_null() {
        if flag(schema, "nullable") {
            return;
        }
        if let Some(ty) = schema.get("type").and_then(Value::as_str) {
            out.errors.push(type_error(path, body_path, ty, value));
        }
        return;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        if !(is_integer(value) || value.is_string()) {
            out.errors
                .push(type_error(path, body_path, "integer,string", value));
        }
        return;
    }
    if let Some(ty) = schema.get("type").and_then(Value::as_str)
        && !type_matches(ty, value)
    {
        out.errors.push(type_error(path, body_path, ty, value));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let supported: Vec<String> = allowed.iter().map(shown).collect();
        out.errors.push(FieldError {
            field: path.to_owned(),
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                supported.join(", ")
            ),
        });
    }
    match value {
        Value::String(s) => check_string(schema, s, path, body_path, out),
        Value::Number(n) => check_number(
            schema,
            n.as_f64().unwrap_or_default(),
            value,
            path,
            body_path,
            out,
        ),
        Value::Array(items) => {
            let count = items.len();
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && count as u64 > max
            {
                out.errors.push(FieldError {
                    field: path.to_owned(),
                    reason: "FieldValueTooMany",
                    message: format!("Too many: {count}: must have at most {max} items"),
                });
            }
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (count as u64) < min
            {
                out.errors.push(FieldError::invalid(
                    path,
                    &count.to_string(),
                    &format!("{body_path} in body should have at least {min} items"),
                ));
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item_schema, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        Value::Object(fields) => walk_object(schema, fields, path, out),
        _ => {}
    }
}

fn type_error(path: &str, body_path: &str, ty: &str, value: &Value) -> FieldError {
    let actual = go_quote(type_name(value));
    FieldError {
        field: path.to_owned(),
        reason: "FieldValueTypeInvalid",
        message: format!(
            "Invalid value: {actual}: {body_path} in body must be of type {ty}: {actual}"
        ),
    }
}

fn check_string(schema: &Value, s: &str, path: &str, body_path: &str, out: &mut Admission) {
    let len = s.chars().count() as u64;
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        out.errors.push(FieldError {
            field: path.to_owned(),
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {max} bytes"),
        });
    }
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        out.errors.push(FieldError::invalid(
            path,
            &go_quote(s),
            &format!("{body_path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        // A pattern the regex engine cannot compile never matches anything, as a CRD with
        // it would have been rejected by the real server; report it on the value.
        let matches = regex::Regex::new(pattern).is_ok_and(|re| re.is_match(s));
        if !matches {
            out.errors.push(FieldError::invalid(
                path,
                &go_quote(s),
                &format!("{body_path} in body should match '{pattern}'"),
            ));
        }
    }
}

/// A numeric bound keyword of a schema.
struct Bound {
    keyword: &'static str,
    /// The OpenAPI v3.0 flag making it exclusive.
    exclusive: &'static str,
    /// Whether a value is past the bound.
    past: fn(f64, f64) -> bool,
    /// How the error names the relation: inclusive, exclusive.
    words: [&'static str; 2],
}

const BOUNDS: [Bound; 2] = [
    Bound {
        keyword: "maximum",
        exclusive: "exclusiveMaximum",
        past: |n, b| n > b,
        words: ["less than or equal to", "less than"],
    },
    Bound {
        keyword: "minimum",
        exclusive: "exclusiveMinimum",
        past: |n, b| n < b,
        words: ["greater than or equal to", "greater than"],
    },
];

fn check_number(
    schema: &Value,
    n: f64,
    value: &Value,
    path: &str,
    body_path: &str,
    out: &mut Admission,
) {
    for Bound {
        keyword,
        exclusive: exclusive_flag,
        past,
        words,
    } in BOUNDS
    {
        let Some(bound) = schema.get(keyword).and_then(Value::as_f64) else {
            continue;
        };
        let exclusive = flag(schema, exclusive_flag);
        if past(n, bound) || (exclusive && n == bound) {
            let rel = words[usize::from(exclusive)];
            out.errors.push(FieldError::invalid(
                path,
                &shown(value),
                &format!("{body_path} in body should be {rel} {}", number(bound)),
            ));
        }
    }
}

/// A bound as Go prints a float64 with `%v` (`10`, not `10.0`).
fn number(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

fn walk_object(schema: &Value, fields: &mut Map<String, Value>, path: &str, out: &mut Admission) {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    let keys: Vec<String> = fields.keys().cloned().collect();
    for key in keys {
        let field_path = child(path, &key);
        let sub = properties
            .and_then(|p| p.get(&key))
            .or_else(|| additional.filter(|a| a.is_object()));
        match sub {
            Some(sub) => {
                if let Some(v) = fields.get_mut(&key) {
                    walk(sub, v, &field_path, out);
                }
            }
            None if preserve || additional == Some(&Value::Bool(true)) => {}
            None => {
                fields.remove(&key);
                out.pruned.push(field_path);
            }
        }
    }
    if let Some(properties) = properties {
        for (key, sub) in properties {
            if !fields.contains_key(key)
                && let Some(default) = sub.get("default")
            {
                fields.insert(key.clone(), default.clone());
            }
        }
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                out.errors.push(FieldError::required(&child(path, name)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                        "note": {"type": "string", "nullable": true},
                        "port": {"x-kubernetes-int-or-string": true},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    }
                }
            }
        })
    }

    fn messages(a: &Admission) -> Vec<String> {
        a.errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    }

    #[test]
    fn prunes_unknown_fields_and_applies_defaults() {
        let mut obj = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "bogus": 1},
            "spec": {"size": 3, "colour": "red", "extra": {"anything": [1]}, "port": "http", "note": null, "labels": {"a": "b"}},
            "top": true,
        });
        let a = admit(&schema(), &mut obj);
        assert!(a.errors.is_empty(), "{:?}", a.errors);
        assert_eq!(a.pruned, ["metadata.bogus", "spec.colour", "top"]);
        assert_eq!(
            obj,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                "spec": {"size": 3, "color": "red", "extra": {"anything": [1]}, "port": "http", "note": null, "labels": {"a": "b"}},
            })
        );
    }

    #[test]
    fn reports_the_real_error_texts() {
        let mut obj = json!({"spec": {"size": "3", "color": "green", "name": "ABCDEFG", "port": true, "labels": {"a": 1}}});
        let a = admit(&schema(), &mut obj);
        assert_eq!(
            messages(&a),
            [
                "spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\"",
                "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
                "spec.name: Too long: may not be more than 5 bytes",
                "spec.name: Invalid value: \"ABCDEFG\": spec.name in body should match '^[a-z]+$'",
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\"",
            ]
        );
        let mut obj = json!({"spec": {"size": 11, "name": "a"}});
        assert_eq!(
            messages(&admit(&schema(), &mut obj)),
            [
                "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long",
                "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
            ]
        );
        let mut obj = json!({"spec": {"size": 0}});
        assert_eq!(
            messages(&admit(&schema(), &mut obj)),
            ["spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"]
        );
        let mut obj = json!({"spec": {"note": "x"}});
        assert_eq!(
            messages(&admit(&schema(), &mut obj)),
            ["spec.size: Required value"]
        );
    }
}
