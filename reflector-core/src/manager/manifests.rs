//! [`Manifests`]: the objects that deploy what a manager runs — its ServiceAccount,
//! its RBAC bound to it, and a Deployment with probes on `/healthz` and `/readyz`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, HTTPGetAction, PodSpec, PodTemplateSpec, Probe, ServiceAccount,
    Volume,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use serde::Serialize;

use super::Manager;

/// How to deploy an operator: its name (of the ServiceAccount, roles, bindings and
/// Deployment, and the `app.kubernetes.io/name` label), namespace and image, and
/// what its container is given.
///
/// # Example
/// ```
/// use reflector::manager::DeployOptions;
/// let options = DeployOptions::new("widget-operator", "ghcr.io/example/widget-operator:1.0")
///     .namespace("widgets")
///     .args(["--cluster"])
///     .replicas(2);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct DeployOptions {
    name: String,
    image: String,
    namespace: String,
    args: Vec<String>,
    replicas: i32,
    metrics_port: u16,
}

impl DeployOptions {
    /// Deploys `image` as `name`, in namespace `default`, one replica, no
    /// arguments, `/metrics` and the probes on port 8080 (where the operator must
    /// serve them: `Manager::metrics_server` on `0.0.0.0:8080`, feature
    /// `metrics-server`).
    pub fn new(name: impl Into<String>, image: impl Into<String>) -> Self {
        DeployOptions {
            name: name.into(),
            image: image.into(),
            namespace: "default".into(),
            args: Vec::new(),
            replicas: 1,
            metrics_port: 8080,
        }
    }

    /// The namespace of the ServiceAccount, the Deployment (and the pods' Lease).
    /// Default `default`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// The container's arguments. Default: none.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// How many pods (more than one: with a leader election, one leads, the others
    /// stand by warm). Default 1.
    pub fn replicas(mut self, replicas: i32) -> Self {
        self.replicas = replicas;
        self
    }

    /// The port `/metrics`, `/healthz` and `/readyz` are served on, named
    /// `metrics`. Default 8080.
    pub fn metrics_port(mut self, port: u16) -> Self {
        self.metrics_port = port;
        self
    }
}

/// The objects that deploy what a [`Manager`] runs, made by
/// [`Manager::manifests`]: apply them with the CRDs the controllers need
/// (`kubectl apply -f -` takes them as one YAML stream).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Manifests {
    /// The pods' identity.
    pub service_account: ServiceAccount,
    /// What the controllers read and write ([`Manager::rbac`]).
    pub cluster_role: ClusterRole,
    /// The ClusterRole, to the ServiceAccount.
    pub cluster_role_binding: ClusterRoleBinding,
    /// The election's Lease, if the manager has an election.
    pub role: Option<Role>,
    /// The Role, to the ServiceAccount.
    pub role_binding: Option<RoleBinding>,
    /// The operator: `replicas` pods of the image, as the ServiceAccount, with a
    /// liveness probe on `/healthz`, a readiness probe on `/readyz`, the metrics
    /// port named `metrics`, and a termination grace period covering the manager's
    /// graceful shutdown; with a webhook server, its port named `webhooks` (and,
    /// with mounted certificates, the Secret `<service>-tls` mounted where they
    /// are read).
    pub deployment: Deployment,
    /// The webhook server's Service, named as the server's: port 443 to the
    /// container's `webhooks` port. `None` without
    /// [`add_webhooks`](Manager::add_webhooks).
    #[cfg(feature = "webhooks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "webhooks")))]
    pub webhook_service: Option<k8s_openapi::api::core::v1::Service>,
    /// One webhook per validated kind (rules: its group, version and resource;
    /// `CREATE`, `UPDATE`, and `DELETE` if it validates deletes), `sideEffects:
    /// None`, `admissionReviewVersions: [v1]`, `failurePolicy: Fail`, named as the
    /// Service. `None` if no kind is validated.
    #[cfg(feature = "webhooks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "webhooks")))]
    pub validating_webhook_configuration:
        Option<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration>,
    /// One webhook per defaulted kind, as the validating ones. `None` if no kind is
    /// defaulted.
    #[cfg(feature = "webhooks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "webhooks")))]
    pub mutating_webhook_configuration:
        Option<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>,
    /// Each CRD the webhook server converts: every registered version (the hub's
    /// the storage version), `spec.conversion` calling the server.
    #[cfg(feature = "webhooks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "webhooks")))]
    pub custom_resource_definitions: Vec<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    >,
}

impl Manifests {
    /// Every object as JSON, in the order to apply them (the ServiceAccount and
    /// roles before the bindings, the CRDs and the Deployment; the webhook
    /// configurations last), each with its `apiVersion` and `kind`: serialize each
    /// as one YAML document.
    ///
    /// # Panics
    /// Never: k8s-openapi objects always serialize.
    #[must_use]
    pub fn objects(&self) -> Vec<serde_json::Value> {
        let mut objects = vec![
            json(&self.service_account),
            json(&self.cluster_role),
            json(&self.cluster_role_binding),
        ];
        objects.extend(self.role.as_ref().map(json));
        objects.extend(self.role_binding.as_ref().map(json));
        #[cfg(feature = "webhooks")]
        objects.extend(self.custom_resource_definitions.iter().map(json));
        #[cfg(feature = "webhooks")]
        objects.extend(self.webhook_service.as_ref().map(json));
        objects.push(json(&self.deployment));
        #[cfg(feature = "webhooks")]
        objects.extend(self.validating_webhook_configuration.as_ref().map(json));
        #[cfg(feature = "webhooks")]
        objects.extend(self.mutating_webhook_configuration.as_ref().map(json));
        objects
    }
}

