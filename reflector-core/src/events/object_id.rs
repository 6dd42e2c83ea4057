//! [`ObjectId`]: which object an event is about, as the correlator tells them apart.

use k8s_openapi::api::core::v1::ObjectReference;

/// An `ObjectReference`'s identity: apiVersion, kind, namespace, name and uid (not
/// `resourceVersion` or `fieldPath`), as client-go's spam key and aggregation key read
/// it.
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
