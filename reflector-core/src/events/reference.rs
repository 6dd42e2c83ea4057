//! The reference an Event's `regarding` holds for an object, as client-go's
//! `tools/reference.GetReference` builds it.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;

/// `obj`'s apiVersion, kind, namespace, name, uid and resourceVersion (no
/// `fieldPath`), as client-go's `GetReference`: kube's `object_ref` plus the
/// `resourceVersion` it leaves out.
pub(crate) fn reference_to<K>(obj: &K) -> ObjectReference
where
    K: Resource,
    K::DynamicType: Default,
{
    ObjectReference {
        resource_version: obj.meta().resource_version.clone(),
        ..obj.object_ref(&K::DynamicType::default())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;

    use super::*;

    #[test]
    fn every_field_of_get_reference_is_filled() {
        let mut d = Deployment::default();
        d.metadata.namespace = Some("apps".into());
        d.metadata.name = Some("web".into());
        d.metadata.uid = Some("u-1".into());
        d.metadata.resource_version = Some("42".into());
        assert_eq!(
            reference_to(&d),
            ObjectReference {
                api_version: Some("apps/v1".into()),
                kind: Some("Deployment".into()),
                namespace: Some("apps".into()),
                name: Some("web".into()),
                uid: Some("u-1".into()),
                resource_version: Some("42".into()),
                field_path: None,
            }
        );
    }
}
