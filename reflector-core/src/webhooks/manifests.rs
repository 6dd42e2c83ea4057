//! The objects that deploy a [`WebhookServer`]: its Service, its webhook
//! configurations with rules from the registered kinds, the CRDs it converts with
//! their conversion stanza, and the RBAC of its caBundle keeper.

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::{
    ContainerPort, SecretVolumeSource, Service, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::WebhookServer;
use super::ca_bundle::Targets;
use super::hook::{AdmissionHook, Purpose, conversion_path};

/// The port the Service serves on (the API server calls webhooks on 443 unless told
/// otherwise).
const SERVICE_PORT: i32 = 443;
/// The container port's name, the Service's target.
const PORT_NAME: &str = "webhooks";
/// The webhook timeout: 10 s, the API server's default.
const TIMEOUT_SECONDS: i32 = 10;

/// What a [`WebhookServer`] adds to a manager's manifests.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WebhookManifests {
    pub(crate) service: Service,
    pub(crate) validating: Option<ValidatingWebhookConfiguration>,
    pub(crate) mutating: Option<MutatingWebhookConfiguration>,
    pub(crate) crds: Vec<apiext::CustomResourceDefinition>,
    /// The operator container's port the Service targets.
    pub(crate) port: ContainerPort,
    /// With mounted certificates: the Secret `<service>-tls` as a volume, and its
    /// mount at the directory they are read from.
    pub(crate) volume: Option<(Volume, VolumeMount)>,
}

impl WebhookServer {
    /// The objects that deploy this server in `namespace`, its Service selecting the
    /// pods labelled `selector`, every object labelled `labels`.
    pub(crate) fn manifests(
        &self,
        namespace: &str,
        selector: &BTreeMap<String, String>,
        labels: &BTreeMap<String, String>,
    ) -> WebhookManifests {
        let meta = |name: &str, namespace: Option<&str>| ObjectMeta {
            name: Some(name.to_owned()),
            namespace: namespace.map(str::to_owned),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        };
        let client = |path: String| WebhookClientConfig {
            service: Some(ServiceReference {
                name: self.service.clone(),
                namespace: namespace.to_owned(),
                path: Some(path),
                port: Some(SERVICE_PORT),
            }),
            ..WebhookClientConfig::default()
        };
        let validating: Vec<ValidatingWebhook> = self
            .hooks
            .iter()
            .filter(|h| matches!(h.purpose, Purpose::Validate { .. }))
            .map(|h| ValidatingWebhook {
                name: h.webhook_name(),
                admission_review_versions: vec!["v1".into()],
                side_effects: "None".into(),
                failure_policy: Some("Fail".into()),
                timeout_seconds: Some(TIMEOUT_SECONDS),
                client_config: client(h.path()),
                rules: Some(vec![rule(h)]),
                ..ValidatingWebhook::default()
            })
            .collect();
        let mutating: Vec<MutatingWebhook> = self
            .hooks
            .iter()
            .filter(|h| h.purpose == Purpose::Mutate)
            .map(|h| MutatingWebhook {
                name: h.webhook_name(),
                admission_review_versions: vec!["v1".into()],
                side_effects: "None".into(),
                failure_policy: Some("Fail".into()),
                timeout_seconds: Some(TIMEOUT_SECONDS),
                client_config: client(h.path()),
                rules: Some(vec![rule(h)]),
                ..MutatingWebhook::default()
            })
            .collect();
        let crds = self
            .conversions
            .iter()
            .filter_map(|c| {
                let crds = c.crds.iter().map(|crd| crd()).collect();
                let mut crd = match kube::core::crd::merge_crds(crds, &c.hub.version) {
                    Ok(crd) => crd,
                    Err(e) => {
                        tracing::error!(crd = %c.hub.crd_name(), error = %e, "cannot merge the versions' CRDs");
                        return None;
                    }
                };
                crd.spec.conversion = Some(apiext::CustomResourceConversion {
                    strategy: "Webhook".into(),
                    webhook: Some(apiext::WebhookConversion {
                        conversion_review_versions: vec!["v1".into()],
                        client_config: Some(apiext::WebhookClientConfig {
                            service: Some(apiext::ServiceReference {
                                name: self.service.clone(),
                                namespace: namespace.to_owned(),
                                path: Some(conversion_path(&c.hub)),
                                port: Some(SERVICE_PORT),
                            }),
                            ..apiext::WebhookClientConfig::default()
                        }),
                    }),
                });
                Some(crd)
            })
            .collect();
        let volume = self.certificates.dir().map(|dir| {
            let secret = format!("{}-tls", self.service);
            let volume = Volume {
                name: "webhook-certs".into(),
                secret: Some(SecretVolumeSource {
                    secret_name: Some(secret),
                    ..SecretVolumeSource::default()
                }),
                ..Volume::default()
            };
            let mount = VolumeMount {
                name: "webhook-certs".into(),
                mount_path: dir.display().to_string(),
                read_only: Some(true),
                ..VolumeMount::default()
            };
            (volume, mount)
        });
        WebhookManifests {
            service: Service {
                metadata: meta(&self.service, Some(namespace)),
                spec: Some(ServiceSpec {
                    selector: Some(selector.clone()),
                    ports: Some(vec![ServicePort {
                        name: Some(PORT_NAME.into()),
                        port: SERVICE_PORT,
                        target_port: Some(IntOrString::String(PORT_NAME.into())),
                        protocol: Some("TCP".into()),
                        ..ServicePort::default()
                    }]),
                    ..ServiceSpec::default()
                }),
                ..Service::default()
            },
            validating: (!validating.is_empty()).then(|| ValidatingWebhookConfiguration {
                metadata: meta(&self.service, None),
                webhooks: Some(validating),
            }),
            mutating: (!mutating.is_empty()).then(|| MutatingWebhookConfiguration {
                metadata: meta(&self.service, None),
                webhooks: Some(mutating),
            }),
            crds,
            port: ContainerPort {
                name: Some(PORT_NAME.into()),
                container_port: i32::from(self.port()),
                protocol: Some("TCP".into()),
                ..ContainerPort::default()
            },
            volume,
        }
    }