fn json(object: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(object).expect("k8s-openapi objects serialize")
}

impl Manager {
    /// The objects that deploy this manager as `options` say: a ServiceAccount, the
    /// [`rbac`](Self::rbac) bound to it (a Lease in the client's default namespace
    /// is the pods' own: its Role goes in `options`' namespace), and a Deployment;
    /// with a webhook server (feature `webhooks`), its Service in `options`'
    /// namespace, its webhook configurations and the CRDs it converts.
    #[must_use]
    pub fn manifests(&self, options: &DeployOptions) -> Manifests {
        let name = &options.name;
        let labels = BTreeMap::from([("app.kubernetes.io/name".to_owned(), name.clone())]);
        let meta = |namespace: Option<&str>| ObjectMeta {
            name: Some(name.clone()),
            namespace: namespace.map(str::to_owned),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        };
        let ns = Some(options.namespace.as_str());
        let subject = Subject {
            kind: "ServiceAccount".into(),
            name: name.clone(),
            namespace: Some(options.namespace.clone()),
            ..Subject::default()
        };
        let rbac = self.rbac(name);
        let mut cluster_role = rbac.cluster_role;
        cluster_role.metadata = meta(None);
        let role = rbac.role.map(|mut role| {
            let lease_ns = role.metadata.namespace.take().unwrap_or_default();
            let own = lease_ns == self.client.default_namespace();
            role.metadata = meta(Some(if own { &options.namespace } else { &lease_ns }));
            role
        });
        let role_binding = role.as_ref().map(|role| RoleBinding {
            metadata: role.metadata.clone(),
            role_ref: role_ref::<Role>(name),
            subjects: Some(vec![subject.clone()]),
        });
        let grace = self.graceful_shutdown_timeout.as_secs() + 15;
        // Both are changed only for a webhook server.
        #[allow(unused_mut)]
        let mut container = container(options);
        #[allow(unused_mut)]
        let mut volumes: Option<Vec<Volume>> = None;
        #[cfg(feature = "webhooks")]
        let webhooks = self.webhooks.as_ref().map(|server| {
            let objects = server.manifests(&options.namespace, &labels, &labels);
            container
                .ports
                .get_or_insert_default()
                .push(objects.port.clone());
            if let Some((volume, mount)) = objects.volume.clone() {
                container.volume_mounts = Some(vec![mount]);
                volumes = Some(vec![volume]);
            }
            objects
        });
        Manifests {
            service_account: ServiceAccount {
                metadata: meta(ns),
                ..ServiceAccount::default()
            },
            cluster_role_binding: ClusterRoleBinding {
                metadata: meta(None),
                role_ref: role_ref::<ClusterRole>(name),
                subjects: Some(vec![subject]),
            },
            cluster_role,
            role,
            role_binding,
            deployment: Deployment {
                metadata: meta(ns),
                spec: DeploymentSpec {
                    replicas: Some(options.replicas),
                    selector: LabelSelector {
                        match_labels: Some(labels.clone()),
                        ..LabelSelector::default()
                    },
                    template: PodTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some(labels.clone()),
                            ..ObjectMeta::default()
                        }),
                        spec: Some(PodSpec {
                            service_account_name: Some(name.clone()),
                            termination_grace_period_seconds: Some(
                                grace.try_into().unwrap_or(i64::MAX),
                            ),
                            containers: vec![container],
                            volumes,
                            ..PodSpec::default()
                        }),
                    },
                    ..DeploymentSpec::default()
                },
                ..Deployment::default()
            },
            #[cfg(feature = "webhooks")]
            webhook_service: webhooks.as_ref().map(|w| w.service.clone()),
            #[cfg(feature = "webhooks")]
            validating_webhook_configuration: webhooks.as_ref().and_then(|w| w.validating.clone()),
            #[cfg(feature = "webhooks")]
            mutating_webhook_configuration: webhooks.as_ref().and_then(|w| w.mutating.clone()),
            #[cfg(feature = "webhooks")]
            custom_resource_definitions: webhooks.map(|w| w.crds).unwrap_or_default(),
        }
    }
}

/// A reference to the role `R` named `name`.
fn role_ref<R: Resource<DynamicType = ()>>(name: &str) -> RoleRef {
    RoleRef {
        api_group: Some(R::group(&()).into_owned()),
        kind: R::kind(&()).into_owned(),
        name: name.to_owned(),
    }
}

/// The operator's container: the image with its arguments, the metrics port, and
/// the probes.
fn container(options: &DeployOptions) -> Container {
    let probe = |path: &str| Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String("metrics".into()),
            ..HTTPGetAction::default()
        }),
        ..Probe::default()
    };
    Container {
        name: options.name.clone(),
        image: Some(options.image.clone()),
        args: (!options.args.is_empty()).then(|| options.args.clone()),
        ports: Some(vec![ContainerPort {
            name: Some("metrics".into()),
            container_port: i32::from(options.metrics_port),
            ..ContainerPort::default()
        }]),
        liveness_probe: Some(probe("/healthz")),
        readiness_probe: Some(probe("/readyz")),
        ..Container::default()
    }
}
