//! Calling admission webhooks as the real dispatchers do: an `admission.k8s.io/v1`
//! `AdmissionReview` per call (the mutating webhooks are run by [`super::mutating`]),
//! validating webhooks together; the answer checked as
//! the real `VerifyAdmissionResponse`, and refusals and failures worded and coded as the
//! real server's (`admission webhook "x" denied the request: ...`, `Internal error
//! occurred: failed calling webhook "x": failed to call webhook: ...`).

use base64::Engine;
use kube::core::admission::{AdmissionRequest, AdmissionReview, Operation};
use kube::core::{DynamicObject, GroupVersionKind, TypeMeta};
use serde_json::{Value, json};

use super::attributes::Attributes;
use super::capture::Seen;
use super::equivalent::Equivalent;
use super::rules::Hook;
use crate::server::Shared;
use crate::status::{ApiError, go_quote};

/// The user every request is admitted as: this server authenticates nobody, and answers
/// everyone as a cluster administrator would be answered.
const USER: &str = "system:admin";

/// What a write tells its webhooks besides the object.
pub(crate) struct Facts {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `CreateOptions`, `UpdateOptions`, `PatchOptions` or `DeleteOptions`.
    pub options: Value,
}

/// What the calls of one admission pass left for the client: `Warning` texts.
pub(crate) type Warnings = Vec<String>;

/// How one call went wrong.
pub(super) enum Failed {
    /// Not called, no answer, or an invalid one: `failurePolicy` decides.
    Call(String),
    /// A refusal or an error no policy excuses.
    Final(ApiError),
}

/// The old object webhooks are sent, in the admission point's version: the stored object
/// (its Scale for the `scale` subresource), if any.
pub(super) fn old_object(seen: &Seen) -> Option<Value> {
    let old = seen.old_object.as_ref()?;
    Some(match &seen.scale {
        Some(paths) => crate::crd::scale_of(old, paths),
        None => old.clone(),
    })
}

/// What one call sends besides the write's attributes.
pub(super) struct Sent<'a> {
    /// `object`, in the matched version.
    pub object: Option<&'a Value>,
    /// `oldObject`, in the matched version.
    pub old_object: Option<&'a Value>,
    /// The resource and kind the hook matched.
    pub invocation: &'a Equivalent,
}

