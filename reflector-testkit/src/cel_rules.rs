//! CRD validation rules (`x-kubernetes-validations`), evaluated with the `cel` crate as
//! the real apiextensions-apiserver evaluates them with cel-go: each rule of a schema node
//! runs with `self` bound to the node's value (and, for a transition rule, `oldSelf` to
//! its value before an update), and a rule that does not hold is the real field error:
//! `spec: Invalid value: "object": <message>`.
//!
//! Supported: the CEL standard library and macros (`has`, `all`, `exists`,
//! `exists_one`, `map`, `filter`, `size`, `matches`, `startsWith`, ...), the Kubernetes
//! string library (`lowerAscii`, `upperAscii`, `split`, `join`, `replace`, `substring`,
//! `indexOf`, `lastIndexOf`, `trim`, `charAt`), list functions (`slice`, `flatten`,
//! `distinct`, `reverse`, `sort`), transition rules (`oldSelf`, evaluated on updates
//! when the old value exists), `message`, `messageExpression`, `fieldPath` (dotted) and
//! `reason`. Not supported, each refused when the CRD is written (a 422 naming the rule)
//! rather than passing silently: the Kubernetes `quantity`, `url`, `ip`, `cidr`,
//! `format`, `semver`, `authz` and regex (`find`, `findAll`) libraries, the lists
//! library's `isSorted`/`sum`/`min`/`max`, `duration` and `timestamp`, and any other
//! function cel-go would not know either.

use std::sync::{Arc, OnceLock};

use cel::{Context, Env, Program, Value as Cel};
use serde_json::Value;

use crate::schema_validation::FieldError;
use crate::status::go_quote;

/// The rules' environment: the standard library, the strings and lists extensions.
fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // Declaring the extensions on a fresh standard environment cannot clash.
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::lists);
        Arc::new(env)
    })
    .clone()
}

/// Functions a rule may call besides operators (`_+_`, `!_`, ...) and the internal
/// helpers macros expand to (`@...`).
const SUPPORTED_FUNCTIONS: &[&str] = &[
    // CEL standard library and macros.
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    // Kubernetes strings library (cel-go's ext.Strings).
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    // List functions.
    "slice",
    "flatten",
    "distinct",
    "reverse",
    "sort",
];

/// A rule compiled for evaluation.
struct Compiled {
    program: Program,
    /// Whether the rule reads `oldSelf` (a transition rule).
    transition: bool,
}

/// Compiles `rule`, or says why it cannot run here.
fn compile(rule: &str) -> Result<Compiled, String> {
    let program = env()
        .compile(rule)
        .map_err(|e| format!("compilation failed: {e}"))?;
    let references = program.references();
    let mut unsupported: Vec<&str> = references
        .functions()
        .into_iter()
        .filter(|f| {
            !(f.starts_with('_')
                || f.starts_with('@')
                || f.starts_with('!')
                || f.starts_with('-')
                || SUPPORTED_FUNCTIONS.contains(f))
        })
        .collect();
    unsupported.sort_unstable();
    if let Some(first) = unsupported.first() {
        return Err(format!(
            "compilation failed: the CEL function '{first}' is not supported by reflector-testkit"
        ));
    }
    let transition = references.has_variable("oldSelf");
    Ok(Compiled {
        program,
        transition,
    })
}

/// Evaluates the boolean `expression` (compiled as the rules are, with the same
/// functions) with `bindings` as its variables; the error says why it could not.
pub(crate) fn evaluate_bool(expression: &str, bindings: &[(&str, &Value)]) -> Result<bool, String> {
    let compiled = compile(expression)?;
    let mut context = Context::with_env(env());
    for (name, value) in bindings {
        context.add_variable_from_value(*name, to_cel(value));
    }
    match compiled.program.execute(&context) {
        Ok(Cel::Bool(value)) => Ok(value),
        Ok(other) => Err(format!("{other:?} is not a bool")),
        Err(error) => Err(error.to_string()),
    }
}

