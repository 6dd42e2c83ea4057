//! Request entry point: parses the path into a target, applies faults, dispatches, logs.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::{Method, header};
use serde_json::json;

use crate::fault::{Fault, Fired, RequestInfo};
use crate::object::Repr;
use crate::query::{self, param};
use crate::request_log::{RequestLogEntry, Verb};
use crate::server::Shared;
use crate::status::ApiError;

mod request_body;
mod target;

use request_body::read_body;
pub(crate) use request_body::{RequestBody, header_text};
pub(crate) use target::Target;
use target::{Named, parse_target};

fn verb_of(method: &Method, target: &Target, watch: bool) -> Verb {
    match (target, method.as_str()) {
        (Target::Collection { .. }, "GET") if watch => Verb::Watch,
        (Target::Collection { .. }, "GET") => Verb::List,
        (Target::Collection { .. }, "POST") => Verb::Create,
        (Target::Collection { .. }, "DELETE") => Verb::DeleteCollection,
        (Target::Object { .. } | Target::Scale { .. }, "GET") => Verb::Get,
        (Target::Object { .. } | Target::Scale { .. }, "PUT") => Verb::Update,
        (Target::Object { .. } | Target::Scale { .. }, "PATCH") => Verb::Patch,
        (Target::Object { .. }, "DELETE") => Verb::Delete,
        (Target::Binding { .. }, "POST") => Verb::Create,
        _ => Verb::Other,
    }
}

/// The single axum handler: every request goes through here.
///
/// # Cancel safety
/// Dropping the future (client gone) drops the request; no state is left half-written
/// because writes happen under one lock with no await inside.
pub(crate) async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    if shared.config.admin && path.starts_with(crate::admin::PREFIX) {
        return crate::admin::handle(&shared, &path, request).await;
    }
    let pairs = query::parse_pairs(request.uri().query());
    let target = parse_target(&shared, &path);
    let watch = is_watch(&pairs);
    let verb = verb_of(&method, &target, watch);
    let user_agent = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let fired = shared.faults.on_request(&RequestInfo {
        verb,
        resource: target.resource(),
        has_continue: param(&pairs, "continue").is_some_and(|c| !c.is_empty()),
        user_agent: &user_agent,
    });
    if let Some((_, delay)) = fired.latency {
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shared.token.cancelled() => {}
        }
    }
    let fault_id = fired.first_id();
    let mut response = match fault_response(&shared, &fired, verb, &target) {
        Some(error) => error.into_response(),
        None => match crate::webhooks::converted::view(&shared, &target) {
            Some((view, storage_target)) => {
                let converted = crate::webhooks::converted::serve(
                    &shared,
                    view,
                    &method,
                    &storage_target,
                    &pairs,
                    request,
                    fired,
                );
                converted.await
            }
            None => dispatch(&shared, &method, &target, &pairs, request, fired).await,
        },
    };
    // The real server marks every answer as not to be cached.
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache, private"),
    );
    shared.log_request(RequestLogEntry {
        verb,
        method: method.to_string(),
        path,
        resource: target.resource().map(str::to_owned),
        subresource: target.subresource().map(str::to_owned),
        query: pairs,
        status: response.status().as_u16(),
        fault: fault_id,
        user_agent,
    });
    response
}

/// The error a response-deciding fault sends, if one fired (watch-stream faults are left
/// to the watch).
fn fault_response(shared: &Shared, fired: &Fired, verb: Verb, target: &Target) -> Option<ApiError> {
    let (_, fault) = fired.response.as_ref()?;
    Some(match fault {
        Fault::Forbidden => forbidden(shared, verb, target),
        Fault::Gone => ApiError::expired("The resourceVersion for the provided list is too old."),
        Fault::ContinueExpired => ApiError::expired(crate::list::CONTINUE_EXPIRED_MESSAGE),
        Fault::TooManyRequests {
            retry_after_secs,
            plain_text,
        } => {
            let mut e = ApiError::new(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            )
            .with_details(json!({"retryAfterSeconds": retry_after_secs}));
            e.retry_after = Some(*retry_after_secs);
            e.plain = *plain_text;
            e
        }
        Fault::InternalError => ApiError::internal("injected fault"),
        Fault::Conflict => conflict(shared, target),
        Fault::ServiceUnavailable => ApiError::new(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        )
        .with_details(json!({})),
        Fault::GatewayTimeout => {
            let mut e = ApiError::new(
                504,
                "Timeout",
                "the server was unable to return a response in the time allotted, but may still be processing the request",
            )
            .with_details(json!({"retryAfterSeconds": 1}));
            e.retry_after = Some(1);
            e
        }
        _ => return None,
    })
}

/// The authorizer's 403 for this request.
fn forbidden(shared: &Shared, verb: Verb, target: &Target) -> ApiError {
    let Some(named) = target.named() else {
        return ApiError::new(
            403,
            "Forbidden",
            "forbidden: User \"system:anonymous\" cannot get path",
        );
    };
    let verb_name = serde_json::to_value(verb)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let group = shared.state().resources[named.rid].group.clone();
    ApiError::forbidden(
        &verb_name,
        named.plural,
        &group,
        named.name,
        named.namespace,
    )
}

