//! The caBundle keeper: keeps the CA of the server's certificate in the
//! `caBundle` of its webhook configurations and of its CRDs' conversion webhook,
//! so the API server trusts the certificate it is served.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, TestOperation};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::conversion::ConversionRoute;
use super::hook::{AdmissionHook, Purpose};

/// How often the caBundles are checked when the CA has not changed, to repair one
/// that a re-applied manifest emptied.
const RESYNC: Duration = Duration::from_secs(60);
/// The first and the longest wait before a failed write is tried again.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// The objects whose caBundle the keeper keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Targets {
    /// The ValidatingWebhookConfiguration, if the server validates a kind.
    pub(crate) validating: Option<String>,
    /// The MutatingWebhookConfiguration, if the server defaults a kind.
    pub(crate) mutating: Option<String>,
    /// The CRDs the server converts.
    pub(crate) crds: Vec<String>,
}

impl Targets {
    /// The objects the manifests make for a server reached through `service`: its
    /// webhook configurations are named after the Service.
    pub(crate) fn of(
        service: &str,
        hooks: &[AdmissionHook],
        conversions: &[ConversionRoute],
    ) -> Self {
        let has = |validate: bool| {
            hooks
                .iter()
                .any(|h| matches!(h.purpose, Purpose::Validate { .. }) == validate)
        };
        Targets {
            validating: has(true).then(|| service.to_owned()),
            mutating: has(false).then(|| service.to_owned()),
            crds: conversions.iter().map(|c| c.hub.crd_name()).collect(),
        }
    }
}

/// Writes the CA `ca` holds into every target's caBundle, and again each time it
/// changes, checking every minute, until `stop` fires. A failed write is retried
/// with a backoff (1 s doubling to 60 s): an object may not be created yet.
///
/// # Cancel safety
/// Cancel-safe: each write is one patch.
pub(crate) async fn keep(
    client: Client,
    targets: Targets,
    mut ca: watch::Receiver<Option<Arc<str>>>,
    stop: CancellationToken,
) {
    let mut retry = RETRY_FIRST;
    loop {
        let pem = ca.borrow_and_update().clone();
        let wait = match pem {
            None => RESYNC,
            Some(pem) => match write_all(&client, &targets, &pem).await {
                Ok(()) => {
                    retry = RETRY_FIRST;
                    RESYNC
                }
                Err(e) => {
                    tracing::warn!(error = %e, ?retry, "caBundle not written yet; retrying");
                    let wait = retry;
                    retry = (retry * 2).min(RETRY_MAX);
                    wait
                }
            },
        };
        tokio::select! {
            () = stop.cancelled() => return,
            changed = ca.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Why a caBundle was not written.
#[derive(Debug, thiserror::Error)]
enum KeepError {
    #[error("{kind} {name}")]
    Api {
        kind: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("{kind} {name} does not exist")]
    Missing { kind: String, name: String },
    #[error("CRD {0} has no conversion webhook: apply the manifests' CRD")]
    NoConversionWebhook(String),
}

/// Writes `pem` into every target, each that differs; the first failure is
/// returned once every target was tried.
async fn write_all(client: &Client, targets: &Targets, pem: &str) -> Result<(), KeepError> {
    let mut first = None;
    if let Some(name) = &targets.validating {
        let api = Api::<ValidatingWebhookConfiguration>::all(client.clone());
        let bundles = |c: &ValidatingWebhookConfiguration| {
            let hooks = c.webhooks.iter().flatten();
            hooks
                .map(|w| w.client_config.ca_bundle.as_ref().map(|b| b.0.clone()))
                .collect()
        };
        first = first.or(write_webhooks(&api, name, pem, bundles).await.err());
    }
    if let Some(name) = &targets.mutating {
        let api = Api::<MutatingWebhookConfiguration>::all(client.clone());
        let bundles = |c: &MutatingWebhookConfiguration| {
            let hooks = c.webhooks.iter().flatten();
            hooks
                .map(|w| w.client_config.ca_bundle.as_ref().map(|b| b.0.clone()))
                .collect()
        };
        first = first.or(write_webhooks(&api, name, pem, bundles).await.err());
    }
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    for name in &targets.crds {
        first = first.or(write_crd(&crds, name, pem).await.err());
    }
    first.map_or(Ok(()), Err)
}

/// Sets the caBundle of every webhook of the configuration `name` that lacks `pem`,
/// in one JSON Patch guarded by the resource version read.
async fn write_webhooks<K>(
    api: &Api<K>,
    name: &str,
    pem: &str,
    bundles: impl Fn(&K) -> Vec<Option<Vec<u8>>>,
) -> Result<(), KeepError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let kind = K::kind(&()).into_owned();
    let failed = |source| KeepError::Api {
        kind: kind.clone(),
        name: name.to_owned(),
        source,
    };
    let Some(config) = api.get_opt(name).await.map_err(failed)? else {
        return Err(KeepError::Missing {
            kind,
            name: name.to_owned(),
        });
    };
    let encoded = Value::String(STANDARD.encode(pem));
    let mut ops: Vec<PatchOperation> = bundles(&config)
        .into_iter()
        .enumerate()
        .filter(|(_, bundle)| bundle.as_deref() != Some(pem.as_bytes()))
        .map(|(i, _)| {
            let path = ["webhooks", &i.to_string(), "clientConfig", "caBundle"];
            PatchOperation::Add(AddOperation {
                path: PointerBuf::from_tokens(path),
                value: encoded.clone(),
            })
        })
        .collect();
    if ops.is_empty() {
        return Ok(());
    }
    // The webhooks are addressed by index: refuse the patch if they changed since.
    let version = config.meta().resource_version.clone();
    ops.insert(
        0,
        PatchOperation::Test(TestOperation {
            path: PointerBuf::from_tokens(["metadata", "resourceVersion"]),
            value: json!(version),
        }),
    );
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Json::<()>(json_patch::Patch(ops)),
    )
    .await
    .map_err(failed)?;
    tracing::info!(%kind, name, "caBundle written");
    Ok(())
}

/// Sets the caBundle of the CRD `name`'s conversion webhook, if it lacks `pem`.
async fn write_crd(
    api: &Api<CustomResourceDefinition>,
    name: &str,
    pem: &str,
) -> Result<(), KeepError> {
    let kind = || "CustomResourceDefinition".to_owned();
    let failed = |source| KeepError::Api {
        kind: kind(),
        name: name.to_owned(),
        source,
    };
    let Some(crd) = api.get_opt(name).await.map_err(failed)? else {
        return Err(KeepError::Missing {
            kind: kind(),
            name: name.to_owned(),
        });
    };
    let webhook = crd
        .spec
        .conversion
        .as_ref()
        .and_then(|c| c.webhook.as_ref());
    let Some(config) = webhook.and_then(|w| w.client_config.as_ref()) else {
        return Err(KeepError::NoConversionWebhook(name.to_owned()));
    };
    if config.ca_bundle.as_ref().map(|b| b.0.as_slice()) == Some(pem.as_bytes()) {
        return Ok(());
    }
    let patch = json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": STANDARD.encode(pem)}}}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(failed)?;
    tracing::info!(kind = "CustomResourceDefinition", name, "caBundle written");
    Ok(())
}
