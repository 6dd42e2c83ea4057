//! Which admission webhooks a write calls: the stored configurations read into [`Hook`]s,
//! in the real server's order, and each hook's rules, scope and selectors matched against
//! what the write's admission point saw, as the real `webhook/predicates` and
//! `ShouldCallHook` do: the request's own resource first, then, for `matchPolicy:
//! Equivalent`, its equivalents ([`super::equivalent`]).

use std::time::Duration;

use serde_json::{Map, Value};

use kube::core::GroupVersionResource;

use super::attributes::Attributes;
use super::call::ClientConfig;
use super::capture::Seen;
use super::equivalent::Equivalent;
use crate::resource::ResourceInfo;
use crate::state::State;

/// The API group of the webhook configurations.
pub(crate) const GROUP: &str = "admissionregistration.k8s.io";
/// Plural of `ValidatingWebhookConfiguration`.
pub(crate) const VALIDATING: &str = "validatingwebhookconfigurations";
/// Plural of `MutatingWebhookConfiguration`.
pub(crate) const MUTATING: &str = "mutatingwebhookconfigurations";

/// One webhook of a stored configuration, with the real defaults filled in.
#[derive(Debug, Clone)]
pub(crate) struct Hook {
    /// `webhooks[].name`.
    pub name: String,
    /// Where to call it.
    pub client: ClientConfig,
    /// `rules` (each an object with operations, apiGroups, apiVersions, resources, scope).
    rules: Vec<Value>,
    /// `matchPolicy: Equivalent` (the default; else `Exact`).
    equivalent: bool,
    /// A mutating webhook's `reinvocationPolicy: IfNeeded` (default `Never`).
    pub reinvoke_if_needed: bool,
    /// `matchConditions`, in order.
    pub match_conditions: Vec<MatchCondition>,
    /// `failurePolicy: Ignore` (default `Fail`).
    pub ignore_failures: bool,
    /// `namespaceSelector` (default: everything).
    namespace_selector: Option<Value>,
    /// `objectSelector` (default: everything).
    object_selector: Option<Value>,
    /// `sideEffects` (required in v1; None when missing).
    pub side_effects: Option<String>,
    /// `timeoutSeconds` (default 10, at most 30).
    pub timeout: Duration,
    /// `admissionReviewVersions`.
    pub review_versions: Vec<String>,
}

/// One of a webhook's `matchConditions`.
#[derive(Debug, Clone)]
pub(crate) struct MatchCondition {
    /// Its CEL `expression`.
    pub expression: String,
}

impl Hook {
    fn from_value(value: &Value) -> Option<Self> {
        let text = |field: &str| value.get(field).and_then(Value::as_str).map(str::to_owned);
        let seconds = value
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10)
            .clamp(1, 30);
        Some(Self {
            name: text("name")?,
            client: ClientConfig::from_value(value.get("clientConfig")?),
            rules: value
                .get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            equivalent: text("matchPolicy").as_deref() != Some("Exact"),
            reinvoke_if_needed: text("reinvocationPolicy").as_deref() == Some("IfNeeded"),
            match_conditions: value
                .get("matchConditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|condition| MatchCondition {
                    expression: condition
                        .get("expression")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
                .collect(),
            ignore_failures: text("failurePolicy").as_deref() == Some("Ignore"),
            namespace_selector: value.get("namespaceSelector").cloned(),
            object_selector: value.get("objectSelector").cloned(),
            side_effects: text("sideEffects"),
            timeout: Duration::from_secs(seconds),
            review_versions: strings(value.get("admissionReviewVersions")),
        })
    }

    /// The resource and kind this hook is called for by the write `seen` (None: it is
    /// not called): the request's own when a rule matches it; else, under `matchPolicy:
    /// Equivalent`, the first equivalent resource a rule matches, rules in order, each
    /// against the equivalents in the real mapper's order.
    pub(crate) fn invocation(&self, seen: &Seen, attributes: &Attributes) -> Option<Equivalent> {
        let selected = namespace_matches(self.namespace_selector.as_ref(), seen, &attributes.info)
            && object_matches(self.object_selector.as_ref(), seen);
        if !selected {
            return None;
        }
        let own = &attributes.resource;
        if self.rules.iter().any(|rule| rule_matches(rule, seen, own)) {
            return Some(Equivalent {
                resource: own.clone(),
                kind: attributes.kind.clone(),
            });
        }
        if !self.equivalent {
            return None;
        }
        let others = attributes.equivalents.members.iter();
        let others: Vec<&Equivalent> = others.filter(|e| e.resource != *own).collect();
        self.rules.iter().find_map(|rule| {
            others
                .iter()
                .find(|e| rule_matches(rule, seen, &e.resource))
                .map(|e| (*e).clone())
        })
    }
}