/// The 409 an injected `Conflict` sends: for one object, the real optimistic-concurrency
/// failure (`Operation cannot be fulfilled on configmaps "cm-0": the object has been
/// modified; ...`, details naming it); for anything else, the same without a name.
fn conflict(shared: &Shared, target: &Target) -> ApiError {
    match target.named() {
        Some(Named {
            rid,
            plural,
            name: Some(name),
            ..
        }) => {
            let group = shared.state().resources[rid].group.clone();
            ApiError::conflict(plural, &group, name)
        }
        _ => ApiError::new(
            409,
            "Conflict",
            "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again",
        )
        .with_details(json!({})),
    }
}

/// Runs the verb for a parsed target.
///
/// # Cancel safety
/// Cancel safe: the only await is reading the body; state writes happen after it, under
/// one lock, with no await.
pub(crate) async fn dispatch(
    shared: &Arc<Shared>,
    method: &Method,
    target: &Target,
    pairs: &[(String, String)],
    request: Request,
    fired: Fired,
) -> Response {
    let requested = request
        .extensions()
        .get::<crate::webhooks::converted::Requested>()
        .map(|r| r.0);
    let accept = header_text(request.headers(), header::ACCEPT);
    let repr = Repr::from_accept(accept);
    // `kubectl get` asks for a Table first; only reads are answered with one.
    let table = if method == Method::GET {
        match crate::table::TableRequest::from_request(accept, pairs) {
            Ok(table) => table,
            Err(error) => return error.into_response(),
        }
    } else {
        None
    };
    // Built-in kinds are also served in protobuf, to clients that ask for it first
    // (client-go's typed clients: `application/vnd.kubernetes.protobuf, */*`); watches
    // stay JSON.
    let protobuf = !is_watch(pairs)
        && matches!(target, Target::Collection { .. } | Target::Object { .. })
        && has_protobuf(shared, target)
        && prefers(accept, crate::protobuf_codec::PROTOBUF);
    let yaml = !is_watch(pairs) && prefers(accept, crate::yaml_answer::YAML);
    if matches!(target, Target::Collection { .. } | Target::Object { .. })
        && !accepts_json(accept)
        && !protobuf
        && !yaml
    {
        // The real negotiation's 406 (`NewNotAcceptableError`), listing what this server
        // encodes: CBOR is not among them.
        return ApiError::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json",
        )
        .into_response();
    }
    if let Some(error) = invalid_dry_run(method, target, pairs) {
        return error.into_response();
    }
    if let Some(error) = crate::crd::initializing(shared, target) {
        return error.into_response();
    }
    let result = match target {
        Target::NotFound => Err(ApiError::path_not_found()),
        Target::CoreVersions
        | Target::Groups
        | Target::Group(_)
        | Target::Version
        | Target::ResourceList { .. } => {
            if method == Method::GET {
                crate::discovery::respond(shared, target)
            } else {
                Err(ApiError::method_not_allowed(method.as_str()))
            }
        }
        Target::OpenApi(rest) if method == Method::GET => {
            let accept = header_text(request.headers(), header::ACCEPT);
            crate::openapi::respond(shared, rest, accept)
        }
        Target::OpenApi(_) => Err(ApiError::method_not_allowed(method.as_str())),
        Target::Collection { rid, namespace, .. } => match method.as_str() {
            "GET" => {
                let read = crate::list::Read { repr, table };
                crate::list::list_or_watch(shared, read, *rid, namespace.as_deref(), pairs, fired)
                    .await
            }
            "POST" => match read_body(request).await {
                Ok(body) => {
                    let ns = namespace.as_deref();
                    let write = || crate::handlers::create(shared, repr, *rid, ns, pairs, &body);
                    crate::webhooks::admit(shared, &admitted(method, pairs, None, requested), write)
                        .await
                }
                Err(e) => Err(e),
            },
            "DELETE" => {
                crate::handlers::delete_collection(shared, repr, *rid, namespace.as_deref(), pairs)
            }
            other => Err(ApiError::method_not_allowed(other)),
        },
        Target::Object {
            rid,
            namespace,
            name,
            status,
            ..
        } => {
            let ns = namespace.as_deref();
            match method.as_str() {
                "GET" => crate::handlers::get(shared, repr, table, *rid, ns, name),
                "PUT" | "PATCH" | "DELETE" => match read_body(request).await {
                    Ok(body) => match method.as_str() {
                        "PUT" | "PATCH" => {
                            let write = crate::handlers::ObjectWrite {
                                shared,
                                repr,
                                rid: *rid,
                                namespace: ns,
                                name,
                                status: *status,
                                pairs,
                                body: &body,
                            };
                            let write = || {
                                if method == "PUT" {
                                    crate::handlers::update(write)
                                } else {
                                    crate::handlers::patch(write)
                                }
                            };
                            let request = admitted(method, pairs, None, requested);
                            crate::webhooks::admit(shared, &request, write).await
                        }
                        _ if *status => Err(ApiError::method_not_allowed("DELETE")),
                        _ => {
                            let write = || {
                                crate::handlers::delete(shared, repr, *rid, ns, name, pairs, &body)
                            };
                            let request = admitted(method, pairs, Some(&body.bytes), requested);
                            crate::webhooks::admit(shared, &request, write).await
                        }
                    },
                    Err(e) => Err(e),
                },
                other => Err(ApiError::method_not_allowed(other)),
            }
        }
        Target::Binding {
            rid,
            namespace,
            name,
            ..
        } => match method.as_str() {
            "POST" => match read_body(request).await {
                Ok(body) => {
                    let namespace = namespace.as_deref().unwrap_or_default();
                    crate::handlers::bind(shared, *rid, namespace, name, &body)
                }
                Err(e) => Err(e),
            },
            other => Err(ApiError::method_not_allowed(other)),
        },
        Target::Scale {
            rid,
            namespace,
            name,
            ..
        } => {
            let ns = namespace.as_deref();
            match method.as_str() {
                "GET" => crate::crd::scale(shared, method, *rid, ns, name, pairs, None),
                "PUT" | "PATCH" => match read_body(request).await {
                    Ok(body) => {
                        let write = || {
                            crate::crd::scale(shared, method, *rid, ns, name, pairs, Some(&body))
                        };
                        let request = admitted(method, pairs, None, requested);
                        crate::webhooks::admit(shared, &request, write).await
                    }
                    Err(e) => Err(e),
                },
                other => Err(ApiError::method_not_allowed(other)),
            }
        }
    };
    let response = result.unwrap_or_else(ApiError::into_response);
    if protobuf {
        crate::protobuf_codec::into_protobuf(response).await
    } else if yaml {
        crate::yaml_answer::into_yaml(response).await
    } else {
        response
    }
}

