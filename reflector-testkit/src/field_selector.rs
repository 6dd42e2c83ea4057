//! Field selectors, parsed from query parameters and matched against objects:
//! `metadata.name`, `metadata.namespace` and each resource's selectable fields.

use std::borrow::Cow;

use serde_json::Value;

use crate::object::StoredObject;
use crate::selectable_fields::{FieldLabels, SelectableField, field_text};
use crate::status::ApiError;

/// A parsed field selector: `metadata.name`, `metadata.namespace` and the resource's own
/// fields ([`FieldLabels`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    /// (field, wanted value, equal?) triples.
    requirements: Vec<(Field, String, bool)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
    /// A resource-specific field, read from the object's JSON.
    Selectable(&'static SelectableField),
    /// A custom resource's selectable field: its JSON pointer.
    Custom(String),
}

/// Splits on commas not escaped with a backslash (escapes are kept for the value).
fn split_terms(input: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in input.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&input[start..]);
    terms
}

/// Undoes `\\`, `\,` and `\=` in a field-selector value; other escapes and bare `,`/`=`
/// are errors, as in the real parser.
fn unescape_value(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(other) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    ));
                }
                None => {
                    return Err("invalid field selector: invalid escape sequence: \\".to_owned());
                }
            },
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {c}"
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

impl FieldSelector {
    /// Parses comma-joined `field=value`, `field==value`, `field!=value` like the real
    /// server (terms split at the first operator, no trimming), then checks each field
    /// label in sorted term order the way `labels` says.
    pub(crate) fn parse(input: &str, labels: FieldLabels) -> Result<Self, ApiError> {
        let mut terms = split_terms(input);
        terms.sort_unstable();
        let mut parsed = Vec::new();
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let split = term.char_indices().find_map(|(i, _)| {
                let rest = &term[i..];
                [("!=", false), ("==", true), ("=", true)]
                    .into_iter()
                    .find(|(op, _)| rest.starts_with(op))
                    .map(|(op, equal)| (&term[..i], &rest[op.len()..], equal))
            });
            let Some((field, value, equal)) = split else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{input}'; can't understand '{term}'"
                )));
            };
            let value = unescape_value(value).map_err(ApiError::bad_request)?;
            parsed.push((field, value, equal));
        }
        let mut requirements = Vec::with_capacity(parsed.len());
        for (field, value, equal) in parsed {
            let field = match field {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => match (labels.find(other), labels.find_custom(other)) {
                    (Some(selectable), _) => Field::Selectable(selectable),
                    (None, Some(pointer)) => Field::Custom(pointer),
                    (None, None) => return Err(ApiError::bad_request(labels.unknown(other))),
                },
            };
            requirements.push((field, value, equal));
        }
        Ok(Self { requirements })
    }

    /// Whether the selector selects everything.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `object` matches. Its JSON is parsed only when a requirement names a
    /// resource-specific field.
    pub(crate) fn matches(&self, object: &StoredObject) -> bool {
        let mut parsed: Option<Value> = None;
        self.requirements.iter().all(|(field, value, equal)| {
            let actual = match field {
                Field::Name => Cow::Borrowed(object.name.as_str()),
                Field::Namespace => Cow::Borrowed(object.namespace.as_deref().unwrap_or("")),
                Field::Selectable(selectable) => {
                    Cow::Owned(selectable.value_in(parsed.get_or_insert_with(|| object.value())))
                }
                Field::Custom(pointer) => Cow::Owned(
                    field_text(parsed.get_or_insert_with(|| object.value()), pointer)
                        .unwrap_or_default(),
                ),
            };
            (actual == value.as_str()) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(value: &Value) -> StoredObject {
        StoredObject::from_value(std::sync::Arc::from("k"), 1, value)
    }

    #[test]
    fn field_selector_name_and_namespace() {
        let cm = FieldLabels::of("", "ConfigMap");
        let s = FieldSelector::parse(
            "metadata.name=a,metadata.namespace!=kube-system",
            cm.clone(),
        )
        .expect("valid");
        let object = |name: &str, ns: &str| {
            stored(&serde_json::json!({"metadata": {"name": name, "namespace": ns}}))
        };
        assert!(s.matches(&object("a", "default")));
        assert!(!s.matches(&object("a", "kube-system")));
        assert!(!s.matches(&object("b", "default")));
        assert!(FieldSelector::parse("spec.nodeName=x", cm.clone()).is_err());
        assert!(FieldSelector::parse("metadata.name", cm).is_err());
    }

    #[test]
    fn field_selector_reads_resource_fields_from_the_object() {
        let events = FieldLabels::of("events.k8s.io", "Event");
        let s = FieldSelector::parse("regarding.name=w1,type!=Warning", events).expect("valid");
        let event = |name: &str, type_: &str| {
            stored(&serde_json::json!({
                "metadata": {"name": "e", "namespace": "default"},
                "regarding": {"name": name},
                "type": type_,
            }))
        };
        assert!(s.matches(&event("w1", "Normal")));
        assert!(!s.matches(&event("w1", "Warning")));
        assert!(!s.matches(&event("w2", "Normal")));
    }
}
