//! Requests for a version of a webhook-converted CRD other than its storage version.
//!
//! Its objects live once, in the storage version's store (as in etcd). A request for
//! another version is served by the storage version's handlers with the conversion
//! webhook on the way: a written body is converted to the storage version first (a
//! merge or JSON patch is applied to the stored object converted to the request's
//! version, then converted back and written as an update conditioned on the
//! resourceVersion read); every object answered — one, a list's items (one review for
//! the list), each event of a watch — is converted to the request's version. A failed
//! conversion answers the real 500 (a watch: an `ERROR` event, then the end).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{Method, header};
use serde_json::Value;

use super::conversion::{Conversion, convert};
use crate::fault::Fired;
use crate::router::{Target, header_text};
use crate::server::Shared;
use crate::state::ResourceId;
use crate::status::ApiError;

/// Largest body read for conversion (the real server's limit for most bodies).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// How many times a converted patch is retried when the object moved under it.
const PATCH_ATTEMPTS: usize = 3;

/// The resource a request for a converted version named, carried (as a request
/// extension) to the storage version's handlers so that admission webhooks are told of
/// the write as the client made it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Requested(pub ResourceId);

/// A request for a converted version.
#[derive(Clone)]
pub(crate) struct View {
    /// The resource the request named.
    requested: ResourceId,
    conversion: Arc<Conversion>,
    /// The request's `group/version`.
    api_version: String,
    /// The storage version's `group/version`.
    storage_api_version: String,
    /// The storage version's resource.
    storage_rid: ResourceId,
    /// `group` and `kind`, for patches.
    group: String,
    kind: String,
}

/// The view `target` asks for, with the target retargeted to the storage version; None
/// when it names no converted version.
pub(crate) fn view(shared: &Shared, target: &Target) -> Option<(View, Target)> {
    let mut retargeted = target.clone();
    let rid = match &mut retargeted {
        Target::Collection { rid, .. } | Target::Object { rid, .. } | Target::Scale { rid, .. } => {
            rid
        }
        _ => return None,
    };
    let state = shared.state();
    let conversion = state.custom.served(*rid)?.conversion.clone()?;
    let info = &state.resources[*rid];
    let storage_rid = state.find(&info.group, &conversion.storage_version, &info.plural)?;
    let view = View {
        requested: *rid,
        api_version: info.api_version(),
        storage_api_version: state.resources[storage_rid].api_version(),
        storage_rid,
        group: info.group.clone(),
        kind: info.kind.clone(),
        conversion,
    };
    *rid = storage_rid;
    Some((view, retargeted))
}

/// Serves a request for a converted version through the storage version's handlers.
///
/// # Cancel safety
/// Cancel safe: writes happen in the storage version's handlers, each under one lock.
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    view: View,
    method: &Method,
    target: &Target,
    pairs: &[(String, String)],
    mut request: Request,
    fired: Fired,
) -> Response {
    request.extensions_mut().insert(Requested(view.requested));
    let watch = crate::router::is_watch(pairs);
    let content_type = header_text(request.headers(), header::CONTENT_TYPE).to_owned();
    let request = match method.as_str() {
        "PATCH" if !content_type.starts_with(crate::apply::APPLY_PATCH) => {
            return patch(shared, &view, target, pairs, request).await;
        }
        "POST" | "PUT" | "PATCH" => match to_storage(shared, &view, request).await {
            Ok(request) => request,
            Err(error) => return error.into_response(),
        },
        _ => request,
    };
    let response = crate::router::dispatch(shared, method, target, pairs, request, fired).await;
    if watch {
        convert_watch(shared.clone(), view, response)
    } else {
        to_view(shared, &view, response).await
    }
}

/// A write's body converted to the storage version.
///
/// # Cancel safety
/// Cancel safe: it stores nothing.
async fn to_storage(shared: &Shared, view: &View, request: Request) -> Result<Request, ApiError> {
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ApiError::bad_request(format!("error reading request body: {e}")))?;
    let Ok(object) = serde_json::from_slice::<Value>(&bytes) else {
        // Not JSON: the handler answers for it.
        return Ok(Request::from_parts(parts, Body::from(bytes)));
    };
    if object.get("apiVersion").and_then(Value::as_str) != Some(view.api_version.as_str()) {
        return Ok(Request::from_parts(parts, Body::from(bytes)));
    }
    let stored = convert(shared, &view.conversion, &object, &view.storage_api_version)
        .await
        .map_err(ApiError::unknown)?;
    parts.headers.remove(header::CONTENT_LENGTH);
    let body = serde_json::to_vec(&stored).unwrap_or_default();
    Ok(Request::from_parts(parts, Body::from(body)))
}

