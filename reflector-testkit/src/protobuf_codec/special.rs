//! The protobuf messages with a JSON form of their own (`Time`, `MicroTime`, `Duration`,
//! `Quantity`, `IntOrString`, and the raw-JSON carriers), mapped as the Go types marshal
//! them.

use ::protobuf::MessageDyn;
use ::protobuf::reflect::{MessageDescriptor, ReflectValueBox, ReflectValueRef};
use serde_json::Value;

use super::{ProtobufError, field};

/// The types with a JSON form of their own, by message name (package left out: the
/// generated descriptors' packages are not the Go ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Special {
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    RawJson,
}

impl Special {
    pub(super) fn of(descriptor: &MessageDescriptor) -> Option<Self> {
        let full = descriptor.full_name();
        let in_package = |package: &str| full.contains(package);
        Some(match descriptor.name() {
            "Time" if in_package("meta.v1") => Self::Time,
            "MicroTime" if in_package("meta.v1") => Self::MicroTime,
            "Duration" if in_package("meta.v1") => Self::Duration,
            "Quantity" if in_package("api.resource") => Self::Quantity,
            "IntOrString" if in_package("intstr") => Self::IntOrString,
            "RawExtension" if in_package("runtime") => Self::RawJson,
            "FieldsV1" if in_package("meta.v1") => Self::RawJson,
            "JSON" if in_package("apiextensions") => Self::RawJson,
            _ => return None,
        })
    }
}

/// A field of a special message, if set.
fn get<'a>(
    message: &'a dyn MessageDyn,
    d: &MessageDescriptor,
    name: &str,
) -> Option<ReflectValueRef<'a>> {
    d.field_by_name(name)?.get_singular(message)
}

pub(super) fn special_to_json(
    special: Special,
    message: &dyn MessageDyn,
    d: &MessageDescriptor,
) -> Result<Value, ProtobufError> {
    let int = |name: &str| match get(message, d, name) {
        Some(ReflectValueRef::I64(n)) => n,
        Some(ReflectValueRef::I32(n)) => i64::from(n),
        _ => 0,
    };
    let text = |name: &str| match get(message, d, name) {
        Some(ReflectValueRef::String(s)) => s.to_owned(),
        _ => String::new(),
    };
    Ok(match special {
        Special::Time | Special::MicroTime => {
            let (seconds, nanos) = (int("seconds"), int("nanos"));
            if seconds == 0 && nanos == 0 {
                return Ok(Value::Null);
            }
            let time = k8s_openapi::jiff::Timestamp::new(
                seconds,
                i32::try_from(nanos).unwrap_or_default(),
            )
            .map_err(|e| ProtobufError::Value(e.to_string()))?;
            let text = if special == Special::Time {
                time.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
            } else {
                time.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
            };
            Value::String(text)
        }
        Special::Duration => Value::String(go_duration(int("duration"))),
        Special::Quantity => Value::String(text("string")),
        Special::IntOrString => {
            if int("type") == 1 {
                Value::String(text("strVal"))
            } else {
                Value::from(int("intVal"))
            }
        }
        Special::RawJson => {
            let raw = d
                .fields()
                .find(|f| f.name().eq_ignore_ascii_case("raw"))
                .and_then(|f| f.get_singular(message));
            match raw {
                Some(ReflectValueRef::Bytes(bytes)) if !bytes.is_empty() => {
                    serde_json::from_slice(bytes)
                        .map_err(|e| ProtobufError::Value(format!("raw JSON: {e}")))?
                }
                _ => Value::Null,
            }
        }
    })
}

/// A duration in nanoseconds as Go's `time.Duration.String()` (`1h2m3s`, `1.5s`, `0s`).
pub(super) fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let total = nanos.unsigned_abs();
    if total < 1_000_000_000 {
        let (unit, per) = match total {
            n if n < 1_000 => ("ns", 1),
            n if n < 1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", trim_fraction(total, per));
    }
    let hours = total / 3_600_000_000_000;
    let minutes = total / 60_000_000_000 % 60;
    let seconds = trim_fraction(total % 60_000_000_000, 1_000_000_000);
    let mut out = sign.to_owned();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{seconds}s"));
    out
}

/// `value / per` with its fraction, trailing zeros trimmed (`1500, 1000` → `1.5`).
fn trim_fraction(value: u64, per: u64) -> String {
    let whole = value / per;
    let fraction = value % per;
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = per.to_string().len() - 1;
    let fraction = format!("{fraction:0digits$}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

pub(super) fn special_from_json(
    special: Special,
    d: &MessageDescriptor,
    message: &mut dyn MessageDyn,
    value: &Value,
) -> Result<(), ProtobufError> {
    let mut set = |name: &str, v: ReflectValueBox| -> Result<(), ProtobufError> {
        field(d, name)?.set_singular_field(message, v);
        Ok(())
    };
    match special {
        Special::Time | Special::MicroTime => {
            let Some(text) = value.as_str() else {
                return Ok(());
            };
            let time: k8s_openapi::jiff::Timestamp = text
                .parse()
                .map_err(|e| ProtobufError::Value(format!("time {text:?}: {e}")))?;
            set("seconds", ReflectValueBox::I64(time.as_second()))?;
            set("nanos", ReflectValueBox::I32(time.subsec_nanosecond()))?;
        }
        Special::Duration => {
            let nanos = value
                .as_str()
                .and_then(|s| s.parse::<k8s_openapi::jiff::SignedDuration>().ok())
                .and_then(|d| i64::try_from(d.as_nanos()).ok())
                .unwrap_or(0);
            set("duration", ReflectValueBox::I64(nanos))?;
        }
        Special::Quantity => {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            set("string", ReflectValueBox::String(text))?;
        }
        Special::IntOrString => match value {
            Value::String(s) => {
                set("type", ReflectValueBox::I64(1))?;
                set("strVal", ReflectValueBox::String(s.clone()))?;
            }
            other => {
                set("type", ReflectValueBox::I64(0))?;
                let n = other
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .unwrap_or(0);
                set("intVal", ReflectValueBox::I32(n))?;
            }
        },
        Special::RawJson => {
            let raw = d
                .fields()
                .find(|f| f.name().eq_ignore_ascii_case("raw"))
                .ok_or_else(|| ProtobufError::Value(format!("{} has no raw", d.full_name())))?;
            let bytes =
                serde_json::to_vec(value).map_err(|e| ProtobufError::Value(e.to_string()))?;
            raw.set_singular_field(message, ReflectValueBox::Bytes(bytes));
        }
    }
    Ok(())
}
