//! Unknown fields in a write, as the real server's decoding treats them: a built-in
//! object is decoded into its Go type, which has no room for a field its schema does not
//! declare (`dataa`, `metadata.bogus`, `spec.containers[0].imagee`), and a custom object
//! is pruned against its CRD's schema; either way the field is dropped. What the client
//! hears of it is chosen by `fieldValidation`: `Ignore` nothing, `Warn` (the default) one
//! `Warning: 299 - "unknown field \"dataa\""` header per field, `Strict` a 400
//! `strict decoding error: unknown field "dataa"` (a patch: the real 422 on `patch`).

use axum::response::Response;
use http::HeaderValue;
use serde_json::Value;

use crate::openapi::BuiltinSchema;
use crate::query::param;
use crate::state::{ResourceId, State};
use crate::status::{ApiError, go_quote};

/// The `fieldValidation` of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop them and say so in `Warning` headers (the real default).
    Warn,
    /// Refuse the write.
    Strict,
}

impl FieldValidation {
    /// The request's `fieldValidation` (default `Warn`); another value is the real 400.
    pub(crate) fn of(pairs: &[(String, String)]) -> Result<Self, ApiError> {
        match param(pairs, "fieldValidation") {
            None | Some("" | "Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: {}: supported values: \"Ignore\", \"Strict\", \"Warn\"",
                go_quote(other)
            ))),
        }
    }

    /// For a create or update: the 400 a `Strict` write with unknown fields answers.
    pub(crate) fn check(self, unknown: &[String]) -> Result<(), ApiError> {
        if self != Self::Strict || unknown.is_empty() {
            return Ok(());
        }
        Err(ApiError::bad_request(strict_error(unknown)))
    }

    /// For a create or update of a custom object: under `Strict`, the real 400 for keys the
    /// body repeats (`duplicate field "spec.size"`) and unknown fields, after the custom
    /// decoder's `prefix` (see `custom_decode`).
    pub(crate) fn check_custom(
        self,
        prefix: &str,
        duplicates: &[String],
        unknown: &[String],
    ) -> Result<(), ApiError> {
        if self != Self::Strict || (duplicates.is_empty() && unknown.is_empty()) {
            return Ok(());
        }
        let mut problems: Vec<String> = duplicates
            .iter()
            .map(|f| format!("duplicate field {}", go_quote(f)))
            .collect();
        problems.extend(
            unknown
                .iter()
                .map(|f| format!("unknown field {}", go_quote(f))),
        );
        Err(ApiError::bad_request(format!(
            "{prefix}strict decoding error: {}",
            problems.join(", ")
        )))
    }

    /// `response` with one `Warning` header per repeated key under `Warn`.
    pub(crate) fn warn_duplicates(self, response: Response, duplicates: &[String]) -> Response {
        self.warn_each(response, "duplicate field", duplicates)
    }

    /// `response` with a `Warning: 299 - "<what> \"<field>\""` header per field under
    /// `Warn`.
    fn warn_each(self, mut response: Response, what: &str, fields: &[String]) -> Response {
        if self != Self::Warn {
            return response;
        }
        for field in fields {
            let text = format!("299 - {}", go_quote(&format!("{what} {}", go_quote(field))));
            if let Ok(value) = HeaderValue::from_str(&text) {
                response.headers_mut().append(http::header::WARNING, value);
            }
        }
        response
    }

    /// For a patch: the real 422 naming the patched object, for a `Strict` patch whose
    /// result has unknown fields.
    pub(crate) fn check_patched(self, unknown: &[String], patched: &Value) -> Result<(), ApiError> {
        if self != Self::Strict || unknown.is_empty() {
            return Ok(());
        }
        let detail = strict_error(unknown);
        let shown = go_quote(&patched.to_string());
        let mut error = ApiError::new(
            422,
            "Invalid",
            format!(" \"\" is invalid: patch: Invalid value: {shown}: {detail}"),
        );
        error.details = Some(serde_json::json!({"causes": [{
            "reason": "FieldValueInvalid",
            "message": format!("Invalid value: {shown}: {detail}"),
            "field": "patch",
        }]}));
        Err(error)
    }

    /// `response` with one `Warning` header per unknown field under `Warn`.
    pub(crate) fn warn(self, response: Response, unknown: &[String]) -> Response {
        self.warn_each(response, "unknown field", unknown)
    }
}

/// `strict decoding error: unknown field "a", unknown field "b"`.
fn strict_error(unknown: &[String]) -> String {
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {}", go_quote(f)))
        .collect();
    format!("strict decoding error: {}", fields.join(", "))
}

/// Drops the fields of `value` that the resource's schema does not declare and returns
/// their paths: a built-in kind's k8s-openapi schema, or a custom resource's CRD schema
/// (which the write's admission prunes the same way). Kinds known by neither keep every
/// field.
pub(crate) fn drop_unknown(state: &State, rid: ResourceId, value: &mut Value) -> Vec<String> {
    let (builtin, custom) = match state.custom.served(rid) {
        Some(served) => (None, served.schema.clone()),
        None => (crate::openapi::builtin_schema(&state.resources[rid]), None),
    };
    if let Some(schema) = custom {
        return crate::schema_validation::admit(&schema, &mut value.clone()).pruned;
    }
    let Some(schema) = builtin else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    if let Some(root) = schema.root() {
        walk(&schema, root, value, "", &mut unknown);
    }
    unknown
}

/// Prunes `value` against `node`, recording each dropped field's path.
fn walk(
    schema: &BuiltinSchema,
    node: &Value,
    value: &mut Value,
    path: &str,
    out: &mut Vec<String>,
) {
    let mut node = schema.resolve(node);
    // A `$ref` wrapped to carry a description.
    if let Some([only]) = node
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        node = schema.resolve(only);
    }
    if node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    match value {
        Value::Object(fields) => {
            let properties = node.get("properties").and_then(Value::as_object);
            let additional = node.get("additionalProperties").filter(|a| a.is_object());
            if properties.is_none() && additional.is_none() {
                // A free-form object (`FieldsV1`, `RawExtension`, apiextensions `JSON`).
                return;
            }
            let mut dropped = Vec::new();
            for (key, child) in fields.iter_mut() {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match properties.and_then(|p| p.get(key)).or(additional) {
                    Some(child_schema) => walk(schema, child_schema, child, &child_path, out),
                    None => {
                        dropped.push(key.clone());
                        out.push(child_path);
                    }
                }
            }
            for key in dropped {
                fields.remove(&key);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = node.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(schema, item_schema, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}
