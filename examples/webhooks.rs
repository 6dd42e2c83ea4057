//! Admission webhooks for a custom resource: a defaulter and a validator that compares
//! the new object with the old, served over HTTPS by the manager with a self-signed CA
//! it keeps in the webhook configurations' `caBundle`.
//!
//! ```sh
//! cargo run --example webhooks                      # the embedded API server calls the hooks
//! cargo run --example webhooks -- --print-manifests # the CRD, Service, webhook configurations, RBAC
//! cargo run --example webhooks -- --cluster         # serve them for your kubeconfig's API server
//! ```
//!
//! On a cluster, apply what `--print-manifests` prints (the Deployment runs this
//! program with `--cluster`): its Service `widget-webhooks` and the two webhook
//! configurations route the API server's calls to the pods. The testkit binary can
//! play the cluster, with `--webhook-service default/widget-webhooks=127.0.0.1:9443`
//! (`reflector-testkit/README.md` shows it with kubectl). Everything above the
//! `embedded` module is the whole program.

use kube::CustomResource;
use kube::CustomResourceExt;
use reflector::manager::DeployOptions;
use reflector::prelude::*;
use reflector::webhooks::{AdmissionContext, Defaulter, Denial, Validator, WebhookServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

#[path = "support/manifests.rs"]
mod manifests;
use manifests::Error;

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
/// A widget's desired state.
pub struct WidgetSpec {
    /// `small`, `medium` or `large`; `small` when left out.
    pub size: Option<String>,
    /// May grow, never shrink.
    pub replicas: u32,
}

impl Defaulter for Widget {
    fn set_defaults(&mut self, _: &AdmissionContext) {
        self.spec.size.get_or_insert_with(|| "small".to_owned());
    }
}

impl Validator for Widget {
    fn validate_create(&self, _: &AdmissionContext) -> Result<Vec<String>, Denial> {
        match self.spec.size.as_deref() {
            None | Some("small" | "medium" | "large") => Ok(Vec::new()),
            Some(other) => Err(Denial::new(format!(
                "size {other:?} is not small, medium or large"
            ))),
        }
    }

    fn validate_update(&self, old: &Self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
        if self.spec.replicas < old.spec.replicas {
            let message = format!(
                "replicas may not shrink ({} to {})",
                old.spec.replicas, self.spec.replicas
            );
            return Err(Denial::new(message).code(403));
        }
        self.validate_create(ctx)
    }
}

/// The webhook server, its hooks registered by type on paths derived from `Widget`.
fn webhooks(server: WebhookServer, client: kube::Client) -> WebhookServer {
    let mut server = server.keep_ca_bundle(client);
    server.defaulting::<Widget>().validating::<Widget>();
    server
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let arg = |flag: &str| std::env::args().any(|a| a == flag);
    if arg("--print-manifests") {
        let client = manifests::offline_client()?;
        let mut manager = Manager::new(client.clone());
        manager.add_webhooks(webhooks(WebhookServer::new("widget-webhooks"), client));
        let options = DeployOptions::new("widget-operator", "widget-operator:latest");
        let manifests = manager.manifests(&options.args(["--cluster"]));
        return manifests::print_yaml([Widget::crd()], manifests);
    }
    if !arg("--cluster") {
        return embedded::run().await;
    }
    // Serves on 0.0.0.0:9443 until SIGTERM or Ctrl+C.
    let client = kube::Client::try_default().await?;
    let mut manager = Manager::new(client.clone());
    manager.add_webhooks(webhooks(WebhookServer::new("widget-webhooks"), client));
    manager.run().await?;
    Ok(())
}

/// Not part of the program: without `--cluster`, the embedded API server, told where
/// the Service `default/widget-webhooks` is, calls this process's hooks as a cluster's
/// would; a short story shows a defaulted, a refused and a checked update.
mod embedded {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, Patch, PatchParams, PostParams};
    use kube::runtime::wait::await_condition;
    use kube::{CustomResourceExt, ResourceExt};
    use reflector::manager::DeployOptions;
    use reflector::prelude::*;
    use reflector::webhooks::WebhookServer;
    use reflector_testkit::ApiServer;
    use tokio_util::sync::CancellationToken;

    use super::{Error, Widget, WidgetSpec, webhooks};

    /// Whether a webhook's client configuration carries a CA.
    fn has_ca(config: Option<&WebhookClientConfig>) -> bool {
        config
            .and_then(|c| c.ca_bundle.as_ref())
            .is_some_and(|ca| !ca.0.is_empty())
    }

    pub async fn run() -> Result<(), Error> {
        let server = WebhookServer::new("widget-webhooks")
            .namespace("default")
            .bind("127.0.0.1:0".parse()?)?;
        let addr = server
            .local_addr()
            .ok_or("the webhook server has no address")?;
        let api_server = ApiServer::builder()
            .webhook_service("default", "widget-webhooks", addr)
            .start()
            .await?;
        let client = api_server.client();
        Api::<CustomResourceDefinition>::all(client.clone())
            .create(&PostParams::default(), &Widget::crd())
            .await?;

        let stop = CancellationToken::new();
        let mut manager =
            Manager::new(client.clone()).graceful_shutdown_on(stop.clone().cancelled_owned());
        manager.add_webhooks(webhooks(server, client.clone()));
        // The webhook configurations, as deployed (the keeper fills in their caBundle).
        let manifests = manager.manifests(&DeployOptions::new("widget-operator", "unused"));
        if let Some(configuration) = manifests.validating_webhook_configuration {
            Api::all(client.clone())
                .create(&PostParams::default(), &configuration)
                .await?;
        }
        if let Some(configuration) = manifests.mutating_webhook_configuration {
            Api::all(client.clone())
                .create(&PostParams::default(), &configuration)
                .await?;
        }
        let running = tokio::spawn(manager.run());
        // Calls fail until the keeper has put the CA in both configurations (the
        // mutating one last).
        let validating = |c: Option<&ValidatingWebhookConfiguration>| {
            has_ca(c.and_then(|c| Some(&c.webhooks.as_ref()?.first()?.client_config)))
        };
        let mutating = |c: Option<&MutatingWebhookConfiguration>| {
            has_ca(c.and_then(|c| Some(&c.webhooks.as_ref()?.first()?.client_config)))
        };
        await_condition(Api::all(client.clone()), "widget-webhooks", validating).await?;
        await_condition(Api::all(client.clone()), "widget-webhooks", mutating).await?;

        let widgets: Api<Widget> = Api::namespaced(client, "default");
        let spec = |size: Option<&str>, replicas| WidgetSpec {
            size: size.map(str::to_owned),
            replicas,
        };
        let created = widgets
            .create(&PostParams::default(), &Widget::new("a", spec(None, 2)))
            .await?;
        println!(
            "created {}: size {:?} (defaulted by the webhook)",
            created.name_any(),
            created.spec.size
        );
        match widgets
            .create(
                &PostParams::default(),
                &Widget::new("b", spec(Some("huge"), 1)),
            )
            .await
        {
            Err(kube::Error::Api(e)) => println!("refused ({}): {}", e.code, e.message),
            other => return Err(format!("expected a denial, got {other:?}").into()),
        }
        let shrink = serde_json::json!({ "spec": { "replicas": 1 } });
        match widgets
            .patch("a", &PatchParams::default(), &Patch::Merge(&shrink))
            .await
        {
            Err(kube::Error::Api(e)) => println!("refused ({}): {}", e.code, e.message),
            other => return Err(format!("expected a denial, got {other:?}").into()),
        }
        stop.cancel();
        running.await??;
        Ok(())
    }
}