/// Calls the validating `hooks` together on `object` (what the write would store; None
/// for a delete), each sent it in the version it matched; the first refusal, in the
/// hooks' order, refuses the write.
///
/// # Cancel safety
/// Cancel safe: nothing is stored; dropping it drops the calls in flight.
pub(crate) async fn validate(
    shared: &Shared,
    hooks: &[(Hook, Equivalent)],
    seen: &Seen,
    object: Option<&Value>,
    attributes: &Attributes,
    facts: &Facts,
    warnings: &mut Warnings,
) -> Result<(), ApiError> {
    // The objects in each version a hook matched, converted once per version, and which
    // of them each hook is sent.
    let mut versions: Vec<(&GroupVersionKind, Option<Value>, Option<Value>)> = Vec::new();
    let mut sent_version = Vec::with_capacity(hooks.len());
    let old = old_object(seen);
    for (_, invocation) in hooks {
        if let Some(at) = versions.iter().position(|(k, _, _)| **k == invocation.kind) {
            sent_version.push(at);
            continue;
        }
        let base = &attributes.object_kind;
        let to = &invocation.kind;
        let equivalents = &attributes.equivalents;
        let new = equivalents.convert_some(shared, object, base, to).await;
        let old = equivalents
            .convert_some(shared, old.as_ref(), base, to)
            .await;
        let internal = |e: String| ApiError::internal(&e);
        versions.push((to, new.map_err(internal)?, old.map_err(internal)?));
        sent_version.push(versions.len() - 1);
    }
    let mut called = Vec::with_capacity(hooks.len());
    for ((hook, invocation), at) in hooks.iter().zip(sent_version) {
        let (_, new, old) = &versions[at];
        let sent = Sent {
            object: new.as_ref(),
            old_object: old.as_ref(),
            invocation,
        };
        if conditions_hold(hook, seen, &sent, attributes, facts)? {
            called.push((hook, sent));
        }
    }
    let calls = called
        .iter()
        .map(|(hook, sent)| call(shared, hook, false, seen, sent, attributes, facts));
    let answers = futures::future::join_all(calls).await;
    let mut first_error = None;
    for ((hook, _), answer) in called.iter().zip(answers) {
        let result = match answer {
            Ok(answer) => {
                warnings.extend(answer.warnings.iter().cloned());
                if answer.allowed {
                    Ok(())
                } else {
                    Err(denied(&hook.name, &answer.status))
                }
            }
            Err(failed) => settle(hook, failed),
        };
        if let Err(error) = result {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// A failed call under the hook's `failurePolicy`: `Ignore` lets the write go on, `Fail`
/// answers the real 500.
pub(super) fn settle(hook: &Hook, failed: Failed) -> Result<(), ApiError> {
    match failed {
        Failed::Final(error) => Err(error),
        Failed::Call(reason) if hook.ignore_failures => {
            tracing::warn!(webhook = hook.name, %reason, "failed calling webhook, failing open");
            Ok(())
        }
        Failed::Call(reason) => Err(ApiError::internal(&format!(
            "failed calling webhook {}: {reason}",
            go_quote(&hook.name)
        ))),
    }
}

/// The real `ToStatusErr`: the hook's Status with the message prefixed by who denied it
/// and a code of at least 400.
pub(super) fn denied(name: &str, status: &Value) -> ApiError {
    let text = |field: &str| {
        status
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let denied_by = format!("admission webhook {} denied the request", go_quote(name));
    let message = match (text("message"), text("reason")) {
        ("", "") => format!("{denied_by} without explanation"),
        ("", reason) => format!("{denied_by}: {reason}"),
        (message, _) => format!("{denied_by}: {message}"),
    };
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let mut error = ApiError::new(code, "", message);
    error.reason = text("reason").to_owned().into();
    error.details = status.get("details").cloned();
    error
}

/// A verified answer.
pub(super) struct Answer {
    pub allowed: bool,
    pub status: Value,
    pub patch: Option<json_patch::Patch>,
    pub warnings: Vec<String>,
}

/// One call: the review sent, the answer read and verified.
///
/// # Cancel safety
/// Cancel safe: dropping it drops the connection.
pub(super) async fn call(
    shared: &Shared,
    hook: &Hook,
    mutating: bool,
    seen: &Seen,
    sent: &Sent<'_>,
    attributes: &Attributes,
    facts: &Facts,
) -> Result<Answer, Failed> {
    if facts.dry_run {
        match hook.side_effects.as_deref() {
            None => return Err(Failed::Call("Webhook SideEffects is nil".to_owned())),
            Some("None" | "NoneOnDryRun") => {}
            Some(_) => {
                return Err(Failed::Final(ApiError::bad_request(format!(
                    "admission webhook {} does not support dry run",
                    go_quote(&hook.name)
                ))));
            }
        }
    }
    if !hook.review_versions.iter().any(|v| v == "v1") {
        return Err(Failed::Call(
            "webhook does not accept known AdmissionReview versions (v1, v1beta1)".to_owned(),
        ));
    }
    let uid = crate::object::new_uid();
    let review = review(&uid, seen, sent, attributes, facts);
    let mut review = serde_json::to_value(&review).map_err(|e| Failed::Call(e.to_string()))?;
    as_the_real_server_sends(&mut review);
    let body = serde_json::to_vec(&review).map_err(|e| Failed::Call(e.to_string()))?;
    let services = &shared.config.webhook_services;
    let bytes = super::call::post(&hook.client, services, hook.timeout, body, &shared.token)
        .await
        .map_err(|e| Failed::Call(format!("failed to call webhook: {e}")))?;
    verify(&uid, mutating, &bytes)
        .map_err(|e| Failed::Call(format!("received invalid webhook response: {e}")))
}

/// The `request` a hook's `matchConditions` see: the review's request without its
/// objects.
fn condition_request(
    seen: &Seen,
    sent: &Sent<'_>,
    attributes: &Attributes,
    facts: &Facts,
) -> Value {
    let shown = Sent {
        object: None,
        old_object: None,
        invocation: sent.invocation,
    };
    let mut review =
        serde_json::to_value(review("", seen, &shown, attributes, facts)).unwrap_or_default();
    as_the_real_server_sends(&mut review);
    let mut request = review
        .get_mut("request")
        .map(Value::take)
        .unwrap_or_default();
    if let Value::Object(fields) = &mut request {
        fields.remove("object");
        fields.remove("oldObject");
    }
    request
}

/// Whether `hook` is called, by its `matchConditions`, for the write sent as `sent`;
/// `Err` is the refusal its `failurePolicy: Fail` gives when one cannot be evaluated.
pub(super) fn conditions_hold(
    hook: &Hook,
    seen: &Seen,
    sent: &Sent<'_>,
    attributes: &Attributes,
    facts: &Facts,
) -> Result<bool, ApiError> {
    if hook.match_conditions.is_empty() {
        return Ok(true);
    }
    let request = condition_request(seen, sent, attributes, facts);
    let objects = [sent.object, sent.old_object];
    super::match_conditions::call_hook(hook, attributes, &seen.name, objects, &request)
}

/// The `AdmissionReview` the real server sends for this write: `kind`, `resource` and
/// `subResource` what the hook matched, `requestKind`, `requestResource` and
/// `requestSubResource` what the client wrote.
fn review(
    uid: &str,
    seen: &Seen,
    sent: &Sent<'_>,
    attributes: &Attributes,
    facts: &Facts,
) -> AdmissionReview<DynamicObject> {
    let subresource = (!seen.subresource.is_empty()).then(|| seen.subresource.to_owned());
    let dynamic = |value: Option<&Value>| {
        value.and_then(|v| serde_json::from_value::<DynamicObject>(v.clone()).ok())
    };
    let user_info = k8s_openapi::api::authentication::v1::UserInfo {
        username: Some(USER.to_owned()),
        groups: Some(vec![
            "system:masters".to_owned(),
            "system:authenticated".to_owned(),
        ]),
        ..Default::default()
    };
    let request = AdmissionRequest {
        types: TypeMeta::default(),
        uid: uid.to_owned(),
        kind: sent.invocation.kind.clone(),
        resource: sent.invocation.resource.clone(),
        sub_resource: subresource.clone(),
        request_kind: Some(attributes.kind.clone()),
        request_resource: Some(attributes.resource.clone()),
        request_sub_resource: subresource,
        name: seen.name.clone(),
        namespace: seen.namespace.clone(),
        operation: seen.operation.clone(),
        user_info,
        object: dynamic(sent.object),
        old_object: dynamic(sent.old_object),
        dry_run: facts.dry_run,
        options: Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(
            facts.options.clone(),
        )),
    };
    AdmissionReview {
        types: TypeMeta {
            api_version: kube::core::admission::META_API_VERSION_V1.to_owned(),
            kind: kube::core::admission::META_KIND.to_owned(),
        },
        request: Some(request),
        response: None,
    }
}

/// The review as the real server writes it: without kube's extra `api_version` in the
/// resources, and without the optional fields it leaves empty (`omitempty`).
fn as_the_real_server_sends(review: &mut Value) {
    let Some(Value::Object(request)) = review.get_mut("request") else {
        return;
    };
    for resource in ["resource", "requestResource"] {
        if let Some(Value::Object(resource)) = request.get_mut(resource) {
            resource.remove("api_version");
        }
    }
    for optional in ["subResource", "requestSubResource", "namespace"] {
        if request.get(optional).is_some_and(Value::is_null) {
            request.remove(optional);
        }
    }
}

/// The real `VerifyAdmissionResponse` for a v1 review. The answer is read leniently (a
/// `status` may be missing; `patch` is base64, or the byte array kube's own type writes).
fn verify(uid: &str, mutating: bool, bytes: &[u8]) -> Result<Answer, String> {
    let review: Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(str::to_owned);
    let gvk = match text(&review, "apiVersion")
        .unwrap_or_default()
        .split_once('/')
    {
        Some((group, version)) => format!(
            "{group}/{version}, Kind={}",
            text(&review, "kind").unwrap_or_default()
        ),
        None => format!("/, Kind={}", text(&review, "kind").unwrap_or_default()),
    };
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".to_owned());
    };
    let got_uid = text(response, "uid").unwrap_or_default();
    if got_uid != uid {
        return Err(format!(
            "expected response.uid={}, got {}",
            go_quote(uid),
            go_quote(&got_uid)
        ));
    }
    if gvk != "admission.k8s.io/v1, Kind=AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {gvk}"
        ));
    }
    let patch = patch_bytes(response.get("patch"))?;
    let patch_type = text(response, "patchType");
    if !mutating && !patch.is_empty() {
        return Err("validating webhook may not return response.patch".to_owned());
    }
    if !mutating && patch_type.is_some() {
        return Err("validating webhook may not return response.patchType".to_owned());
    }
    let patch = match (patch.is_empty(), patch_type.as_deref()) {
        (true, None) => None,
        (false, None) => {
            return Err("webhook returned response.patch but not response.patchType".to_owned());
        }
        (true, Some(_)) => {
            return Err("webhook returned response.patchType but not response.patch".to_owned());
        }
        (false, Some("JSONPatch")) => Some(
            serde_json::from_slice::<json_patch::Patch>(&patch)
                .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?,
        ),
        (false, Some(other)) => return Err(format!("unsupported patch type {}", go_quote(other))),
    };
    Ok(Answer {
        allowed: response.get("allowed").and_then(Value::as_bool) == Some(true),
        status: response.get("status").cloned().unwrap_or_else(|| json!({})),
        patch,
        warnings: super::rules::strings(response.get("warnings")),
    })
}

