//! Answering an `admission.k8s.io/v1` AdmissionReview with a typed hook: the
//! envelope (uid, `allowed`, the Status of a denial, warnings, the patch of a
//! defaulting hook) is the library's; the hook sees typed objects.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kube::Resource;
use kube::core::DynamicObject;
use kube::core::admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, META_API_VERSION_V1, META_KIND, Operation,
};
use kube::core::response::StatusSummary;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::hook::{Answer, HookKind, guarded};
use super::patch::defaulting_patch;
use super::{AdmissionContext, Defaulter, Denial, Validator};

/// A review opened for a hook of `K`: the request (its objects taken out), the
/// context, and the objects as sent and as `K`.
struct Opened<K> {
    request: AdmissionRequest<DynamicObject>,
    ctx: AdmissionContext,
    /// `request.object` as sent (`None` for a delete).
    sent: Option<Value>,
    object: Option<K>,
    old: Option<K>,
}

/// Answers a review for the defaulting hook of `K`.
pub(crate) fn mutate<K: Defaulter>(body: &[u8]) -> Answer {
    let opened = match open::<K>(body) {
        Ok(opened) => opened,
        Err(answer) => return answer,
    };
    let allowed = AdmissionResponse::from(&opened.request);
    match (&opened.request.operation, opened.object, opened.sent) {
        (Operation::Create | Operation::Update, Some(object), Some(sent)) => {
            match defaulted(object, &sent, &opened.ctx) {
                Ok(patch) if patch.0.is_empty() => review(allowed),
                Ok(patch) => patched(allowed, &patch),
                Err(denial) => review(denied(&opened.request, &denial)),
            }
        }
        (Operation::Create | Operation::Update, ..) => {
            let message = format!("a {:?} review with no object", opened.request.operation);
            review(denied(&opened.request, &Denial::new(message).code(400)))
        }
        _ => review(allowed),
    }
}

/// The patch `K`'s hook makes to `object` (`sent`, decoded).
fn defaulted<K: Defaulter>(
    mut object: K,
    sent: &Value,
    ctx: &AdmissionContext,
) -> Result<json_patch::Patch, Denial> {
    let encode = |object: &K| {
        serde_json::to_value(object)
            .map_err(|e| Denial::new(format!("cannot encode the {}: {e}", K::kind(&()))).code(500))
    };
    let before = encode(&object)?;
    guarded(|| object.set_defaults(ctx))?;
    let after = encode(&object)?;
    Ok(defaulting_patch(sent, &before, &after))
}

/// Answers a review for the validating hook of `K`.
pub(crate) fn validate<K: Validator>(body: &[u8]) -> Answer {
    let opened = match open::<K>(body) {
        Ok(opened) => opened,
        Err(answer) => return answer,
    };
    let Opened {
        request,
        ctx,
        object,
        old,
        ..
    } = opened;
    let missing = |what: &str| {
        Err(Denial::new(format!("a {:?} review with no {what}", request.operation)).code(400))
    };
    let verdict = match (&request.operation, object, old) {
        (Operation::Create, Some(object), _) => {
            guarded(|| object.validate_create(&ctx)).and_then(|v| v)
        }
        (Operation::Update, Some(object), Some(old)) => {
            guarded(|| object.validate_update(&old, &ctx)).and_then(|v| v)
        }
        (Operation::Delete, _, Some(old)) if K::VALIDATES_DELETE => {
            guarded(|| old.validate_delete(&ctx)).and_then(|v| v)
        }
        (Operation::Delete, _, None) if K::VALIDATES_DELETE => missing("oldObject"),
        (Operation::Create, None, _) => missing("object"),
        (Operation::Update, None, _) => missing("object"),
        (Operation::Update, Some(_), None) => missing("oldObject"),
        _ => Ok(Vec::new()),
    };
    let response = match verdict {
        Ok(warnings) => {
            let mut response = AdmissionResponse::from(&request);
            if !warnings.is_empty() {
                response.warnings = Some(warnings);
            }
            response
        }
        Err(denial) => denied(&request, &denial),
    };
    review(response)
}

