//! The Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`) of built-in
//! kinds, as client-go's typed clients speak it.
//!
//! A body is the 4 magic bytes `k8s\0`, then a `runtime.Unknown` message whose
//! `typeMeta` names the object's `apiVersion` and `kind` and whose `raw` is the object's
//! own protobuf message. The messages are read and written by reflection over the
//! Kubernetes 1.35 message descriptors (`kubernetes-1.35.fds` beside this file: the
//! `FileDescriptorSet`, without source info, of the `generated.proto` files of the
//! apimachinery runtime, resource, intstr and meta/v1 packages and of core/v1, apps/v1,
//! batch/v1, coordination/v1 and events/v1, parsed from the copies the `k8s-rs-pb` 0.5
//! crate ships, whose packages drop the `k8s.io.` prefix), field by field, mapped to the
//! JSON this server stores: a field's JSON
//! name is its proto name, and the few types with their own JSON form are mapped as the
//! Go types marshal them (`Time` and `MicroTime` as RFC 3339 text, `Quantity` as its
//! string, `IntOrString` as a number or a string, `RawExtension`, `FieldsV1` and
//! apiextensions `JSON` as the JSON they carry, `bytes` as base64).
//!
//! Decoding follows the Go decoder's view of the wire: a field the sender wrote with its
//! zero value (Go's generated marshallers write every non-pointer field) reads as unset
//! for strings and times, which is what JSON's `omitempty` leaves out; numbers and
//! booleans keep their value, since a pointer field's zero (`replicas: 0`,
//! `runAsUser: 0`, `automountServiceAccountToken: false`) means something.

use std::sync::LazyLock;

use ::protobuf::descriptor::FileDescriptorSet;
use ::protobuf::reflect::{
    FieldDescriptor, FileDescriptor, MessageDescriptor, ReflectValueBox, ReflectValueRef,
    RuntimeFieldType, RuntimeType,
};
use ::protobuf::{Message as _, MessageDyn};
use base64::Engine as _;
use serde_json::{Map, Number, Value};

mod special;

use special::{Special, special_from_json, special_to_json};