/// `response.patch`: Go's base64 string for `[]byte`, or an array of bytes.
fn patch_bytes(patch: Option<&Value>) -> Result<Vec<u8>, String> {
    match patch {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(text)) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("illegal base64 data in response.patch: {e}")),
        Some(Value::Array(items)) => items
            .iter()
            .map(|b| {
                b.as_u64()
                    .and_then(|b| u8::try_from(b).ok())
                    .ok_or_else(|| "response.patch is not a byte array".to_owned())
            })
            .collect(),
        Some(_) => Err("response.patch is neither a string nor a byte array".to_owned()),
    }
}

/// The options of a write, as the real server sends them (`CreateOptions` for an apply
/// that creates).
pub(crate) fn options(
    operation: &Operation,
    method: &http::Method,
    pairs: &[(String, String)],
    delete_body: Option<&Value>,
) -> Value {
    let kind = match (operation, method.as_str()) {
        (Operation::Create, _) => "CreateOptions",
        (Operation::Delete, _) => "DeleteOptions",
        (_, "PATCH") => "PatchOptions",
        _ => "UpdateOptions",
    };
    let mut options = match delete_body {
        Some(Value::Object(body)) if kind == "DeleteOptions" => Value::Object(body.clone()),
        _ => json!({}),
    };
    options["kind"] = json!(kind);
    options["apiVersion"] = json!("meta.k8s.io/v1");
    let param = |name| crate::query::param(pairs, name);
    if param("dryRun") == Some("All") {
        options["dryRun"] = json!(["All"]);
    }
    if kind != "DeleteOptions" {
        for field in ["fieldManager", "fieldValidation"] {
            if let Some(value) = param(field) {
                options[field] = json!(value);
            }
        }
    }
    if kind == "PatchOptions" && param("force") == Some("true") {
        options["force"] = json!(true);
    }
    if kind == "DeleteOptions"
        && let Some(policy) = param("propagationPolicy")
    {
        options["propagationPolicy"] = json!(policy);
    }
    options
}
