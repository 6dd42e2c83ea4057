//! A CRD's conversion webhook, called as the real `webhookConverter` calls it: one
//! `apiextensions.k8s.io/v1` `ConversionReview` for every object (or list of objects) not
//! already in the desired version, the answer checked (uid echoed, `result.status:
//! Success`, as many objects as sent, each in the desired group/version and of the same
//! kind, with the same name, namespace and uid), and each object's `metadata` restored
//! from the original but for its labels and annotations. Failures are the real messages
//! (`conversion webhook for example.com/v1, Kind=Widget failed: ...`).

use std::time::Duration;

use kube::core::TypeMeta;
use kube::core::conversion::{ConversionRequest, ConversionReview};
use serde_json::{Value, json};

use super::call::ClientConfig;
use crate::server::Shared;
use crate::status::go_quote;

/// The real conversion client's timeout (sent as `?timeout=30s`).
const TIMEOUT: Duration = Duration::from_secs(30);

/// How a CRD converts through its webhook (`spec.conversion.webhook`).
#[derive(Debug, Clone)]
pub(crate) struct Conversion {
    /// The storage version's name.
    pub storage_version: String,
    /// `clientConfig`.
    client: ClientConfig,
    /// `conversionReviewVersions`.
    review_versions: Vec<String>,
}

impl Conversion {
    /// The webhook conversion of a CRD (as stored JSON), if its strategy is `Webhook`.
    pub(crate) fn of_crd(crd: &Value) -> Option<Self> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let webhook = conversion.get("webhook")?;
        let storage_version = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)?
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
            .get("name")?
            .as_str()?
            .to_owned();
        Some(Self {
            storage_version,
            client: ClientConfig::from_value(webhook.get("clientConfig")?),
            review_versions: super::rules::strings(webhook.get("conversionReviewVersions")),
        })
    }
}

/// `group/version, Kind=kind` (Go's `GroupVersionKind.String()`) of an object or list.
pub(crate) fn gvk_of(value: &Value) -> String {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match api_version.split_once('/') {
        Some(_) => format!("{api_version}, Kind={kind}"),
        None => format!("/{api_version}, Kind={kind}"),
    }
}

/// Converts `input` — one object, or a list whose `items` are converted — to `desired`
/// (`group/version`); objects already there are left alone. The error is the real
/// message.
///
/// # Cancel safety
/// Cancel safe: nothing is stored.
pub(crate) async fn convert(
    shared: &Shared,
    conversion: &Conversion,
    input: &Value,
    desired: &str,
) -> Result<Value, String> {
    let gvk = gvk_of(input);
    let list = input.get("items").and_then(Value::as_array);
    let to_convert: Vec<Value> = match list {
        Some(items) => items
            .iter()
            .filter(|item| item.get("apiVersion").and_then(Value::as_str) != Some(desired))
            .cloned()
            .collect(),
        None if input.get("apiVersion").and_then(Value::as_str) == Some(desired) => Vec::new(),
        None => vec![input.clone()],
    };
    let mut output = input.clone();
    if to_convert.is_empty() {
        output["apiVersion"] = json!(desired);
        return Ok(output);
    }
    if !conversion.review_versions.iter().any(|v| v == "v1") {
        return Err("no supported conversion review versions".to_owned());
    }
    let uid = crate::object::new_uid();
    let review = ConversionReview {
        types: TypeMeta {
            api_version: "apiextensions.k8s.io/v1".to_owned(),
            kind: "ConversionReview".to_owned(),
        },
        request: Some(ConversionRequest {
            types: None,
            uid: uid.clone(),
            desired_api_version: desired.to_owned(),
            objects: to_convert.clone(),
        }),
        response: None,
    };
    let body = serde_json::to_vec(&review).map_err(|e| e.to_string())?;
    let services = &shared.config.webhook_services;
    let failed = |e: String| format!("conversion webhook for {gvk} failed: {e}");
    let answer = super::call::post(&conversion.client, services, TIMEOUT, body, &shared.token)
        .await
        .map_err(failed)?;
    let converted = converted_objects(&uid, &answer).map_err(failed)?;
    if converted.len() != to_convert.len() {
        return Err(format!(
            "conversion webhook for {gvk} returned {} objects, expected {}",
            converted.len(),
            to_convert.len()
        ));
    }
    match output.get_mut("items").and_then(Value::as_array_mut) {
        Some(items) => {
            let mut converted = converted.into_iter().enumerate();
            for item in items.iter_mut() {
                if item.get("apiVersion").and_then(Value::as_str) == Some(desired) {
                    continue;
                }
                let Some((index, mut object)) = converted.next() else {
                    break;
                };
                // The real message counts from one here.
                let at = format!(
                    "conversion webhook for {gvk} returned invalid converted object at index {}",
                    index + 1
                );
                check_type(item, &object, desired)
                    .and_then(|()| check_identity(item, &object))
                    .map_err(|e| format!("{at}: {e}"))?;
                restore_metadata(item, &mut object).map_err(|e| {
                    format!("conversion webhook for {gvk} returned invalid metadata in object at index {index}: {e}")
                })?;
                *item = object;
            }
        }
        None => {
            let mut object = converted.into_iter().next().unwrap_or_default();
            check_type(input, &object, desired).map_err(|e| {
                format!("conversion webhook for {gvk} returned invalid object at index 0: {e}")
            })?;
            check_identity(input, &object).map_err(|e| {
                format!("conversion webhook for {gvk} returned invalid object: {e}")
            })?;
            restore_metadata(input, &mut object).map_err(|e| {
                format!("conversion webhook for {gvk} returned invalid metadata: {e}")
            })?;
            output = object;
        }
    }
    output["apiVersion"] = json!(desired);
    Ok(output)
}

