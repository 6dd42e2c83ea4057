//! The opt-in admin API ([`crate::ApiServerBuilder::admin`], the binary's `--admin`): fault
//! injection and history control as small JSON requests under [`PREFIX`], for clients in
//! any language. Kubernetes never serves paths under `/testkit/`, so it cannot collide.
//!
//! | request | body | answer |
//! |---|---|---|
//! | `GET /testkit/admin/faults` | | `[{"id", "matcher", "fault", "hits"}]` |
//! | `POST /testkit/admin/faults` | `{"matcher": Matcher, "fault": Fault}` | 201 `{"id"}` |
//! | `DELETE /testkit/admin/faults` | | `{"removed": n}` |
//! | `GET /testkit/admin/faults/{id}` | | `{"id", "matcher", "fault", "hits"}` |
//! | `DELETE /testkit/admin/faults/{id}` | | `{"removed": 1}` |
//! | `POST /testkit/admin/watches/drop` | | `{"watches": n}` |
//! | `POST /testkit/admin/watches/inject-line` | `{"line": "Malformed"}` | `{"watches": n}` |
//! | `POST /testkit/admin/compact` | `{}` or `{"resourceVersion": N}` | `{"floor": N}` |
//!
//! Errors are `{"error": "..."}` with 400 (bad JSON), 404 (unknown path or fault id) or
//! 405 (wrong method).

use axum::extract::Request;
use axum::response::Response;
use serde_json::{Value, json};

use crate::fault::{BadLine, Fault, FaultId, Matcher, WatchControl};
use crate::router::json_response;
use crate::server::Shared;

/// Where the admin API lives.
pub(crate) const PREFIX: &str = "/testkit/admin/";

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Injection {
    #[serde(default)]
    matcher: Matcher,
    fault: Fault,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct InjectLine {
    line: BadLine,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Compact {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<u64>,
}

fn answer(code: u16, body: &Value) -> Response {
    json_response(code, serde_json::to_vec(body).unwrap_or_default())
}

fn error(code: u16, message: impl std::fmt::Display) -> Response {
    answer(code, &json!({"error": message.to_string()}))
}

fn fault_json(id: FaultId, matcher: &Matcher, fault: &Fault, hits: usize) -> Value {
    json!({"id": id.0, "matcher": matcher, "fault": fault, "hits": hits})
}

/// Parses a JSON body; an empty body is `T::default()` when `empty` is given. The error
/// is the message of the 400 answer.
fn parse<T: serde::de::DeserializeOwned>(body: &[u8], empty: Option<T>) -> Result<T, String> {
    if body.iter().all(u8::is_ascii_whitespace)
        && let Some(default) = empty
    {
        return Ok(default);
    }
    serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))
}

/// Answers one admin request (`path` starts with [`PREFIX`]).
///
/// # Cancel safety
/// Cancel safe: the only await reads the body; the action runs after it, under the locks,
/// without awaiting.
pub(crate) async fn handle(shared: &Shared, path: &str, request: Request) -> Response {
    let method = request.method().clone();
    let rest = path.trim_start_matches(PREFIX).trim_end_matches('/');
    let body = match axum::body::to_bytes(request.into_body(), 1024 * 1024).await {
        Ok(body) => body,
        Err(e) => return error(400, format!("could not read the body: {e}")),
    };
    let segments: Vec<&str> = rest.split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["faults"]) => {
            let faults: Vec<Value> = shared
                .faults
                .list()
                .iter()
                .map(|(id, m, f, hits)| fault_json(*id, m, f, *hits))
                .collect();
            answer(200, &Value::Array(faults))
        }
        ("POST", ["faults"]) => match parse::<Injection>(&body, None) {
            Ok(injection) => {
                let id = shared.faults.add(injection.matcher, injection.fault);
                answer(201, &json!({"id": id.0}))
            }
            Err(message) => error(400, message),
        },
        ("DELETE", ["faults"]) => {
            let removed = shared.faults.list().len();
            shared.faults.clear();
            answer(200, &json!({"removed": removed}))
        }
        (method, ["faults", id]) => {
            let Ok(id) = id.parse::<u64>().map(FaultId) else {
                return error(404, format!("no fault {id:?}"));
            };
            let found = shared
                .faults
                .list()
                .into_iter()
                .find(|(fid, ..)| *fid == id);
            match (method, found) {
                (_, None) => error(404, format!("no fault {}", id.0)),
                ("GET", Some((id, m, f, hits))) => answer(200, &fault_json(id, &m, &f, hits)),
                ("DELETE", Some(_)) => {
                    shared.faults.remove(id);
                    answer(200, &json!({"removed": 1}))
                }
                (other, Some(_)) => error(405, format!("method {other} not allowed")),
            }
        }
        ("POST", ["watches", "drop"]) => {
            let watches = shared.watch_control.send(WatchControl::Drop).unwrap_or(0);
            answer(200, &json!({"watches": watches}))
        }
        ("POST", ["watches", "inject-line"]) => match parse::<InjectLine>(&body, None) {
            Ok(InjectLine { line }) => {
                let watches = shared
                    .watch_control
                    .send(WatchControl::Line(line))
                    .unwrap_or(0);
                answer(200, &json!({"watches": watches}))
            }
            Err(message) => error(400, message),
        },
        ("POST", ["compact"]) => match parse::<Compact>(&body, Some(Compact::default())) {
            Ok(Compact { resource_version }) => {
                let mut state = shared.state();
                let rv = resource_version.unwrap_or(state.rv);
                state.compact_to(rv);
                answer(200, &json!({"floor": state.floor}))
            }
            Err(message) => error(400, message),
        },
        (_, ["faults" | "compact"] | ["watches", "drop" | "inject-line"]) => {
            error(405, format!("method {method} not allowed"))
        }
        _ => error(404, format!("no admin endpoint {path}")),
    }
}
