//! Storing webhook configurations as the real server does: its v1 defaults filled in
//! (`failurePolicy: Fail`, `matchPolicy: Equivalent`, empty selectors, `timeoutSeconds:
//! 10`, `scope: "*"` in every rule, service `port: 443`, and `reinvocationPolicy: Never`
//! for mutating webhooks), and the real 422 for what v1 requires (`sideEffects`,
//! `admissionReviewVersions`, a timeout of 1 to 30 seconds).

use serde_json::{Value, json};

use super::rules::{GROUP, MUTATING, VALIDATING};
use crate::resource::ResourceInfo;
use crate::schema_validation::FieldError;
use crate::status::ApiError;

/// Defaults and validates a webhook configuration about to be stored; anything else
/// passes untouched.
pub(crate) fn admit(info: &ResourceInfo, name: &str, value: &mut Value) -> Result<(), ApiError> {
    if info.group != GROUP || !matches!(info.plural.as_str(), MUTATING | VALIDATING) {
        return Ok(());
    }
    let mutating = info.plural == MUTATING;
    let mut errors = Vec::new();
    let webhooks = value
        .get_mut("webhooks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten();
    for (i, hook) in webhooks.enumerate() {
        let Value::Object(hook) = hook else {
            continue;
        };
        let defaults = [
            ("failurePolicy", json!("Fail")),
            ("matchPolicy", json!("Equivalent")),
            ("namespaceSelector", json!({})),
            ("objectSelector", json!({})),
            ("timeoutSeconds", json!(10)),
        ];
        for (field, default) in defaults {
            hook.entry(field).or_insert(default);
        }
        if mutating {
            hook.entry("reinvocationPolicy")
                .or_insert_with(|| json!("Never"));
        }
        for rule in hook
            .get_mut("rules")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Value::Object(rule) = rule {
                rule.entry("scope").or_insert_with(|| json!("*"));
            }
        }
        if let Some(Value::Object(service)) = hook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
        {
            service.entry("port").or_insert_with(|| json!(443));
        }
        let path = |field: &str| format!("webhooks[{i}].{field}");
        if !hook.get("sideEffects").is_some_and(Value::is_string) {
            errors.push(FieldError {
                message: "Required value: must specify one of None, NoneOnDryRun".to_owned(),
                ..FieldError::required(&path("sideEffects"))
            });
        }
        if hook
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
        {
            errors.push(FieldError {
                message: "Required value: must specify one of v1, v1beta1".to_owned(),
                ..FieldError::required(&path("admissionReviewVersions"))
            });
        }
        let timeout = hook.get("timeoutSeconds").and_then(Value::as_i64);
        if let Some(seconds) = timeout.filter(|s| !(1..=30).contains(s)) {
            errors.push(FieldError::invalid(
                &path("timeoutSeconds"),
                &seconds.to_string(),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_fields(&info.kind, GROUP, name, &errors))
    }
}