/// The errors of every rule of `schema` (a CRD version's `openAPIV3Schema`) that cannot
/// be compiled, as the real CRD validation reports them, under `path` (the schema's field
/// path in the CRD: `spec.versions[0].schema.openAPIV3Schema`).
pub(crate) fn compile_errors(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    visit_schema(schema, path, &mut |node, node_path| {
        for (i, rule) in rules_of(node).iter().enumerate() {
            let text = rule.get("rule").and_then(Value::as_str).unwrap_or_default();
            let field = format!("{node_path}.x-kubernetes-validations[{i}].rule");
            if text.trim().is_empty() {
                errors.push(FieldError::required(&field));
            } else if let Err(why) = compile(text) {
                errors.push(FieldError::invalid(&field, &go_quote(text), &why));
            }
        }
    });
    errors
}

/// Calls `f` on every schema node under `schema`, with its path as the real CRD
/// validation names it (`properties[spec]`, `items`, `additionalProperties`).
fn visit_schema(schema: &Value, path: &str, f: &mut dyn FnMut(&Value, &str)) {
    f(schema, path);
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            visit_schema(child, &format!("{path}.properties[{name}]"), f);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = schema.get(key).filter(|c| c.is_object()) {
            visit_schema(child, &format!("{path}.{key}"), f);
        }
    }
}

/// Whether `schema` has any rule (the real server builds a CEL validator only then).
pub(crate) fn has_rules(schema: &Value) -> bool {
    let mut found = false;
    visit_schema(schema, "", &mut |node, _| {
        found |= !rules_of(node).is_empty()
    });
    found
}

