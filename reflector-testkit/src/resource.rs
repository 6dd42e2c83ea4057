//! Resource types the server serves: their REST coordinates, scope and subresources.

use std::any::TypeId;

use kube::CustomResourceExt;

/// How one resource type is served: its group/version/kind, plural, scope and whether it has
/// a `status` subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group (`""` for the core group).
    pub group: String,
    /// API version (`"v1"`).
    pub version: String,
    /// Kind (`"ConfigMap"`).
    pub kind: String,
    /// Lower-case plural used in URLs (`"configmaps"`).
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether `/status` is a subresource (main-resource writes then ignore `status`, and
    /// status writes ignore everything else).
    pub status_subresource: bool,
    /// Whether a DELETE that removes the object at once answers with the deleted object
    /// (the real Pod, PodTemplate, Namespace and Service storage) rather than a success
    /// `Status` (every other resource, CRDs included).
    pub delete_returns_object: bool,
    /// Whether objects are served as unstructured JSON, like custom resources: list items
    /// then keep their `kind` and `apiVersion`. Built-in (typed) resources list their
    /// items without them, as the real server does.
    pub unstructured: bool,
    /// Short names discovery lists (`cm` for ConfigMaps); kubectl accepts them.
    pub short_names: Vec<String>,
    /// Categories discovery lists (`all` for Pods); `kubectl get all` expands them.
    pub categories: Vec<String>,
    /// Whether objects carry `metadata.generation` (1 on create, bumped on spec changes
    /// and when deletion starts), as the real strategies of CRDs, Pods, workloads and a few
    /// others set it; ConfigMaps, Secrets, Leases, Namespaces and Nodes have none.
    pub generation: bool,
}

