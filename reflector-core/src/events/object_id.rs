//! [`ObjectId`] and [`ReferenceKey`]: which object an event is about, as the spam
//! filter and the series correlator tell them apart.

use k8s_openapi::api::core::v1::ObjectReference;

/// An `ObjectReference`'s identity: apiVersion, kind, namespace, name and uid (not
/// `resourceVersion` or `fieldPath`), as client-go's spam key reads it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ObjectId([Option<String>; 5]);

impl ObjectId {
    pub(crate) fn of(reference: &ObjectReference) -> Self {
        ObjectId([
            reference.api_version.clone(),
            reference.kind.clone(),
            reference.namespace.clone(),
            reference.name.clone(),
            reference.uid.clone(),
        ])
    }
}

/// A whole `ObjectReference`, every field (`resourceVersion` and `fieldPath`
/// included), as client-go's `tools/events` compares references in its series key
/// (`eventKey` holds the `regarding` and `related` references themselves).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ReferenceKey([Option<String>; 7]);

impl ReferenceKey {
    pub(crate) fn of(reference: &ObjectReference) -> Self {
        let ObjectReference {
            api_version,
            field_path,
            kind,
            name,
            namespace,
            resource_version,
            uid,
        } = reference.clone();
        // Go's strings have no "unset": an empty field is the same as a missing one.
        ReferenceKey(
            [
                api_version,
                kind,
                namespace,
                name,
                uid,
                resource_version,
                field_path,
            ]
            .map(|field| field.filter(|v| !v.is_empty())),
        )
    }
}