/// The media type.
pub(crate) const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every Kubernetes protobuf body.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf body could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ProtobufError {
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NoMagic,
    /// The envelope or the object is not a valid message of its type.
    #[error("{0}")]
    Malformed(#[from] ::protobuf::Error),
    /// A value does not fit its field (a timestamp out of range, bytes that are not JSON).
    #[error("{0}")]
    Value(String),
}

/// The message descriptors, built once from [`DESCRIPTOR_SET`]; `None` (and protobuf
/// then unsupported, with an error logged) if they do not build.
static FILES: LazyLock<Option<Vec<FileDescriptor>>> = LazyLock::new(|| {
    let built = FileDescriptorSet::parse_from_bytes(DESCRIPTOR_SET)
        .and_then(|set| FileDescriptor::new_dynamic_fds(set.file, &[]));
    match built {
        Ok(files) => Some(files),
        Err(error) => {
            tracing::error!(%error, "the Kubernetes protobuf descriptors do not load; protobuf is not served");
            None
        }
    }
});

/// The Kubernetes 1.35 descriptors (see the module docs).
const DESCRIPTOR_SET: &[u8] = include_bytes!("kubernetes-1.35.fds");

/// The message `name` of the proto package of `group`/`version`.
fn message(group: &str, version: &str, name: &str) -> Option<MessageDescriptor> {
    let package = match (group, version) {
        ("", "v1") => "api.core.v1",
        ("apps", "v1") => "api.apps.v1",
        ("batch", "v1") => "api.batch.v1",
        ("coordination.k8s.io", "v1") => "api.coordination.v1",
        ("events.k8s.io", "v1") => "api.events.v1",
        ("meta.k8s.io", "v1") => "apimachinery.pkg.apis.meta.v1",
        ("runtime", "") => "apimachinery.pkg.runtime",
        _ => return None,
    };
    FILES
        .as_ref()?
        .iter()
        .filter(|file| file.package() == package)
        .find_map(|file| file.message_by_package_relative_name(name))
}

/// The protobuf message of a built-in kind (`""`, `"v1"`, `"ConfigMap"`), or of any type
/// the descriptors hold for that group and version (`DeleteOptions` under
/// `meta.k8s.io`); `None` for kinds without one (custom resources).
pub(crate) fn descriptor(group: &str, version: &str, kind: &str) -> Option<MessageDescriptor> {
    message(group, version, kind)
}

/// The `apiVersion` and `kind` in an envelope's `typeMeta`, and the object's message.
pub(crate) struct Envelope {
    /// `typeMeta.apiVersion`.
    pub(crate) api_version: String,
    /// `typeMeta.kind`.
    pub(crate) kind: String,
    /// `raw`: the object's own message.
    pub(crate) raw: Vec<u8>,
}

/// Reads the `k8s\0` + `runtime.Unknown` envelope of a body.
pub(crate) fn open(body: &[u8]) -> Result<Envelope, ProtobufError> {
    let unknown_bytes = body.strip_prefix(MAGIC).ok_or(ProtobufError::NoMagic)?;
    let unknown_d = unknown_descriptor()?;
    let unknown = unknown_d.parse_from_bytes(unknown_bytes)?;
    let text = |message: &dyn MessageDyn, d: &MessageDescriptor, name: &str| match d
        .field_by_name(name)
        .and_then(|f| f.get_singular(message))
    {
        Some(ReflectValueRef::String(s)) => s.to_owned(),
        _ => String::new(),
    };
    let (api_version, kind) = match unknown_d
        .field_by_name("typeMeta")
        .and_then(|f| f.get_singular(&*unknown))
    {
        Some(ReflectValueRef::Message(type_meta)) => {
            let d = type_meta.descriptor_dyn();
            (
                text(&*type_meta, &d, "apiVersion"),
                text(&*type_meta, &d, "kind"),
            )
        }
        _ => (String::new(), String::new()),
    };
    let raw = match unknown_d
        .field_by_name("raw")
        .and_then(|f| f.get_singular(&*unknown))
    {
        Some(ReflectValueRef::Bytes(raw)) => raw.to_vec(),
        _ => Vec::new(),
    };
    Ok(Envelope {
        api_version,
        kind,
        raw,
    })
}

/// Decodes `raw` as a `descriptor` message into its JSON.
pub(crate) fn decode(descriptor: &MessageDescriptor, raw: &[u8]) -> Result<Value, ProtobufError> {
    let message = descriptor.parse_from_bytes(raw)?;
    message_to_json(&*message, descriptor)
}

/// Encodes `value` (an object's JSON) as an envelope of `api_version`/`kind` around its
/// `descriptor` message. Fields the message does not have (`kind`, `apiVersion`) are left
/// out, as the real encoder's typed objects have none.
pub(crate) fn encode(
    api_version: &str,
    kind: &str,
    descriptor: &MessageDescriptor,
    value: &Value,
) -> Result<Vec<u8>, ProtobufError> {
    let message = json_to_message(descriptor, value)?;
    let raw = message.write_to_bytes_dyn()?;
    let unknown_d = unknown_descriptor()?;
    let mut unknown = unknown_d.new_instance();
    let type_meta_field = field(&unknown_d, "typeMeta")?;
    let RuntimeFieldType::Singular(RuntimeType::Message(type_meta_d)) =
        type_meta_field.runtime_field_type()
    else {
        return Err(ProtobufError::Value(
            "runtime.Unknown has no typeMeta".into(),
        ));
    };
    let mut type_meta = type_meta_d.new_instance();
    field(&type_meta_d, "apiVersion")?
        .set_singular_field(&mut *type_meta, ReflectValueBox::String(api_version.into()));
    field(&type_meta_d, "kind")?
        .set_singular_field(&mut *type_meta, ReflectValueBox::String(kind.into()));
    type_meta_field.set_singular_field(&mut *unknown, ReflectValueBox::Message(type_meta));
    field(&unknown_d, "raw")?.set_singular_field(&mut *unknown, ReflectValueBox::Bytes(raw));
    field(&unknown_d, "contentEncoding")?
        .set_singular_field(&mut *unknown, ReflectValueBox::String(String::new()));
    field(&unknown_d, "contentType")?
        .set_singular_field(&mut *unknown, ReflectValueBox::String(String::new()));
    let mut body = MAGIC.to_vec();
    body.extend(unknown.write_to_bytes_dyn()?);
    Ok(body)
}

/// A successful JSON answer (an object, a list, a `Status`) re-encoded as protobuf, for a
/// client that asked for protobuf first. An answer whose kind has no message, and every
/// error, stays JSON (client-go reads an answer by its `Content-Type`).
///
/// # Cancel safety
/// Cancel safe: it only reads the answer's body.
pub(crate) async fn into_protobuf(response: axum::response::Response) -> axum::response::Response {
    let is_json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !response.status().is_success() || !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(error) => {
            return crate::status::ApiError::internal(&format!("reading the answer: {error}"))
                .into_response();
        }
    };
    let encoded = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|value| {
            let api_version = value["apiVersion"].as_str()?.to_owned();
            let kind = value["kind"].as_str()?.to_owned();
            let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
            // `Status` is `v1` on the wire but lives in meta.k8s.io's messages.
            let descriptor = if kind == "Status" {
                descriptor("meta.k8s.io", "v1", "Status")
            } else {
                descriptor(group, version, &kind)
            }?;
            encode(&api_version, &kind, &descriptor, &value).ok()
        });
    match encoded {
        Some(body) => {
            parts.headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static(PROTOBUF),
            );
            parts.headers.remove(http::header::CONTENT_LENGTH);
            axum::response::Response::from_parts(parts, axum::body::Body::from(body))
        }
        None => axum::response::Response::from_parts(parts, axum::body::Body::from(bytes)),
    }
}

