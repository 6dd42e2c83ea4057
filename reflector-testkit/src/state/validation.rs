//! Type-specific defaulting and validation the real API server applies on writes.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::resource::ResourceInfo;
use crate::status::ApiError;

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

/// Rejects a core ConfigMap or Secret whose data exceeds [`MAX_DATA_SIZE`] with the real
/// validation's 422: a ConfigMap counts `data` and (decoded) `binaryData` and reports
/// the whole object (field `[]`); a Secret counts (decoded) `data` merged with
/// `stringData` and reports `data`.
pub(super) fn validate_data_size(
    info: &ResourceInfo,
    name: &str,
    value: &Value,
) -> Result<(), ApiError> {
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
        _ => return Ok(()),
    };
    if total <= MAX_DATA_SIZE {
        return Ok(());
    }
    Err(ApiError::invalid(
        &info.kind,
        &info.group,
        name,
        field,
        "FieldValueTooLong",
        &format!("Too long: may not be more than {MAX_DATA_SIZE} bytes"),
    ))
}
