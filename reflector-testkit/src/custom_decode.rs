//! How the real server decodes the body of a custom-object create or update: as
//! unstructured JSON, so a body without `kind` or `apiVersion` is a 400 (`Object 'Kind'
//! is missing in '{...}'`), a wrong one the custom resource validator's 422, and, under
//! `fieldValidation=Strict`, a duplicate key a 400 naming it (`Warn`, the default, says so
//! in a `Warning` header). Strict decoding errors of custom objects start as the real
//! ones do: `Widget in version "v1" cannot be handled as a Widget: strict decoding error:
//! ...`.

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::resource::ResourceInfo;
use crate::schema_validation::FieldError;
use crate::status::{ApiError, go_quote};

/// Checks a custom object's `kind` and `apiVersion` as the real decoder and validator
/// do; `raw` is the body as sent.
pub(crate) fn check_type(
    info: &ResourceInfo,
    raw: &[u8],
    value: &Value,
    name: &str,
) -> Result<(), ApiError> {
    let text = String::from_utf8_lossy(raw);
    let field = |f: &str| {
        value
            .get(f)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(kind), Some(api_version)) = (field("kind"), field("apiVersion")) else {
        let missing = if field("kind").is_none() {
            "Kind"
        } else {
            "apiVersion"
        };
        return Err(ApiError::bad_request(format!(
            "Object '{missing}' is missing in '{}'",
            text.trim()
        )));
    };
    let mut errors = Vec::new();
    if kind != info.kind {
        errors.push(FieldError::invalid(
            "kind",
            &go_quote(kind),
            &format!("must be {}", info.kind),
        ));
    }
    if api_version != info.api_version() {
        errors.push(FieldError::invalid(
            "apiVersion",
            &go_quote(api_version),
            &format!("must be {}", info.api_version()),
        ));
    }
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(
        &info.kind,
        &info.group,
        name,
        &errors,
    ))
}

/// The real prefix of a custom object's strict decoding error.
pub(crate) fn strict_prefix(info: &ResourceInfo) -> String {
    format!(
        "{} in version {} cannot be handled as a {}: ",
        info.kind,
        go_quote(&info.version),
        info.kind
    )
}

/// The dotted paths of the keys a JSON body repeats within one object.
pub(crate) fn duplicate_fields(raw: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(raw);
    let _ = Duplicates {
        path: String::new(),
        out: &mut out,
    }
    .deserialize(&mut deserializer);
    out
}

/// Walks a JSON document recording repeated keys.
struct Duplicates<'o> {
    path: String,
    out: &'o mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Duplicates<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Duplicates<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                key.clone()
            } else {
                format!("{}.{key}", self.path)
            };
            if !seen.insert(key) {
                self.out.push(path.clone());
            }
            map.next_value_seed(Duplicates {
                path,
                out: &mut *self.out,
            })?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq
            .next_element_seed(Duplicates {
                path: format!("{}[{i}]", self.path),
                out: &mut *self.out,
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_repeated_keys_with_their_paths() {
        let raw =
            br#"{"spec": {"size": "a", "list": [{"x": 1, "x": 2}], "size": "b"}, "kind": "W"}"#;
        assert_eq!(duplicate_fields(raw), ["spec.list[0].x", "spec.size"]);
        assert!(duplicate_fields(br#"{"a": {"b": 1}, "c": {"b": 2}}"#).is_empty());
    }
}