fn unknown_descriptor() -> Result<MessageDescriptor, ProtobufError> {
    message("runtime", "", "Unknown")
        .ok_or_else(|| ProtobufError::Value("no runtime.Unknown descriptor".to_owned()))
}

fn field(descriptor: &MessageDescriptor, name: &str) -> Result<FieldDescriptor, ProtobufError> {
    descriptor.field_by_name(name).ok_or_else(|| {
        ProtobufError::Value(format!("{} has no field {name}", descriptor.full_name()))
    })
}

fn message_to_json(
    message: &dyn MessageDyn,
    d: &MessageDescriptor,
) -> Result<Value, ProtobufError> {
    if let Some(special) = Special::of(d) {
        return special_to_json(special, message, d);
    }
    let mut object = Map::new();
    for f in d.fields() {
        let value = match f.runtime_field_type() {
            RuntimeFieldType::Singular(_) => match f.get_singular(message) {
                Some(v) => value_to_json(v)?,
                None => continue,
            },
            RuntimeFieldType::Repeated(_) => {
                let repeated = f.get_repeated(message);
                if repeated.is_empty() {
                    continue;
                }
                let items: Result<Vec<Value>, _> = (0..repeated.len())
                    .map(|i| value_to_json(repeated.get(i)))
                    .collect();
                Value::Array(items?)
            }
            RuntimeFieldType::Map(..) => {
                let map = f.get_map(message);
                if map.is_empty() {
                    continue;
                }
                let mut entries = Map::new();
                for (key, value) in &map {
                    let key = match key {
                        ReflectValueRef::String(s) => s.to_owned(),
                        other => other.to_string(),
                    };
                    entries.insert(key, value_to_json(value)?);
                }
                Value::Object(entries)
            }
        };
        if is_unset(&value) {
            continue;
        }
        if is_inline(d, &f) {
            if let Value::Object(embedded) = value {
                object.extend(embedded);
            }
            continue;
        }
        object.insert(f.name().to_owned(), value);
    }
    Ok(Value::Object(object))
}

/// Whether `f` holds a Go struct embedded inline in `d`'s type: its fields are the
/// parent's own in JSON (`livenessProbe.httpGet`, a volume's `configMap`), but a message
/// of their own in protobuf.
fn is_inline(d: &MessageDescriptor, f: &FieldDescriptor) -> bool {
    matches!(
        (d.name(), f.name()),
        ("Probe", "handler")
            | ("Volume", "volumeSource")
            | ("PersistentVolumeSpec", "persistentVolumeSource")
            | ("EphemeralContainer", "ephemeralContainerCommon")
    )
}

/// Whether a decoded value is what Go's JSON leaves out as empty: an empty string or
/// a zero time (`null`).
fn is_unset(value: &Value) -> bool {
    matches!(value, Value::Null) || value.as_str() == Some("")
}

