//! Which field labels each resource's field selectors accept, and where each one's value
//! lives in the object: one table row per field, as the real server's field-label
//! conversion functions and `ToSelectableFields` pair them up.
//!
//! `metadata.name` and `metadata.namespace` are accepted by every resource (read from the
//! stored object's metadata); the rows here are the resource-specific extras. To make a
//! kind filterable by another field, add a row to its table (and, when the real server
//! registers a conversion function for the kind, mark it [`Conversion::Registered`] so an
//! unknown label gets that function's wording).

use serde_json::Value;

use crate::status::go_quote;

/// A resource-specific field a field selector may name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SelectableField {
    /// The label clients send (`involvedObject.name`).
    pub label: &'static str,
    /// JSON pointers into the object, tried in order: the first that holds a non-empty
    /// value is the field's value; none gives `""`, as the real server's field set holds
    /// Go's zero value for an unset field.
    pub pointers: &'static [&'static str],
}

impl SelectableField {
    /// The field's value in `object`, formatted as the real server's field set holds it
    /// (strings as they are, booleans and numbers as Go prints them, unset as `""`).
    pub(crate) fn value_in(&self, object: &Value) -> String {
        self.pointers
            .iter()
            .find_map(|p| field_text(object, p))
            .unwrap_or_default()
    }
}

/// The value at `pointer` in `object` as the real server's field set holds it: strings
/// as they are, booleans and numbers as Go prints them; `None` when unset or empty.
pub(crate) fn field_text(object: &Value, pointer: &str) -> Option<String> {
    match object.pointer(pointer)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// How the real server checks a resource's field labels, which decides the wording for
/// an unknown one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// The default conversion (most resources, CRDs):
    /// `"x" is not a known field selector: only "metadata.name", "metadata.namespace"`.
    Default,
    /// A conversion function registered for the kind (core Pods, Nodes, Namespaces,
    /// Secrets, Events; events.k8s.io Events): `field label not supported: x`.
    Registered,
}

/// The field labels one resource accepts besides `metadata.name`/`metadata.namespace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldLabels {
    conversion: Conversion,
    fields: &'static [SelectableField],
    /// A custom resource version's `selectableFields`, as labels (`spec.size`).
    custom: std::sync::Arc<[String]>,
}

/// `involvedObject.*` of a core v1 Event (pkg/apis/core/v1/conversion.go and
/// pkg/registry/core/event/strategy.go).
const CORE_EVENT: &[SelectableField] = &[
    field("involvedObject.kind", &["/involvedObject/kind"]),
    field("involvedObject.namespace", &["/involvedObject/namespace"]),
    field("involvedObject.name", &["/involvedObject/name"]),
    field("involvedObject.uid", &["/involvedObject/uid"]),
    field("involvedObject.apiVersion", &["/involvedObject/apiVersion"]),
    field(
        "involvedObject.resourceVersion",
        &["/involvedObject/resourceVersion"],
    ),
    field("involvedObject.fieldPath", &["/involvedObject/fieldPath"]),
    field("reason", &["/reason"]),
    field("reportingComponent", &["/reportingComponent"]),
    // The real field set falls back to the reporting controller when `source` is unset.
    field("source", &["/source/component", "/reportingComponent"]),
    field("type", &["/type"]),
];

/// An events.k8s.io/v1 Event: the same fields under their v1 names
/// (pkg/apis/events/v1/conversion.go maps `regarding.*` to `involvedObject.*` and
/// `reportingController` to `reportingComponent`).
const EVENTS_V1_EVENT: &[SelectableField] = &[
    field("regarding.kind", &["/regarding/kind"]),
    field("regarding.namespace", &["/regarding/namespace"]),
    field("regarding.name", &["/regarding/name"]),
    field("regarding.uid", &["/regarding/uid"]),
    field("regarding.apiVersion", &["/regarding/apiVersion"]),
    field("regarding.resourceVersion", &["/regarding/resourceVersion"]),
    field("regarding.fieldPath", &["/regarding/fieldPath"]),
    field("reason", &["/reason"]),
    field("reportingController", &["/reportingController"]),
    field(
        "source",
        &["/deprecatedSource/component", "/reportingController"],
    ),
    field("type", &["/type"]),
];