impl ResourceInfo {
    /// Describes a `kube::Resource` with a static type, e.g. any k8s-openapi type.
    /// The scope comes from `K::Scope`; it is served as a typed built-in (list items without
    /// `kind`/`apiVersion`), and DELETE answers with the object only for core Pods,
    /// PodTemplates, Namespaces and Services.
    #[must_use]
    pub fn of<K>(status_subresource: bool) -> Self
    where
        K: kube::Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        let group = K::group(&()).into_owned();
        let kind = K::kind(&()).into_owned();
        let (short_names, categories) = builtin_names(&group, &kind);
        Self {
            generation: builtin_generation(&group, &kind),
            short_names: short_names.iter().map(|s| (*s).to_owned()).collect(),
            categories: categories.iter().map(|s| (*s).to_owned()).collect(),
            delete_returns_object: group.is_empty()
                && matches!(
                    kind.as_str(),
                    "Pod" | "PodTemplate" | "Namespace" | "Service"
                ),
            group,
            version: K::version(&()).into_owned(),
            kind,
            plural: K::plural(&()).into_owned(),
            namespaced: TypeId::of::<K::Scope>()
                == TypeId::of::<k8s_openapi::NamespaceResourceScope>(),
            status_subresource,
            unstructured: false,
        }
    }

    /// Describes a custom resource: scope and the status subresource are read from `K::crd()`;
    /// it is served as unstructured JSON and DELETE answers a `Status`.
    #[must_use]
    pub fn of_crd<K>() -> Self
    where
        K: kube::Resource<DynamicType = ()> + CustomResourceExt,
    {
        let crd = K::crd();
        let version = K::version(&()).into_owned();
        let status_subresource = crd
            .spec
            .versions
            .iter()
            .filter(|v| v.name == version)
            .any(|v| v.subresources.as_ref().is_some_and(|s| s.status.is_some()));
        Self {
            group: K::group(&()).into_owned(),
            version,
            kind: K::kind(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
            namespaced: crd.spec.scope == "Namespaced",
            status_subresource,
            delete_returns_object: false,
            unstructured: true,
            generation: true,
            short_names: crd.spec.names.short_names.unwrap_or_default(),
            categories: crd.spec.names.categories.unwrap_or_default(),
        }
    }

    /// `apiVersion` as written in objects (`v1`, `apps/v1`).
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The verbs discovery lists for the resource itself (the real Namespace storage has
    /// no deletecollection).
    pub(crate) fn verbs(&self) -> &'static [&'static str] {
        if self.group.is_empty() && self.kind == "Namespace" {
            &[
                "create", "delete", "get", "list", "patch", "update", "watch",
            ]
        } else {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }

    /// Singular name used by discovery (lower-case kind).
    pub(crate) fn singular(&self) -> String {
        self.kind.to_lowercase()
    }
}

/// Short names and categories of the well-known built-in kinds, as the real server's
/// discovery lists them; none for any other kind.
fn builtin_names(group: &str, kind: &str) -> (&'static [&'static str], &'static [&'static str]) {
    const ALL: &[&str] = &["all"];
    match (group, kind) {
        ("", "Pod") => (&["po"], ALL),
        ("", "Service") => (&["svc"], ALL),
        ("", "ReplicationController") => (&["rc"], ALL),
        ("", "ConfigMap") => (&["cm"], &[]),
        ("", "Namespace") => (&["ns"], &[]),
        ("", "Node") => (&["no"], &[]),
        ("", "Endpoints") => (&["ep"], &[]),
        ("", "Event") | ("events.k8s.io", "Event") => (&["ev"], &[]),
        ("", "ServiceAccount") => (&["sa"], &[]),
        ("", "PersistentVolume") => (&["pv"], &[]),
        ("", "PersistentVolumeClaim") => (&["pvc"], &[]),
        ("", "LimitRange") => (&["limits"], &[]),
        ("", "ResourceQuota") => (&["quota"], &[]),
        ("apps", "Deployment") => (&["deploy"], ALL),
        ("apps", "ReplicaSet") => (&["rs"], ALL),
        ("apps", "StatefulSet") => (&["sts"], ALL),
        ("apps", "DaemonSet") => (&["ds"], ALL),
        ("batch", "Job") => (&[], ALL),
        ("batch", "CronJob") => (&["cj"], ALL),
        ("autoscaling", "HorizontalPodAutoscaler") => (&["hpa"], ALL),
        ("networking.k8s.io", "Ingress") => (&["ing"], &[]),
        ("networking.k8s.io", "NetworkPolicy") => (&["netpol"], &[]),
        ("policy", "PodDisruptionBudget") => (&["pdb"], &[]),
        ("storage.k8s.io", "StorageClass") => (&["sc"], &[]),
        ("scheduling.k8s.io", "PriorityClass") => (&["pc"], &[]),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => (&["crd", "crds"], &[]),
        _ => (&[], &[]),
    }
}

/// Whether the real server's strategy for a built-in kind sets `metadata.generation`.
fn builtin_generation(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        ("", "Pod" | "ReplicationController")
            | (
                "apps",
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
            )
            | ("batch", "Job" | "CronJob")
            | ("autoscaling", "HorizontalPodAutoscaler")
            | ("networking.k8s.io", "Ingress" | "NetworkPolicy")
            | ("policy", "PodDisruptionBudget")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
    )
}

/// The resources registered on every new server: Namespace, Node, Pod (with `status`
/// subresources, as the real server), ConfigMap, Secret, Lease, Events both as core v1
/// and as events.k8s.io/v1, CustomResourceDefinition (with `status`), and the admission
/// webhook configurations.
pub(crate) fn builtins() -> Vec<ResourceInfo> {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod, Secret};
    use k8s_openapi::api::events::v1::Event as EventsV1Event;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    vec![
        ResourceInfo::of::<CustomResourceDefinition>(true),
        ResourceInfo::of::<Namespace>(true),
        ResourceInfo::of::<Node>(true),
        ResourceInfo::of::<Pod>(true),
        ResourceInfo::of::<ConfigMap>(false),
        ResourceInfo::of::<Secret>(false),
        ResourceInfo::of::<Lease>(false),
        ResourceInfo::of::<Event>(false),
        ResourceInfo::of::<EventsV1Event>(false),
        ResourceInfo::of::<MutatingWebhookConfiguration>(false),
        ResourceInfo::of::<ValidatingWebhookConfiguration>(false),
    ]
}
