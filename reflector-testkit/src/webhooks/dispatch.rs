//! A write run around its admission webhooks, in the passes `capture` describes: record
//! what reaches admission, call the mutating webhooks, replay with their object and
//! record what would be stored, call the validating webhooks, then store exactly that.

use axum::response::Response;
use http::HeaderValue;
use serde_json::Value;

use super::admission::{self, Facts, Warnings};
use super::attributes::Attributes;
use super::capture::{self, Capture, Seen};
use super::equivalent::Equivalent;
use super::rules::{self, Hook};
use crate::server::Shared;
use crate::state::ResourceId;
use crate::status::{ApiError, go_quote};

/// How often the passes start again when another write moves the object meanwhile.
const ATTEMPTS: usize = 5;

/// Hooks a write calls, each with the resource and kind it matched.
type Matched = Vec<(Hook, Equivalent)>;

/// A write request as its webhooks are told of it.
pub(crate) struct WriteRequest<'a> {
    /// `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: &'a http::Method,
    /// The query.
    pub pairs: &'a [(String, String)],
    /// A DELETE's `DeleteOptions` body.
    pub delete_options: Option<&'a [u8]>,
    /// The resource the client named, when the handlers run for another (a version of a
    /// CRD converted by webhook other than its storage version).
    pub requested: Option<ResourceId>,
}

/// Runs `write` (a synchronous handler that locks the state once per call) as the real
/// server runs a write through admission. Without any webhook configuration stored it
/// just runs it.
///
/// # Cancel safety
/// Cancel safe: a pass stores only in the last step, under the lock, without awaiting;
/// dropping the future between passes stores nothing.
pub(crate) async fn admit<F>(
    shared: &Shared,
    request: &WriteRequest<'_>,
    write: F,
) -> Result<Response, ApiError>
where
    F: Fn() -> Result<Response, ApiError>,
{
    if !rules::any_configured(&shared.state()) {
        return write();
    }
    let mut last_seen = None;
    for _ in 0..ATTEMPTS {
        let (_, recorded) = capture::run(Capture::record(), &write);
        let Some(seen) = recorded.seen else {
            return write();
        };
        let Some((attributes, mutating, validating)) = matching(shared, &seen, request.requested)
        else {
            return write();
        };
        let delete_options = request
            .delete_options
            .and_then(|b| serde_json::from_slice::<Value>(b).ok());
        let facts = Facts {
            dry_run: crate::query::param(request.pairs, "dryRun") == Some("All")
                || delete_options
                    .as_ref()
                    .and_then(|o| o.get("dryRun"))
                    .and_then(Value::as_array)
                    .is_some_and(|d| d.iter().any(|v| v == "All")),
            options: admission::options(
                &seen.operation,
                request.method,
                request.pairs,
                delete_options.as_ref(),
            ),
        };
        let mut warnings = Warnings::new();
        let mutated = match super::mutating::mutate(
            shared,
            &mutating,
            &seen,
            &attributes,
            &facts,
            &mut warnings,
        )
        .await
        {
            Ok(mutated) => mutated,
            Err(error) => return Ok(warn(error.into_response(), &warnings)),
        };
        let replay = Capture::replay(seen.clone(), mutated.clone());
        let (replayed, after_replay) = capture::run(replay, &write);
        if after_replay.stale {
            last_seen = Some(seen);
            continue;
        }
        let Some(pending) = after_replay.pending else {
            // An error after mutation, or a write that changes nothing: its answer.
            return Ok(warn(answer(replayed), &warnings));
        };
        let stored = shown(&seen, &pending.value);
        let validated = admission::validate(
            shared,
            &validating,
            &seen,
            stored.as_ref(),
            &attributes,
            &facts,
            &mut warnings,
        )
        .await;
        if let Err(error) = validated {
            return Ok(warn(error.into_response(), &warnings));
        }
        let commit = Capture::commit(seen.clone(), mutated, Some(pending));
        let (committed, after_commit) = capture::run(commit, &write);
        if after_commit.stale {
            last_seen = Some(seen);
            continue;
        }
        return Ok(warn(answer(committed), &warnings));
    }
    let state = shared.state();
    let (plural, group, name) = last_seen.map_or_else(Default::default, |seen| {
        let info = &state.resources[seen.rid];
        (info.plural.clone(), info.group.clone(), seen.name)
    });
    Err(ApiError::conflict(&plural, &group, &name))
}

/// The write's attributes and the mutating and validating hooks that match it, each with
/// the resource and kind it matched (None when none does, or the resource is exempt).
fn matching(
    shared: &Shared,
    seen: &Seen,
    requested: Option<ResourceId>,
) -> Option<(Attributes, Matched, Matched)> {
    let state = shared.state();
    let attributes = Attributes::of(&state, seen, requested);
    if rules::exempt(&attributes.info) {
        return None;
    }
    let select = |plural| -> Matched {
        rules::hooks(&state, plural)
            .into_iter()
            .filter_map(|hook| {
                let invocation = hook.invocation(seen, &attributes)?;
                Some((hook, invocation))
            })
            .collect()
    };
    let mutating = select(rules::MUTATING);
    let validating = select(rules::VALIDATING);
    drop(state);
    (!mutating.is_empty() || !validating.is_empty()).then_some((attributes, mutating, validating))
}

/// The object validating webhooks are shown for a write that would store `stored`:
/// nothing on DELETE, the Scale of it for the `scale` subresource.
fn shown(seen: &Seen, stored: &Value) -> Option<Value> {
    match (&seen.operation, &seen.scale) {
        (kube::core::admission::Operation::Delete, _) => None,
        (_, Some(paths)) => Some(crate::crd::scale_of(stored, paths)),
        (_, None) => Some(stored.clone()),
    }
}

fn answer(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(ApiError::into_response)
}

/// `response` with a `Warning: 299 - "..."` header per warning the webhooks gave.
fn warn(mut response: Response, warnings: &Warnings) -> Response {
    for warning in warnings {
        if let Ok(value) = HeaderValue::from_str(&format!("299 - {}", go_quote(warning))) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    response
}