/// A merge or JSON patch of a converted object: applied to the stored object in the
/// request's version, written back as an update at the resourceVersion read.
///
/// # Cancel safety
/// Cancel safe: each update is stored under one lock, or not at all.
async fn patch(
    shared: &Arc<Shared>,
    view: &View,
    target: &Target,
    pairs: &[(String, String)],
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return ApiError::bad_request(format!("error reading request body: {e}"))
                .into_response();
        }
    };
    let media = header_text(&parts.headers, header::CONTENT_TYPE)
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    let key = match target {
        Target::Object {
            namespace, name, ..
        } => crate::object::key_of(namespace.as_deref(), name),
        _ => return dispatch_as(shared, target, pairs, &parts, Method::PATCH, bytes).await,
    };
    let is_patch = matches!(
        media.as_str(),
        crate::patch::JSON_PATCH | crate::patch::MERGE_PATCH
    );
    let mut response = None;
    for _ in 0..PATCH_ATTEMPTS {
        let current = shared.state().get(view.storage_rid, &key);
        let (Some(current), true) = (current, is_patch) else {
            // Missing object, or a patch type a custom resource has not: the handler's answer.
            return dispatch_as(shared, target, pairs, &parts, Method::PATCH, bytes).await;
        };
        let updated = async {
            let mut object = convert(
                shared,
                &view.conversion,
                &current.value(),
                &view.api_version,
            )
            .await
            .map_err(ApiError::unknown)?;
            let kind = crate::strategic_merge::Kind {
                group: &view.group,
                kind: &view.kind,
            };
            crate::patch::Patch::decode(&media, &bytes)?.apply(kind, &mut object)?;
            let meta = crate::object::metadata_mut(&mut object);
            meta.entry("resourceVersion")
                .or_insert_with(|| current.rv.to_string().into());
            convert(shared, &view.conversion, &object, &view.storage_api_version)
                .await
                .map_err(ApiError::unknown)
        };
        let updated = match updated.await {
            Ok(updated) => updated,
            Err(error) => return error.into_response(),
        };
        let body = Bytes::from(serde_json::to_vec(&updated).unwrap_or_default());
        let answer = dispatch_as(shared, target, pairs, &parts, Method::PUT, body).await;
        let conflict = answer.status() == http::StatusCode::CONFLICT;
        response = Some(to_view(shared, view, answer).await);
        if !conflict {
            break;
        }
    }
    response.unwrap_or_else(|| ApiError::unknown("no attempt made").into_response())
}

/// Runs `method` with `body` (JSON) through the storage version's handlers.
///
/// # Cancel safety
/// As `router::dispatch`.
async fn dispatch_as(
    shared: &Arc<Shared>,
    target: &Target,
    pairs: &[(String, String)],
    parts: &http::request::Parts,
    method: Method,
    body: Bytes,
) -> Response {
    let mut request = Request::new(Body::from(body));
    *request.method_mut() = method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.headers_mut() = parts.headers.clone();
    *request.extensions_mut() = parts.extensions.clone();
    request.headers_mut().remove(header::CONTENT_LENGTH);
    if method == Method::PUT {
        request.headers_mut().insert(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
    }
    crate::router::dispatch(shared, &method, target, pairs, request, Fired::default()).await
}

/// A JSON answer of the storage version converted to the request's version: an object
/// of the kind, or a list of them; anything else (a `Status`, a Table, metadata only)
/// as it is.
///
/// # Cancel safety
/// Cancel safe: it only reads the answer.
async fn to_view(shared: &Shared, view: &View, response: Response) -> Response {
    let json =
        header_text(response.headers(), header::CONTENT_TYPE).starts_with("application/json");
    if !json || !response.status().is_success() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return ApiError::unknown("could not read the answer to convert").into_response();
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let ours = value.get("apiVersion").and_then(Value::as_str) == Some(&view.storage_api_version);
    if !ours || (kind != view.kind && kind != format!("{}List", view.kind)) {
        return Response::from_parts(parts, Body::from(bytes));
    }
    match convert(shared, &view.conversion, &value, &view.api_version).await {
        Ok(converted) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(
                parts,
                Body::from(serde_json::to_vec(&converted).unwrap_or_default()),
            )
        }
        Err(message) => ApiError::unknown(message).into_response(),
    }
}

/// A watch of the storage version with each event's object converted; a failed
/// conversion ends it with an `ERROR` event carrying the real 500.
fn convert_watch(shared: Arc<Shared>, view: View, response: Response) -> Response {
    if !response.status().is_success() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    let state = (body.into_data_stream(), BytesMut::new(), false);
    let events = futures::stream::unfold(state, move |(mut inner, mut buffer, done)| {
        let shared = shared.clone();
        let view = view.clone();
        async move {
            if done {
                return None;
            }
            loop {
                if let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                    let line = buffer.split_to(end + 1);
                    let (out, failed) = convert_event(&shared, &view, &line).await;
                    return Some((Ok::<Bytes, std::io::Error>(out), (inner, buffer, failed)));
                }
                match inner.next().await {
                    Some(Ok(chunk)) => buffer.extend_from_slice(&chunk),
                    Some(Err(e)) => {
                        return Some((Err(std::io::Error::other(e)), (inner, buffer, true)));
                    }
                    None => return None,
                }
            }
        }
    });
    Response::from_parts(parts, Body::from_stream(events))
}

/// One watch line converted; `true` when the conversion failed (the line is then the
/// `ERROR` event that ends the watch).
///
/// # Cancel safety
/// Cancel safe: it stores nothing.
async fn convert_event(shared: &Shared, view: &View, line: &[u8]) -> (Bytes, bool) {
    let Ok(mut event) = serde_json::from_slice::<Value>(line) else {
        return (Bytes::copy_from_slice(line), false);
    };
    let object = event.get("object").cloned().unwrap_or_default();
    if object.get("apiVersion").and_then(Value::as_str) != Some(&view.storage_api_version) {
        return (Bytes::copy_from_slice(line), false);
    }
    let converted = if event.get("type").and_then(Value::as_str) == Some("BOOKMARK") {
        let mut bookmark = object;
        bookmark["apiVersion"] = Value::String(view.api_version.clone());
        Ok(bookmark)
    } else {
        convert(shared, &view.conversion, &object, &view.api_version).await
    };
    let failed = converted.is_err();
    match converted {
        Ok(object) => event["object"] = object,
        Err(message) => {
            event = serde_json::json!({"type": "ERROR", "object": ApiError::unknown(message).to_status()});
        }
    }
    let mut out = serde_json::to_vec(&event).unwrap_or_default();
    out.push(b'\n');
    (Bytes::from(out), failed)
}
