//! The mutating webhooks of a write, run as the real mutating dispatcher runs them: in
//! order, each sent the object the previous one left, in the version it matched; then,
//! once more, the webhooks with `reinvocationPolicy: IfNeeded` that were called before a
//! later webhook changed the object (the real `webhookReinvokeContext`): a webhook's own
//! change never calls it again, and a change made while reinvoking calls again, in the
//! same round, the `IfNeeded` webhooks called since the last change. There is no third
//! round.

use kube::core::GroupVersionKind;
use serde_json::Value;

use super::admission::{Facts, Sent, Warnings, call, conditions_hold, denied, old_object, settle};
use super::attributes::Attributes;
use super::capture::Seen;
use super::equivalent::Equivalent;
use super::rules::Hook;
use crate::server::Shared;
use crate::status::{ApiError, go_quote};

/// The object the mutating webhooks patch (the real `VersionedAttributes`).
struct Versioned {
    /// The object (None on DELETE).
    object: Option<Value>,
    /// Its kind: the version the last webhook called matched.
    kind: GroupVersionKind,
    /// Whether a webhook patched it.
    patched: bool,
}

/// Which webhooks are called again (the real `webhookReinvokeContext`), by index.
#[derive(Default)]
struct Reinvocation {
    /// `IfNeeded` webhooks called since the object last changed.
    since_change: Vec<usize>,
    /// Webhooks to call in the second round.
    again: Vec<usize>,
}

/// Runs the mutating `hooks` (each with the resource and kind it matched) on the object
/// `seen` holds, each sent it in its version (converted from the version the previous one
/// left, through the admission point's, as the real `ConvertVersionedAttributes`), then
/// reinvokes as the module says; returns the object they leave, converted back to the
/// admission point's version, if any of them patched it.
///
/// # Cancel safety
/// Cancel safe: nothing is stored; dropping it drops the call in flight.
pub(crate) async fn mutate(
    shared: &Shared,
    hooks: &[(Hook, Equivalent)],
    seen: &Seen,
    attributes: &Attributes,
    facts: &Facts,
    warnings: &mut Warnings,
) -> Result<Option<Value>, ApiError> {
    let base = &attributes.object_kind;
    let mut versioned = Versioned {
        object: seen.object.clone(),
        kind: base.clone(),
        patched: false,
    };
    let mut reinvocation = Reinvocation::default();
    for round in 0..2 {
        if round == 1 && reinvocation.again.is_empty() {
            break;
        }
        for (at, (hook, invocation)) in hooks.iter().enumerate() {
            if round == 1 && !reinvocation.again.contains(&at) {
                continue;
            }
            let context = Context {
                shared,
                seen,
                attributes,
                facts,
            };
            let called = context
                .call_one(hook, invocation, &mut versioned, warnings)
                .await?;
            // A hook its matchConditions skip is not called, so never reinvoked.
            let Some(changed) = called else {
                continue;
            };
            if changed {
                let since = std::mem::take(&mut reinvocation.since_change);
                reinvocation.again.extend(since);
            }
            if hook.reinvoke_if_needed {
                reinvocation.since_change.push(at);
            }
        }
    }
    match versioned.object.filter(|_| versioned.patched) {
        Some(object) => {
            let kind = &versioned.kind;
            let back = attributes.equivalents.convert(shared, &object, kind, base);
            Ok(Some(back.await.map_err(|e| ApiError::internal(&e))?))
        }
        None => Ok(None),
    }
}

/// What every call of one write shares.
struct Context<'a> {
    shared: &'a Shared,
    seen: &'a Seen,
    attributes: &'a Attributes,
    facts: &'a Facts,
}

impl Context<'_> {
    /// Calls `hook` on `versioned` (converted to the version it matched) and applies its
    /// patch; returns whether the object changed (None: its `matchConditions` skip it). A
    /// failure its `failurePolicy` excuses changes nothing.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is stored.
    async fn call_one(
        &self,
        hook: &Hook,
        invocation: &Equivalent,
        versioned: &mut Versioned,
        warnings: &mut Warnings,
    ) -> Result<Option<bool>, ApiError> {
        // The real mutating dispatcher wraps a failed conversion twice.
        let unconverted = |e: String| ApiError::internal(&format!("Internal error occurred: {e}"));
        let (shared, attributes) = (self.shared, self.attributes);
        let base = &attributes.object_kind;
        if let Some(current) = &versioned.object {
            let converted = through_base(
                shared,
                attributes,
                current,
                &versioned.kind,
                &invocation.kind,
            );
            versioned.object = Some(converted.await.map_err(unconverted)?);
        }
        versioned.kind = invocation.kind.clone();
        let old = old_object(self.seen);
        let old = attributes
            .equivalents
            .convert_some(shared, old.as_ref(), base, &invocation.kind);
        let old = old.await.map_err(unconverted)?;
        let sent = Sent {
            object: versioned.object.as_ref(),
            old_object: old.as_ref(),
            invocation,
        };
        if !conditions_hold(hook, self.seen, &sent, attributes, self.facts)? {
            return Ok(None);
        }
        let answer = match call(shared, hook, true, self.seen, &sent, attributes, self.facts).await
        {
            Ok(answer) => answer,
            Err(failed) => {
                settle(hook, failed)?;
                return Ok(Some(false));
            }
        };
        warnings.extend(answer.warnings.iter().cloned());
        if !answer.allowed {
            return Err(denied(&hook.name, &answer.status));
        }
        let Some(patch) = answer.patch.filter(|p| !p.0.is_empty()) else {
            return Ok(Some(false));
        };
        let Some(target) = versioned.object.as_mut() else {
            return Err(ApiError::internal(&format!(
                "admission webhook {} attempted to modify the object, which is not supported for this operation",
                go_quote(&hook.name)
            )));
        };
        let before = target.clone();
        json_patch::patch(target, &patch).map_err(|e| ApiError::internal(&e.to_string()))?;
        versioned.patched = true;
        Ok(Some(*target != before))
    }
}

/// `object` of kind `from` as kind `to`, through the admission point's kind (the real
/// server's internal version).
///
/// # Cancel safety
/// Cancel safe: nothing is stored.
async fn through_base(
    shared: &Shared,
    attributes: &Attributes,
    object: &Value,
    from: &GroupVersionKind,
    to: &GroupVersionKind,
) -> Result<Value, String> {
    let equivalents = &attributes.equivalents;
    let base = &attributes.object_kind;
    let object = equivalents.convert(shared, object, from, base).await?;
    equivalents.convert(shared, &object, base, to).await
}