    /// What the caBundle keeper needs, if it is on: `get` and `patch` on this
    /// server's webhook configurations and CRDs, by name.
    pub(crate) fn keeper_rules(&self) -> Vec<PolicyRule> {
        if self.keeper.is_none() {
            return Vec::new();
        }
        let targets = Targets::of(&self.service, &self.hooks, &self.conversions);
        let by_name = |group: &str, resource: &str, name: &String| PolicyRule {
            api_groups: Some(vec![group.to_owned()]),
            resources: Some(vec![resource.to_owned()]),
            resource_names: Some(vec![name.clone()]),
            verbs: vec!["get".into(), "patch".into()],
            ..PolicyRule::default()
        };
        let admission = "admissionregistration.k8s.io";
        let mut rules = Vec::new();
        rules.extend(
            targets
                .validating
                .iter()
                .map(|n| by_name(admission, "validatingwebhookconfigurations", n)),
        );
        rules.extend(
            targets
                .mutating
                .iter()
                .map(|n| by_name(admission, "mutatingwebhookconfigurations", n)),
        );
        if !targets.crds.is_empty() {
            rules.push(PolicyRule {
                resource_names: Some(targets.crds.clone()),
                ..by_name(
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    &String::new(),
                )
            });
        }
        rules
    }
}

/// The rule of `hook`: its kind's group, version and resource; `CREATE` and
/// `UPDATE`, and `DELETE` for a validator of deletes.
fn rule(hook: &AdmissionHook) -> RuleWithOperations {
    let mut operations = vec!["CREATE".to_owned(), "UPDATE".to_owned()];
    if hook.purpose == (Purpose::Validate { delete: true }) {
        operations.push("DELETE".into());
    }
    RuleWithOperations {
        api_groups: Some(vec![hook.kind.group.clone()]),
        api_versions: Some(vec![hook.kind.version.clone()]),
        resources: Some(vec![hook.kind.plural.clone()]),
        operations: Some(operations),
        scope: None,
    }
}
