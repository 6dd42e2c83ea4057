//! Stored objects: pre-serialized JSON plus the few fields selectors and keys need.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::labels::Labels;

/// One stored object version. Immutable once built; shared by the store, the event log and
/// in-flight responses as `Arc<StoredObject>`, so lists never re-encode objects.
#[derive(Debug)]
pub(crate) struct StoredObject {
    /// Storage key: `namespace/name`, or `name` for cluster-scoped resources.
    pub key: Arc<str>,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (None for cluster-scoped objects).
    pub namespace: Option<String>,
    /// `metadata.labels`.
    pub labels: Labels,
    /// `metadata.resourceVersion`.
    pub rv: u64,
    /// The object as compact JSON, starting with `kind` and `apiVersion` when it has them.
    pub json: Bytes,
    /// Where the fields after `kind`/`apiVersion` begin in `json` (0 when it has neither):
    /// `{` followed by `json[item_start..]` is the object without them, as typed list
    /// items are served.
    item_start: usize,
}

impl StoredObject {
    /// Builds a stored object from a JSON object whose metadata is already complete.
    pub(crate) fn from_value(key: Arc<str>, rv: u64, value: &Value) -> Self {
        let labels = metadata(value)
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .map(Labels::from_json)
            .unwrap_or_default();
        let (json, item_start) = encode_type_first(value);
        Self {
            key,
            name: meta_str(value, "name").unwrap_or_default().to_owned(),
            namespace: meta_str(value, "namespace").map(str::to_owned),
            labels,
            rv,
            json,
            item_start,
        }
    }

    /// Appends the object without `kind` and `apiVersion` to `out`.
    pub(crate) fn write_untyped(&self, out: &mut BytesMut) {
        if self.item_start == 0 {
            out.put_slice(&self.json);
        } else {
            out.put_u8(b'{');
            out.put_slice(&self.json[self.item_start..]);
        }
    }

    /// The object parsed back into a JSON value.
    pub(crate) fn value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }
}

/// A JSON object's entries other than `kind` and `apiVersion`, serialized as an object.
struct Untyped<'a>(&'a Map<String, Value>);

impl Serialize for Untyped<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            self.0
                .iter()
                .filter(|(k, _)| k.as_str() != "kind" && k.as_str() != "apiVersion"),
        )
    }
}

/// Encodes `value` with `kind` and `apiVersion` first; returns the bytes and where the
/// remaining fields begin (0 when the object has neither field).
fn encode_type_first(value: &Value) -> (Bytes, usize) {
    let Value::Object(map) = value else {
        return (
            Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
            0,
        );
    };
    let mut head = Map::new();
    for field in ["kind", "apiVersion"] {
        if let Some(v) = map.get(field) {
            head.insert(field.to_owned(), v.clone());
        }
    }
    let rest = serde_json::to_vec(&Untyped(map)).unwrap_or_default();
    if head.is_empty() || rest.len() < 2 {
        return (Bytes::from(rest), 0);
    }
    let head = serde_json::to_vec(&head).unwrap_or_default();
    // `{head fields` + (`,` + rest fields) + `}`, sharing the braces.
    let mut out = BytesMut::with_capacity(head.len() + rest.len());
    out.put_slice(&head[..head.len() - 1]);
    let has_rest = rest.len() > 2;
    if has_rest {
        out.put_u8(b',');
    }
    let item_start = out.len();
    out.put_slice(&rest[1..]);
    (out.freeze(), item_start)
}

/// Storage key for a name in an optional namespace.
pub(crate) fn key_of(namespace: Option<&str>, name: &str) -> Arc<str> {
    match namespace {
        Some(ns) => Arc::from(format!("{ns}/{name}")),
        None => Arc::from(name),
    }
}

/// `metadata` of a JSON object.
pub(crate) fn metadata(value: &Value) -> Option<&Map<String, Value>> {
    value.get("metadata").and_then(Value::as_object)
}

