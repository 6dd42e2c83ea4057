//! [`OwnerMapping`]: from a child object to the references of its owners, as
//! controller-runtime's `EnqueueRequestForOwner`.

use std::any::TypeId;
use std::marker::PhantomData;

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::object::ObjectRef;

/// Maps a child to the references of its owners of kind `K`, through the child's
/// `metadata.ownerReferences`, as controller-runtime's `EnqueueRequestForOwner`:
///
/// - a reference matches when its group (from `apiVersion`, version ignored) and
///   `kind` are the owner type's;
/// - by default only the *controller* reference counts (the one with
///   `controller: true`, as `OnlyControllerOwner`, which controller-runtime's
///   builder uses for `Owns`); [`OwnerMapping::every_owner`] maps every matching
///   reference;
/// - the owner's namespace is the child's (owner references cannot cross
///   namespaces), or none when the owner type is cluster-scoped.
///
/// # Example
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// use reflector::controller::OwnerMapping;
/// use reflector::object::ObjectRef;
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("ns".into());
/// cm.metadata.name = Some("web-config".into());
/// cm.metadata.owner_references = Some(vec![OwnerReference {
///     api_version: "apps/v1".into(),
///     kind: "Deployment".into(),
///     name: "web".into(),
///     uid: "1".into(),
///     controller: Some(true),
///     ..OwnerReference::default()
/// }]);
/// let mapping = OwnerMapping::<Deployment>::new();
/// assert_eq!(mapping.owners(&cm), vec![ObjectRef::new(Some("ns"), "web")]);
/// ```
pub struct OwnerMapping<K> {
    group: String,
    kind: String,
    cluster_scoped: bool,
    controller_only: bool,
    owner: PhantomData<fn() -> K>,
}

impl<K> Clone for OwnerMapping<K> {
    fn clone(&self) -> Self {
        OwnerMapping {
            group: self.group.clone(),
            kind: self.kind.clone(),
            cluster_scoped: self.cluster_scoped,
            controller_only: self.controller_only,
            owner: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for OwnerMapping<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnerMapping")
            .field("group", &self.group)
            .field("kind", &self.kind)
            .field("cluster_scoped", &self.cluster_scoped)
            .field("controller_only", &self.controller_only)
            .finish()
    }
}

impl<K> Default for OwnerMapping<K>
where
    K: kube::Resource,
    K::DynamicType: Default,
    K::Scope: 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

/// The group part of an `apiVersion`: `apps` for `apps/v1`, empty for `v1`.
fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

impl<K> OwnerMapping<K>
where
    K: kube::Resource,
    K::DynamicType: Default,
    K::Scope: 'static,
{
    /// Maps to owners of kind `K`, controller references only.
    #[must_use]
    pub fn new() -> Self {
        let dt = K::DynamicType::default();
        OwnerMapping {
            group: K::group(&dt).into_owned(),
            kind: K::kind(&dt).into_owned(),
            cluster_scoped: TypeId::of::<K::Scope>() == TypeId::of::<ClusterResourceScope>(),
            controller_only: true,
            owner: PhantomData,
        }
    }
}

impl<K> OwnerMapping<K> {
    /// Maps every matching owner reference, not only the controller's (as
    /// controller-runtime's `MatchEveryOwner`).
    #[must_use]
    pub fn every_owner(mut self) -> Self {
        self.controller_only = false;
        self
    }

    /// Whether only the controller reference counts.
    #[must_use]
    pub fn controller_only(&self) -> bool {
        self.controller_only
    }

    fn matches(&self, r: &OwnerReference) -> bool {
        r.kind == self.kind && group_of(&r.api_version) == self.group
    }

    /// The references of `child`'s owners of kind `K` (deduplicated, in reference
    /// order). A child without a namespace gets cluster-scoped owner references.
    #[must_use]
    pub fn owners<C: kube::Resource>(&self, child: &C) -> Vec<ObjectRef<K>> {
        let meta = child.meta();
        let Some(refs) = meta.owner_references.as_deref() else {
            return Vec::new();
        };
        let namespace = if self.cluster_scoped {
            None
        } else {
            meta.namespace.as_deref()
        };
        let mut keys: Vec<ObjectRef<K>> = Vec::new();
        if self.controller_only {
            // As client-go's `GetControllerOf`: the first reference marked controller.
            if let Some(r) = refs.iter().find(|r| r.controller == Some(true))
                && self.matches(r)
                && !r.name.is_empty()
            {
                keys.push(ObjectRef::new(namespace, &r.name));
            }
            return keys;
        }
        for r in refs
            .iter()
            .filter(|r| self.matches(r) && !r.name.is_empty())
        {
            let key = ObjectRef::new(namespace, &r.name);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    use super::*;

    fn owner_ref(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller: Some(controller),
            ..OwnerReference::default()
        }
    }

    fn child(refs: Vec<OwnerReference>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some("child".into());
        cm.metadata.owner_references = Some(refs);
        cm
    }

    #[test]
    fn controller_only_maps_the_controller_reference_of_the_owner_kind() {
        let cm = child(vec![
            owner_ref("apps/v1", "Deployment", "not-controller", false),
            owner_ref("apps/v1", "Deployment", "web", true),
        ]);
        let keys = OwnerMapping::<Deployment>::new().owners(&cm);
        assert_eq!(keys, vec![ObjectRef::new(Some("ns"), "web")]);
    }

    #[test]
    fn controller_of_another_kind_maps_nothing() {
        let cm = child(vec![
            owner_ref("apps/v1", "Deployment", "web", false),
            owner_ref("apps/v1", "ReplicaSet", "web-1", true),
        ]);
        assert!(OwnerMapping::<Deployment>::new().owners(&cm).is_empty());
        assert_eq!(
            OwnerMapping::<ReplicaSet>::new().owners(&cm),
            vec![ObjectRef::new(Some("ns"), "web-1")]
        );
    }

    #[test]
    fn group_must_match_and_version_is_ignored() {
        let cm = child(vec![
            owner_ref("extensions/v1beta1", "Deployment", "other-group", true),
            owner_ref("apps/v1beta2", "Deployment", "old-version", false),
        ]);
        let mapping = OwnerMapping::<Deployment>::new().every_owner();
        assert_eq!(
            mapping.owners(&cm),
            vec![ObjectRef::new(Some("ns"), "old-version")]
        );
    }

    #[test]
    fn every_owner_maps_all_matching_references_once() {
        let cm = child(vec![
            owner_ref("apps/v1", "Deployment", "a", false),
            owner_ref("apps/v1", "Deployment", "b", true),
            owner_ref("apps/v1", "Deployment", "a", false),
        ]);
        let keys = OwnerMapping::<Deployment>::new().every_owner().owners(&cm);
        assert_eq!(
            keys,
            vec![
                ObjectRef::new(Some("ns"), "a"),
                ObjectRef::new(Some("ns"), "b")
            ]
        );
    }

    #[test]
    fn cluster_scoped_owner_gets_no_namespace() {
        let cm = child(vec![owner_ref("v1", "Namespace", "ns", true)]);
        assert_eq!(
            OwnerMapping::<Namespace>::new().owners(&cm),
            vec![ObjectRef::new(None, "ns")]
        );
    }

    #[test]
    fn no_owner_references_maps_nothing() {
        let cm = ConfigMap::default();
        assert!(OwnerMapping::<Deployment>::new().owners(&cm).is_empty());
    }
}