/// A core v1 Pod's most used fields (pkg/registry/core/pod/strategy.go selects on a few
/// more: `spec.restartPolicy`, `spec.schedulerName`, `spec.serviceAccountName`,
/// `spec.hostNetwork`, `status.podIP`, `status.nominatedNodeName`; this server does not
/// apply the defaults those rely on, so it leaves them out).
const POD: &[SelectableField] = &[
    field("spec.nodeName", &["/spec/nodeName"]),
    field("status.phase", &["/status/phase"]),
];

const fn field(label: &'static str, pointers: &'static [&'static str]) -> SelectableField {
    SelectableField { label, pointers }
}

impl FieldLabels {
    /// The field labels the real server accepts for a resource.
    pub(crate) fn of(group: &str, kind: &str) -> Self {
        let (conversion, fields) = match (group, kind) {
            ("", "Event") => (Conversion::Registered, CORE_EVENT),
            ("events.k8s.io", "Event") => (Conversion::Registered, EVENTS_V1_EVENT),
            ("", "Pod") => (Conversion::Registered, POD),
            ("", "Node" | "Namespace" | "Secret") => (Conversion::Registered, &[][..]),
            _ => (Conversion::Default, &[][..]),
        };
        Self {
            conversion,
            fields,
            custom: std::sync::Arc::from(Vec::new()),
        }
    }

    /// The field labels of a custom resource version whose CRD declares
    /// `selectableFields` with these JSON paths (`.spec.size`): the conversion function
    /// the real server registers for them accepts them besides `metadata.name` and
    /// `metadata.namespace`, and answers `field label not supported` to any other. Without
    /// any, the default conversion's wording.
    pub(crate) fn custom(json_paths: &[String]) -> Self {
        let labels: Vec<String> = json_paths
            .iter()
            .map(|p| p.trim_start_matches('.').to_owned())
            .collect();
        let conversion = if labels.is_empty() {
            Conversion::Default
        } else {
            Conversion::Registered
        };
        Self {
            conversion,
            fields: &[],
            custom: std::sync::Arc::from(labels),
        }
    }

    /// The field labels of resource `rid` in `state`.
    pub(crate) fn of_resource(state: &crate::state::State, rid: crate::state::ResourceId) -> Self {
        match state.custom.served(rid) {
            Some(served) => Self::custom(&served.selectable_fields),
            None => {
                let info = &state.resources[rid];
                Self::of(&info.group, &info.kind)
            }
        }
    }

    /// The resource-specific field named `label`, if the resource has one.
    pub(crate) fn find(&self, label: &str) -> Option<&'static SelectableField> {
        self.fields.iter().find(|f| f.label == label)
    }

    /// The JSON pointer of a custom resource's selectable field named `label`.
    pub(crate) fn find_custom(&self, label: &str) -> Option<String> {
        self.custom
            .iter()
            .find(|l| *l == label)
            .map(|l| format!("/{}", l.replace('.', "/")))
    }

    /// The real server's answer to an unknown label.
    pub(crate) fn unknown(&self, label: &str) -> String {
        match self.conversion {
            Conversion::Default => format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                go_quote(label)
            ),
            Conversion::Registered => format!("field label not supported: {label}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn source_falls_back_to_the_reporting_controller() {
        let labels = FieldLabels::of("", "Event");
        let source = labels.find("source").expect("core Events select on source");
        assert_eq!(
            source
                .value_in(&json!({"source": {"component": "kubelet"}, "reportingComponent": "x"})),
            "kubelet"
        );
        assert_eq!(source.value_in(&json!({"reportingComponent": "x"})), "x");
        assert_eq!(source.value_in(&json!({})), "");
    }

    #[test]
    fn events_v1_uses_its_own_names() {
        let labels = FieldLabels::of("events.k8s.io", "Event");
        assert!(labels.find("regarding.name").is_some());
        assert!(labels.find("involvedObject.name").is_none());
        assert_eq!(
            labels.unknown("involvedObject.name"),
            "field label not supported: involvedObject.name"
        );
        assert!(FieldLabels::of("", "ConfigMap").find("reason").is_none());
    }
}