fn value_to_json(value: ReflectValueRef<'_>) -> Result<Value, ProtobufError> {
    Ok(match value {
        ReflectValueRef::U32(n) => Value::from(n),
        ReflectValueRef::U64(n) => Value::from(n),
        ReflectValueRef::I32(n) => Value::from(n),
        ReflectValueRef::I64(n) => Value::from(n),
        ReflectValueRef::F32(n) => {
            Number::from_f64(f64::from(n)).map_or(Value::Null, Value::Number)
        }
        ReflectValueRef::F64(n) => Number::from_f64(n).map_or(Value::Null, Value::Number),
        ReflectValueRef::Bool(b) => Value::Bool(b),
        ReflectValueRef::String(s) => Value::String(s.to_owned()),
        ReflectValueRef::Bytes(b) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        ReflectValueRef::Enum(_, n) => Value::from(n),
        ReflectValueRef::Message(m) => {
            let d = m.descriptor_dyn();
            message_to_json(&*m, &d)?
        }
    })
}

fn json_to_message(
    d: &MessageDescriptor,
    value: &Value,
) -> Result<Box<dyn MessageDyn>, ProtobufError> {
    let mut message = d.new_instance();
    if let Some(special) = Special::of(d) {
        special_from_json(special, d, &mut *message, value)?;
        return Ok(message);
    }
    let Value::Object(object) = value else {
        return Ok(message);
    };
    for f in d.fields().filter(|f| is_inline(d, f)) {
        if let RuntimeFieldType::Singular(RuntimeType::Message(embedded)) = f.runtime_field_type() {
            let inner = json_to_message(&embedded, value)?;
            if inner.compute_size_dyn() > 0 {
                f.set_singular_field(&mut *message, ReflectValueBox::Message(inner));
            }
        }
    }
    for (name, value) in object {
        let Some(f) = d.field_by_name(name) else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        match f.runtime_field_type() {
            RuntimeFieldType::Singular(t) => {
                if let Some(v) = json_to_value(&t, value)? {
                    f.set_singular_field(&mut *message, v);
                }
            }
            RuntimeFieldType::Repeated(t) => {
                let mut repeated = f.mut_repeated(&mut *message);
                for item in value.as_array().into_iter().flatten() {
                    if let Some(v) = json_to_value(&t, item)? {
                        repeated.push(v);
                    }
                }
            }
            RuntimeFieldType::Map(_, t) => {
                let mut map = f.mut_map(&mut *message);
                for (key, item) in value.as_object().into_iter().flatten() {
                    if let Some(v) = json_to_value(&t, item)? {
                        map.insert(ReflectValueBox::String(key.clone()), v);
                    }
                }
            }
        }
    }
    Ok(message)
}

fn json_to_value(t: &RuntimeType, value: &Value) -> Result<Option<ReflectValueBox>, ProtobufError> {
    let int = || value.as_i64().or_else(|| value.as_f64().map(|f| f as i64));
    Ok(Some(match t {
        RuntimeType::I32 => {
            ReflectValueBox::I32(int().and_then(|n| i32::try_from(n).ok()).unwrap_or(0))
        }
        RuntimeType::I64 => ReflectValueBox::I64(int().unwrap_or(0)),
        RuntimeType::U32 => ReflectValueBox::U32(
            value
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
        ),
        RuntimeType::U64 => ReflectValueBox::U64(value.as_u64().unwrap_or(0)),
        RuntimeType::F32 => ReflectValueBox::F32(value.as_f64().unwrap_or(0.0) as f32),
        RuntimeType::F64 => ReflectValueBox::F64(value.as_f64().unwrap_or(0.0)),
        RuntimeType::Bool => ReflectValueBox::Bool(value.as_bool().unwrap_or(false)),
        RuntimeType::String => match value {
            Value::String(s) => ReflectValueBox::String(s.clone()),
            other => ReflectValueBox::String(other.to_string()),
        },
        RuntimeType::VecU8 => {
            let text = value.as_str().unwrap_or_default();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap_or_else(|_| text.as_bytes().to_vec());
            ReflectValueBox::Bytes(bytes)
        }
        RuntimeType::Enum(e) => ReflectValueBox::Enum(
            e.clone(),
            int().and_then(|n| i32::try_from(n).ok()).unwrap_or(0),
        ),
        RuntimeType::Message(d) => ReflectValueBox::Message(json_to_message(d, value)?),
    }))
}

#[cfg(test)]
mod tests;