/// Decodes `body` as an AdmissionReview for `K`.
///
/// # Errors
/// The answer to send instead: 400 for a body that is not an AdmissionReview v1 with
/// a request; a denial (code 400) for a request of another kind or an object that
/// is not a `K`.
fn open<K: Resource<DynamicType = ()> + DeserializeOwned>(
    body: &[u8],
) -> Result<Opened<K>, Answer> {
    let mut value: Value = serde_json::from_slice(body)
        .map_err(|e| Answer::BadRequest(format!("the body is not JSON: {e}")))?;
    let api_version = value.get("apiVersion").and_then(Value::as_str);
    let kind = value.get("kind").and_then(Value::as_str);
    if (api_version, kind) != (Some(META_API_VERSION_V1), Some(META_KIND)) {
        return Err(Answer::BadRequest(format!(
            "expected a {META_API_VERSION_V1} {META_KIND}, got apiVersion {api_version:?}, kind {kind:?}"
        )));
    }
    let Some(fields) = value.get_mut("request").and_then(Value::as_object_mut) else {
        return Err(Answer::BadRequest(format!(
            "the {META_KIND} has no request"
        )));
    };
    let sent = fields.remove("object").filter(|v| !v.is_null());
    let old_sent = fields.remove("oldObject").filter(|v| !v.is_null());
    let decoded: AdmissionReview<DynamicObject> = serde_json::from_value(value)
        .map_err(|e| Answer::BadRequest(format!("the {META_KIND} does not decode: {e}")))?;
    let request: AdmissionRequest<DynamicObject> = decoded
        .try_into()
        .map_err(|e| Answer::BadRequest(format!("{e}")))?;
    let ctx = AdmissionContext {
        operation: request.operation.clone(),
        dry_run: request.dry_run,
        user_info: request.user_info.clone(),
        namespace: request.namespace.clone(),
        name: request.name.clone(),
        sub_resource: request.sub_resource.clone(),
    };
    let expected = HookKind::of::<K>();
    let got = &request.kind;
    if (got.group.as_str(), got.version.as_str(), got.kind.as_str())
        != (&*expected.group, &*expected.version, &*expected.kind)
    {
        let got_version = if got.group.is_empty() {
            got.version.clone()
        } else {
            format!("{}/{}", got.group, got.version)
        };
        let denial = Denial::new(format!(
            "this webhook admits {} {}, not {got_version} {}",
            expected.api_version(),
            expected.kind,
            got.kind
        ))
        .code(400);
        return Err(review(denied(&request, &denial)));
    }
    let decode = |sent: &Option<Value>| match sent {
        None => Ok(None),
        Some(v) => K::deserialize(v).map(Some).map_err(|e| {
            let denial = Denial::new(format!("the object is not a valid {}: {e}", expected.kind));
            review(denied(&request, &denial.code(400)))
        }),
    };
    let object = decode(&sent)?;
    let old = decode(&old_sent)?;
    Ok(Opened {
        request,
        ctx,
        sent,
        object,
        old,
    })
}

/// The response refusing `request` for `denial`.
fn denied(request: &AdmissionRequest<DynamicObject>, denial: &Denial) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request).deny(denial.message());
    response.result.status = Some(StatusSummary::Failure);
    response.result.code = denial.status_code();
    response.result.reason = denial.reason().to_owned();
    response
}

/// `response` with `patch`, in its review, as JSON: the patch base64-encoded, as
/// the API server decodes a `[]byte` from JSON (kube's `AdmissionResponse` would
/// write it as an array of numbers).
fn patched(response: AdmissionResponse, patch: &json_patch::Patch) -> Answer {
    let mut answer = review(response);
    if let Answer::Review(value) = &mut answer {
        let encoded = serde_json::to_vec(patch).map(|bytes| STANDARD.encode(bytes));
        if let (Some(fields), Ok(encoded)) = (
            value.get_mut("response").and_then(Value::as_object_mut),
            encoded,
        ) {
            fields.insert("patch".into(), Value::String(encoded));
            fields.insert("patchType".into(), Value::String("JSONPatch".into()));
        }
    }
    answer
}

/// `response` in its review, as JSON.
fn review(response: AdmissionResponse) -> Answer {
    match serde_json::to_value(response.into_review()) {
        Ok(value) => Answer::Review(value),
        Err(e) => Answer::BadRequest(format!("cannot encode the response: {e}")),
    }
}