fn rules_of(schema: &Value) -> &[Value] {
    schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The errors of the rules `value` breaks, walking `schema` (a CRD version's
/// `openAPIV3Schema`) from the root; `old` is the stored object on an update (transition
/// rules run only where it has a value).
pub(crate) fn validate(schema: &Value, value: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    walk(schema, value, old, "", &mut errors);
    errors
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(schema: &Value, value: &Value, old: Option<&Value>, path: &str, out: &mut Vec<FieldError>) {
    if value.is_null() {
        return;
    }
    for rule in rules_of(schema) {
        check_rule(schema, rule, value, old, path, out);
    }
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, child) in fields {
                if path.is_empty() && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let Some(sub) = properties.and_then(|p| p.get(key)).or(additional) else {
                    continue;
                };
                let old_child = old.and_then(|o| o.get(key));
                walk(sub, child, old_child, &child_path(path, key), out);
            }
        }
        Value::Array(items) => {
            let Some(sub) = schema.get("items") else {
                return;
            };
            for (i, item) in items.iter().enumerate() {
                let old_item = old.and_then(|o| correlated_item(schema, o, item));
                walk(sub, item, old_item, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The old version of a list item, for transition rules: only items of a `map` list are
/// correlated (by their keys), as the real server does.
fn correlated_item<'o>(schema: &Value, old: &'o Value, item: &Value) -> Option<&'o Value> {
    if schema.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    old.as_array()?
        .iter()
        .find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
}

/// The schema type the real errors show as the bad value (`"object"`).
fn schema_type(schema: &Value) -> String {
    go_quote(
        schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    )
}

fn check_rule(
    schema: &Value,
    rule: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let text = rule.get("rule").and_then(Value::as_str).unwrap_or_default();
    let Ok(compiled) = compile(text) else {
        // Refused when the CRD was written; a CRD stored directly skips that.
        return;
    };
    if compiled.transition && old.is_none() {
        return;
    }
    let env = env();
    let mut context = Context::with_env(env);
    context.add_variable_from_value("self", to_cel(value));
    if let Some(old) = old {
        context.add_variable_from_value("oldSelf", to_cel(old));
    }
    let shown = schema_type(schema);
    let field = match rule.get("fieldPath").and_then(Value::as_str) {
        Some(extra) if !extra.is_empty() => child_path(path, extra.trim_start_matches('.')),
        _ => path.to_owned(),
    };
    let field = if field.is_empty() {
        "<nil>".to_owned()
    } else {
        field
    };
    match compiled.program.execute(&context) {
        Ok(Cel::Bool(true)) => {}
        Ok(_) => {
            let message = rule_message(rule, text, &context);
            out.push(error_for_reason(rule, &field, &shown, &message));
        }
        Err(error) => out.push(FieldError::invalid(
            &field,
            &shown,
            &format!("{error} evaluating rule: {}", text.trim()),
        )),
    }
}

/// The message of a failed rule: its `messageExpression`'s value, else its `message`,
/// else `failed rule: <rule>`, as the real `ruleMessageOrDefault`.
fn rule_message(rule: &Value, text: &str, context: &Context<'_, '_>) -> String {
    if let Some(expression) = rule.get("messageExpression").and_then(Value::as_str)
        && let Ok(program) = env().compile(expression)
        && let Ok(Cel::String(message)) = program.execute(context)
        && !message.trim().is_empty()
    {
        return message.trim().to_owned();
    }
    match rule.get("message").and_then(Value::as_str).map(str::trim) {
        Some(message) if !message.is_empty() => message.to_owned(),
        _ => format!("failed rule: {}", text.trim()),
    }
}

/// The field error a rule's `reason` asks for (`FieldValueInvalid` by default).
fn error_for_reason(rule: &Value, field: &str, shown: &str, message: &str) -> FieldError {
    let (reason, body) = match rule.get("reason").and_then(Value::as_str) {
        Some("FieldValueForbidden") => ("FieldValueForbidden", format!("Forbidden: {message}")),
        Some("FieldValueRequired") => ("FieldValueRequired", format!("Required value: {message}")),
        Some("FieldValueDuplicate") => ("FieldValueDuplicate", format!("Duplicate value: {shown}")),
        _ => (
            "FieldValueInvalid",
            format!("Invalid value: {shown}: {message}"),
        ),
    };
    FieldError {
        field: field.to_owned(),
        reason,
        message: body,
    }
}

/// A JSON value as CEL sees it: integers as `int`, other numbers as `double`.
fn to_cel(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => Cel::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(fields) => {
            let map: std::collections::HashMap<String, Cel> =
                fields.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            Cel::from(map)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.replicas <= self.max", "message": "replicas must not exceed max"},
                {"rule": "self.name.startsWith('w')", "fieldPath": ".name", "reason": "FieldValueForbidden"},
                {"rule": "self.replicas >= oldSelf.replicas", "messageExpression": "'may not shrink from ' + string(oldSelf.replicas)"},
            ],
            "properties": {"replicas": {"type": "integer"}, "max": {"type": "integer"}, "name": {"type": "string"}},
        }}})
    }

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    }

    #[test]
    fn rules_report_the_real_field_errors() {
        let object = json!({"spec": {"replicas": 3, "max": 2, "name": "x"}});
        assert_eq!(
            messages(&validate(&schema(), &object, None)),
            [
                "spec: Invalid value: \"object\": replicas must not exceed max",
                "spec.name: Forbidden: failed rule: self.name.startsWith('w')",
            ]
        );
        let old = json!({"spec": {"replicas": 4, "max": 9, "name": "w"}});
        let new = json!({"spec": {"replicas": 1, "max": 9, "name": "w"}});
        assert_eq!(
            messages(&validate(&schema(), &new, Some(&old))),
            ["spec: Invalid value: \"object\": may not shrink from 4"]
        );
        assert!(validate(&schema(), &old, Some(&old)).is_empty());
    }

    #[test]
    fn unsupported_functions_are_refused_when_compiled() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "quantity(self.memory).isGreaterThan(quantity('1Gi'))"}]}}});
        let errors = compile_errors(&schema, "root");
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].field,
            "root.properties[spec].x-kubernetes-validations[0].rule"
        );
        assert!(
            errors[0]
                .message
                .contains("'isGreaterThan' is not supported"),
            "{}",
            errors[0].message
        );
    }
}