/// The converted objects of a v1 answer, checked as the real
/// `getConvertedObjectsFromResponse`.
fn converted_objects(uid: &str, answer: &[u8]) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(answer)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let gvk = gvk_of(&review);
    if gvk != "apiextensions.k8s.io/v1, Kind=ConversionReview" {
        return Err(format!(
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {gvk}"
        ));
    }
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".to_owned());
    };
    let got = response
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if got != uid {
        return Err(format!(
            "expected response.uid={}, got {}",
            go_quote(uid),
            go_quote(got)
        ));
    }
    let result = response.get("result").cloned().unwrap_or_default();
    let text = |field: &str| {
        result
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    if text("status") != "Success" {
        if !text("message").is_empty() {
            return Err(text("message").to_owned());
        }
        return Err(format!(
            "response.result.status was '{}', not 'Success'",
            text("status")
        ));
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The converted object's group/version and kind.
fn check_type(original: &Value, converted: &Value, desired: &str) -> Result<(), String> {
    let got = text_at(converted, "/apiVersion");
    if got != desired {
        return Err(format!(
            "invalid groupVersion (expected {desired}, received {got})"
        ));
    }
    let (expected, received) = (text_at(original, "/kind"), text_at(converted, "/kind"));
    if expected != received {
        return Err(format!(
            "invalid kind (expected {expected}, received {received})"
        ));
    }
    Ok(())
}

/// The real `validateConvertedObject`: the same name, namespace and uid.
fn check_identity(original: &Value, converted: &Value) -> Result<(), String> {
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let pointer = format!("/metadata/{field}");
        let (was, is) = (text_at(original, &pointer), text_at(converted, &pointer));
        if was != is {
            return Err(format!("must have the same {what}: {was} != {is}"));
        }
    }
    Ok(())
}

/// The string at `pointer` (empty when there is none).
fn text_at(value: &Value, pointer: &str) -> String {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The real `restoreObjectMeta`: the original's metadata, with the converted object's
/// labels and annotations (which must be maps of strings).
fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let Some(answered) = converted.get("metadata").cloned() else {
        return Err("missing metadata in converted object".to_owned());
    };
    let Value::Object(answered) = answered else {
        return Err("invalid metadata of type in converted object".to_owned());
    };
    let mut metadata = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                metadata.remove(field);
            }
            Some(Value::Object(map)) => {
                if let Some((key, _)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{key}] must be a string in converted object"
                    ));
                }
                metadata.insert(field.to_owned(), Value::Object(map.clone()));
            }
            Some(_) => return Err(format!("invalid metadata.{field} in converted object")),
        }
    }
    converted["metadata"] = Value::Object(metadata);
    Ok(())
}