/// A write as its admission webhooks are told of it.
fn admitted<'a>(
    method: &'a Method,
    pairs: &'a [(String, String)],
    delete_options: Option<&'a [u8]>,
    requested: Option<crate::state::ResourceId>,
) -> crate::webhooks::WriteRequest<'a> {
    crate::webhooks::WriteRequest {
        method,
        pairs,
        delete_options,
        requested,
    }
}

/// The real 422 for a `dryRun` other than `All` on a write (the options' kind named by
/// the verb, the bad value shown as Go prints the `[]string`).
fn invalid_dry_run(
    method: &Method,
    target: &Target,
    pairs: &[(String, String)],
) -> Option<ApiError> {
    let options = match method.as_str() {
        "POST" => "CreateOptions",
        "PUT" => "UpdateOptions",
        "PATCH" => "PatchOptions",
        "DELETE" => "DeleteOptions",
        _ => return None,
    };
    let value = param(pairs, "dryRun").filter(|d| !d.is_empty() && *d != "All")?;
    if matches!(target, Target::NotFound) {
        return None;
    }
    let detail = format!(
        "Unsupported value: []string{{{}}}: supported values: \"All\"",
        crate::status::go_quote(value)
    );
    Some(
        ApiError::new(
            422,
            "Invalid",
            format!("{options}.meta.k8s.io \"\" is invalid: dryRun: {detail}"),
        )
        .with_details(json!({
            "group": "meta.k8s.io",
            "kind": options,
            "causes": [{"reason": "FieldValueNotSupported", "message": detail, "field": "dryRun"}],
        })),
    )
}

/// Whether a request's query asks for a watch.
pub(crate) fn is_watch(pairs: &[(String, String)]) -> bool {
    matches!(
        param(pairs, "watch"),
        Some("true" | "1" | "" | "True" | "t")
    )
}

/// Whether the resource a path names is a built-in kind with a protobuf message.
fn has_protobuf(shared: &Shared, target: &Target) -> bool {
    let Some(named) = target.named() else {
        return false;
    };
    let state = shared.state();
    let info = &state.resources[named.rid];
    state.custom.served(named.rid).is_none()
        && crate::protobuf_codec::descriptor(&info.group, &info.version, &info.kind).is_some()
}

/// Whether the first media range of `accept` this server encodes is `wanted` (protobuf,
/// YAML) as it is, not `as=` another type, rather than JSON.
pub(crate) fn prefers(accept: &str, wanted: &str) -> bool {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default();
        let converted = parts.any(|p| p.starts_with("as="));
        if media.eq_ignore_ascii_case(wanted) && !converted {
            return true;
        }
        if media.eq_ignore_ascii_case("application/json")
            || media == "application/*"
            || media == "*/*"
        {
            return false;
        }
    }
    false
}

/// Whether an `Accept` header (absent or empty included) admits a JSON answer.
fn accepts_json(accept: &str) -> bool {
    accept.trim().is_empty()
        || accept.split(',').any(|range| {
            let media = range.split(';').next().unwrap_or_default().trim();
            media.eq_ignore_ascii_case("application/json")
                || media == "application/*"
                || media == "*/*"
        })
}

/// A 200/201 JSON response from pre-serialized bytes.
pub(crate) fn json_response(code: u16, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