/// `metadata`, created if missing (a non-object `metadata` is replaced).
pub(crate) fn metadata_mut(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = Value::Object(Map::new());
    }
    let Value::Object(root) = value else {
        unreachable!("made an object above")
    };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        _ => unreachable!("made an object above"),
    }
}

/// A string field of `metadata`, if present and non-empty.
pub(crate) fn meta_str<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    metadata(value)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The current time as the API's RFC 3339 second-precision timestamp.
pub(crate) fn now_timestamp() -> Value {
    let time =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    serde_json::to_value(time).unwrap_or(Value::Null)
}

/// A random version-4 UUID string.
pub(crate) fn new_uid() -> String {
    let n: u128 = rand::random();
    let n = (n & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
    let hex = format!("{n:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The object without `metadata` and `status`: what `metadata.generation` tracks.
pub(crate) fn spec_part(value: &Value) -> Value {
    let mut v = value.clone();
    if let Value::Object(m) = &mut v {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

/// Whether a name is a valid RFC 1123 subdomain (the rule most resources use).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// How objects are rendered in a response, chosen by the `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repr {
    /// The whole object.
    Full,
    /// `meta.k8s.io/v1` `PartialObjectMetadata` (kind, apiVersion and metadata only), as
    /// the real server sends for `Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1`.
    Metadata,
}

impl Repr {
    /// Picks the representation from an `Accept` header.
    pub(crate) fn from_accept(accept: &str) -> Self {
        let wants_metadata = accept.split(',').next().is_some_and(|first| {
            first.contains("as=PartialObjectMetadata") && first.contains("g=meta.k8s.io")
        });
        if wants_metadata {
            Self::Metadata
        } else {
            Self::Full
        }
    }

    /// The object's bytes in this representation.
    pub(crate) fn render(self, object: &StoredObject) -> Bytes {
        match self {
            Self::Full => object.json.clone(),
            Self::Metadata => {
                // The stored `metadata` bytes as they are: only they are read out of the
                // object (no tree of the whole object is built), then wrapped.
                #[derive(serde::Deserialize)]
                struct Metadata<'a> {
                    #[serde(borrow)]
                    metadata: Option<&'a RawValue>,
                }
                let metadata = serde_json::from_slice::<Metadata<'_>>(&object.json)
                    .ok()
                    .and_then(|m| m.metadata)
                    .map_or("null", RawValue::get);
                let mut out = BytesMut::with_capacity(metadata.len() + 80);
                out.put_slice(
                    br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#,
                );
                out.put_slice(metadata.as_bytes());
                out.put_u8(b'}');
                out.freeze()
            }
        }
    }

    /// Appends one list item: typed (built-in) resources list their items without `kind`
    /// and `apiVersion`, unstructured ones (CRDs) and `PartialObjectMetadata` keep them.
    pub(crate) fn write_item(self, object: &StoredObject, unstructured: bool, out: &mut BytesMut) {
        match self {
            Self::Full if !unstructured => object.write_untyped(out),
            _ => out.put_slice(&self.render(object)),
        }
    }

    /// `(kind, apiVersion)` for a single object of `kind`/`api_version`.
    pub(crate) fn object_type(self, kind: &str, api_version: &str) -> (String, String) {
        match self {
            Self::Full => (kind.to_owned(), api_version.to_owned()),
            Self::Metadata => (
                "PartialObjectMetadata".to_owned(),
                "meta.k8s.io/v1".to_owned(),
            ),
        }
    }

    /// `(kind, apiVersion)` for a list of `kind`/`api_version`.
    pub(crate) fn list_type(self, kind: &str, api_version: &str) -> (String, String) {
        match self {
            Self::Full => (format!("{kind}List"), api_version.to_owned()),
            Self::Metadata => (
                "PartialObjectMetadataList".to_owned(),
                "meta.k8s.io/v1".to_owned(),
            ),
        }
    }
}
