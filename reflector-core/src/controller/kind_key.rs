//! [`KindKey`]: which objects a write reached and which a cache holds, so a write is
//! recorded against every cache of its kind (client-go's `GroupResource`), whatever
//! Rust type each cache decodes it into (`K`, `PartialObjectMeta<K>`, `DynamicObject`).

use std::any::TypeId;

use kube::{Api, Resource};

use super::group_resource::GroupResource;

/// A resource (API group and plural name) and, for one namespace's view of it, the
/// namespace: what one `kube::Api` URL reaches.
///
/// The version is left out: a resourceVersion belongs to the stored object, which
/// every served version of the resource shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourceScope {
    resource: GroupResource,
    namespace: Option<String>,
}

impl ResourceScope {
    /// Reads a collection URL as kube's `Resource::url_path` writes them:
    /// `/api/{version}[/namespaces/{ns}]/{plural}` (the core group) or
    /// `/apis/{group}/{version}[/namespaces/{ns}]/{plural}`; `None` for any other
    /// shape.
    pub(crate) fn from_url(url: &str) -> Option<Self> {
        let mut parts = url.strip_prefix('/')?.split('/');
        let group = match parts.next()? {
            "api" => "",
            "apis" => parts.next().filter(|g| !g.is_empty())?,
            _ => return None,
        };
        parts.next().filter(|v| !v.is_empty())?;
        let (namespace, resource) = match (parts.next(), parts.next(), parts.next()) {
            (Some(resource), None, _) => (None, resource),
            (Some("namespaces"), Some(ns), Some(resource)) if !ns.is_empty() => {
                (Some(ns), resource)
            }
            _ => return None,
        };
        if resource.is_empty() || parts.next().is_some() {
            return None;
        }
        Some(ResourceScope {
            resource: GroupResource {
                group: group.to_owned(),
                resource: resource.to_owned(),
            },
            namespace: namespace.map(str::to_owned),
        })
    }

    /// The resource, without the namespace.
    pub(crate) fn into_group_resource(self) -> GroupResource {
        self.resource
    }

    /// The resource of `C` (described by `dyntype`), in `namespace`.
    fn of<C: Resource>(dyntype: &C::DynamicType, namespace: Option<&str>) -> Self {
        ResourceScope {
            resource: GroupResource::of::<C>(dyntype),
            namespace: namespace.map(str::to_owned),
        }
    }

    /// Whether a cache listing `self` holds an object written through `written`: the
    /// same resource, and for a cache of one namespace, that namespace.
    fn holds(&self, written: &ResourceScope) -> bool {
        self.resource == written.resource
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| written.namespace.as_ref() == Some(ns))
    }
}

/// What a cache holds or a write wrote: the Kubernetes resource when known, and the
/// Rust type, compared only when either side's resource is not known (a cache fed by
/// something other than the API server, such as a `FakeSource`).
#[derive(Clone, Debug)]
pub(crate) struct KindKey {
    type_id: TypeId,
    resource: Option<ResourceScope>,
}

impl KindKey {
    /// A cache of `C` over the collection `url` (`None`: not listed from the API
    /// server, so known by its type only).
    pub(crate) fn cache<C: 'static>(url: Option<&str>) -> Self {
        KindKey {
            type_id: TypeId::of::<C>(),
            resource: url.and_then(ResourceScope::from_url),
        }
    }

    /// A write through `api`.
    pub(crate) fn of_api<C: Resource + 'static>(api: &Api<C>) -> Self {
        Self::cache::<C>(Some(api.resource_url()))
    }

    /// A write of `written`, an object of `C` described by `dyntype`.
    pub(crate) fn of_object<C: Resource + 'static>(written: &C, dyntype: &C::DynamicType) -> Self {
        KindKey {
            type_id: TypeId::of::<C>(),
            resource: Some(ResourceScope::of::<C>(
                dyntype,
                written.meta().namespace.as_deref(),
            )),
        }
    }

    /// Whether a cache of `self` holds what a write of `written` wrote.
    pub(crate) fn holds(&self, written: &KindKey) -> bool {
        match (&self.resource, &written.resource) {
            (Some(cached), Some(written)) => cached.holds(written),
            _ => self.type_id == written.type_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{ApiResource, DynamicObject};
    use kube::core::PartialObjectMeta;

    use super::*;

    fn scope(group: &str, resource: &str, namespace: Option<&str>) -> Option<ResourceScope> {
        Some(ResourceScope {
            resource: GroupResource {
                group: group.into(),
                resource: resource.into(),
            },
            namespace: namespace.map(Into::into),
        })
    }

    /// kube's URLs, core and grouped, namespaced and not; anything else is unknown.
    #[test]
    fn reads_the_urls_kube_writes() {
        let url = |ns| ConfigMap::url_path(&(), ns);
        assert_eq!(
            ResourceScope::from_url(&url(Some("a"))),
            scope("", "configmaps", Some("a"))
        );
        assert_eq!(
            ResourceScope::from_url(&url(None)),
            scope("", "configmaps", None)
        );
        assert_eq!(
            ResourceScope::from_url(&Deployment::url_path(&(), Some("b"))),
            scope("apps", "deployments", Some("b"))
        );
        assert_eq!(
            ResourceScope::from_url(&Namespace::url_path(&(), None)),
            scope("", "namespaces", None)
        );
        for odd in [
            "",
            "/",
            "/api",
            "/api/v1",
            "/api/v1/",
            "/apis/apps/v1",
            "/apis//v1/x",
            "/api/v1/namespaces//configmaps",
            "/api/v1/namespaces/a/configmaps/extra",
            "/openapi/v2",
            "api/v1/configmaps",
        ] {
            assert_eq!(ResourceScope::from_url(odd), None, "{odd:?}");
        }
    }

    /// A cache holds writes of its resource through any Rust type; a namespaced
    /// cache only those in its namespace; another resource never.
    #[test]
    fn caches_hold_their_resource_whatever_the_type() {
        let all = KindKey::cache::<PartialObjectMeta<ConfigMap>>(Some("/api/v1/configmaps"));
        let in_a = KindKey::cache::<DynamicObject>(Some("/api/v1/namespaces/a/configmaps"));
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("a".into());
        let written_in_a = KindKey::of_object(&cm, &());
        cm.metadata.namespace = Some("b".into());
        let written_in_b = KindKey::of_object(&cm, &());
        assert!(all.holds(&written_in_a) && all.holds(&written_in_b));
        assert!(in_a.holds(&written_in_a) && !in_a.holds(&written_in_b));

        let ar = ApiResource::erase::<ConfigMap>(&());
        let mut dynamic = DynamicObject::new("x", &ar);
        dynamic.metadata.namespace = Some("a".into());
        assert!(all.holds(&KindKey::of_object(&dynamic, &ar)));

        let deployments = KindKey::of_object(&Deployment::default(), &());
        assert!(!all.holds(&deployments));
    }

    /// Without a resource on either side, the Rust type decides.
    #[test]
    fn caches_not_listed_from_the_server_are_known_by_type() {
        let fake = KindKey::cache::<ConfigMap>(None);
        assert!(fake.holds(&KindKey::of_object(&ConfigMap::default(), &())));
        assert!(!fake.holds(&KindKey::of_object(
            &PartialObjectMeta::<ConfigMap>::default(),
            &()
        )));
        let listed = KindKey::cache::<ConfigMap>(Some("/api/v1/configmaps"));
        assert!(listed.holds(&KindKey::cache::<ConfigMap>(Some("/unknown"))));
    }
}
