//! A webhook's `matchConditions`, evaluated as the real `matchconditions.Matcher`: CEL
//! expressions over `object` and `oldObject` (in the version the webhook matched; `null`
//! when there is none) and `request` (the review's request without its objects), after
//! the rules and selectors matched. A condition that is false skips the webhook, whatever
//! the others say; otherwise an expression that fails to evaluate skips it under
//! `failurePolicy: Ignore` and refuses the write under `Fail` with the real 403 (`widgets.
//! example.com "w" is forbidden: expression '...' resulted in error: ...`). `authorizer`
//! is not bound.

use serde_json::{Value, json};

use super::attributes::Attributes;
use super::rules::Hook;
use crate::status::ApiError;

/// Whether `hook` is called for a write of `name` with `object`, `oldObject` and
/// `request` (see the module); `Err` is the refusal under `failurePolicy: Fail`.
pub(crate) fn call_hook(
    hook: &Hook,
    attributes: &Attributes,
    name: &str,
    [object, old_object]: [Option<&Value>; 2],
    request: &Value,
) -> Result<bool, ApiError> {
    let null = Value::Null;
    let bindings = [
        ("object", object.unwrap_or(&null)),
        ("oldObject", old_object.unwrap_or(&null)),
        ("request", request),
    ];
    let mut errors = Vec::new();
    for condition in &hook.match_conditions {
        match crate::cel_rules::evaluate_bool(&condition.expression, &bindings) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(error) => errors.push(format!(
                "expression '{}' resulted in error: {error}",
                condition.expression
            )),
        }
    }
    if errors.is_empty() {
        return Ok(true);
    }
    if hook.ignore_failures {
        return Ok(false);
    }
    // Go's `NewAggregate`: one error as it is, more in brackets.
    let error = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    let resource = &attributes.resource;
    let qualified = match resource.group.as_str() {
        "" => resource.resource.clone(),
        group => format!("{}.{group}", resource.resource),
    };
    let message = match name {
        "" => format!("{qualified} is forbidden: {error}"),
        name => format!(
            "{qualified} {} is forbidden: {error}",
            crate::status::go_quote(name)
        ),
    };
    let details = json!({"name": name, "group": resource.group, "kind": resource.resource});
    Err(ApiError::new(403, "Forbidden", message).with_details(details))
}