/// Every webhook of the stored configurations of `plural` (mutating or validating), in
/// the real order: configurations by name, then each one's webhooks as listed.
pub(crate) fn hooks(state: &State, plural: &str) -> Vec<Hook> {
    let Some(rid) = state.find(GROUP, "v1", plural) else {
        return Vec::new();
    };
    // Snapshots are in key order, and a cluster-scoped key is the name.
    state
        .snapshot(rid, None)
        .iter()
        .flat_map(|configuration| {
            let value = configuration.value();
            value
                .get("webhooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Hook::from_value)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether any webhook configuration is stored (else writes skip admission altogether).
pub(crate) fn any_configured(state: &State) -> bool {
    [MUTATING, VALIDATING].iter().any(|plural| {
        state
            .find(GROUP, "v1", plural)
            .is_some_and(|rid| state.count(rid) > 0)
    })
}

/// Whether a write of `info` is exempt from webhooks, as the real server exempts the
/// admission configuration resources themselves (so a broken webhook cannot lock them).
pub(crate) fn exempt(info: &ResourceInfo) -> bool {
    info.group == GROUP
        && matches!(
            info.plural.as_str(),
            VALIDATING
                | MUTATING
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

/// The strings of a JSON array (none when it is not one).
pub(crate) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// One rule against the write `seen` of `resource`: operations, groups, versions,
/// resources (with subresources and `*`) and scope.
fn rule_matches(rule: &Value, seen: &Seen, resource: &GroupVersionResource) -> bool {
    let any_of = |field: &str, wanted: &str| {
        strings(rule.get(field))
            .iter()
            .any(|v| v == "*" || v == wanted)
    };
    let operation = match seen.operation {
        kube::core::admission::Operation::Create => "CREATE",
        kube::core::admission::Operation::Update => "UPDATE",
        kube::core::admission::Operation::Delete => "DELETE",
        kube::core::admission::Operation::Connect => "CONNECT",
    };
    let named = strings(rule.get("resources")).iter().any(|entry| {
        let (name, sub) = entry.split_once('/').unwrap_or((entry.as_str(), ""));
        (name == "*" || name == resource.resource) && (sub == "*" || sub == seen.subresource)
    });
    let scope = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => seen.namespace.is_none(),
        "Namespaced" => seen.namespace.is_some(),
        _ => true,
    };
    any_of("operations", operation)
        && any_of("apiGroups", &resource.group)
        && any_of("apiVersions", &resource.version)
        && named
        && scope
}

/// `namespaceSelector`: cluster-scoped objects other than Namespaces always match; others
/// by their namespace's labels (a Namespace by its own).
fn namespace_matches(selector: Option<&Value>, seen: &Seen, info: &ResourceInfo) -> bool {
    let is_namespace = info.group.is_empty() && info.plural == "namespaces";
    if seen.namespace.is_none() && !is_namespace {
        return true;
    }
    let Some(selector) = selector.filter(|s| !selector_is_empty(s)) else {
        return true;
    };
    let empty = Map::new();
    selector_matches(selector, seen.namespace_labels.as_ref().unwrap_or(&empty))
}

/// `objectSelector`: the new object's labels or the old one's.
fn object_matches(selector: Option<&Value>, seen: &Seen) -> bool {
    let Some(selector) = selector.filter(|s| !selector_is_empty(s)) else {
        return true;
    };
    [&seen.object, &seen.old_object].into_iter().any(|object| {
        object.as_ref().is_some_and(|object| {
            let empty = Map::new();
            let labels = object
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            selector_matches(selector, labels)
        })
    })
}

fn selector_is_empty(selector: &Value) -> bool {
    let empty = |field: &str| {
        selector.get(field).is_none_or(|v| {
            v.is_null()
                || v.as_object().is_some_and(Map::is_empty)
                || v.as_array().is_some_and(Vec::is_empty)
        })
    };
    empty("matchLabels") && empty("matchExpressions")
}

/// A `metav1.LabelSelector` (`matchLabels` and `matchExpressions` with `In`, `NotIn`,
/// `Exists`, `DoesNotExist`) against `labels`; an unknown operator matches nothing.
pub(crate) fn selector_matches(selector: &Value, labels: &Map<String, Value>) -> bool {
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let match_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(key, value)| label(key) == value.as_str());
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|expression| {
            let key = expression
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let values = strings(expression.get("values"));
            let has = |v: &str| values.iter().any(|w| w == v);
            match expression.get("operator").and_then(Value::as_str) {
                Some("In") => label(key).is_some_and(has),
                Some("NotIn") => label(key).is_none_or(|v| !has(v)),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        });
    match_labels && expressions
}
