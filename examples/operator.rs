//! A complete operator: a `Widget` custom resource whose controller keeps an owned
//! ConfigMap per widget, cleans up behind a finalizer, records Events, reconciles only
//! while it leads a Lease, and serves `/metrics`, `/healthz`, `/readyz` on `METRICS_ADDR`
//! (default `127.0.0.1:0`, a free port; a pod's probes need `0.0.0.0:<port>`). All but
//! `mod demo` is the operator; the demo checks it on the embedded server. `-- --cluster`:
//! your kubeconfig, or in a pod its service account; `-- --print-crd`: the CRD. On a
//! cluster (CRD, RBAC, image, Deployment): the repository's `docs/cluster.md`.

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use reflector::controller::{Finalizer, FinalizerError, FinalizerStep};
use reflector::events::{Event, Recorder, RecorderConfig};
use reflector::metrics::{Health, Metrics, MetricsServer, Registry};
use reflector::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

#[path = "operator/demo.rs"]
mod demo;

/// A widget: the operator keeps a ConfigMap `widget-<name>` holding its message.
#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    /// What the widget's ConfigMap says.
    message: String,
}

/// What every reconcile shares.
struct Ctx {
    client: kube::Client,
    finalizer: Finalizer,
    recorder: Recorder,
    config_maps: Lister<ConfigMap>,
}

/// The widget's ConfigMap as it should be, owned by the widget.
fn desired_config_map(widget: &Widget) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("widget-{}", widget.name_any())),
            namespace: widget.namespace(),
            owner_references: widget.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        data: Some([("message".into(), widget.spec.message.clone())].into()),
        ..ConfigMap::default()
    }
}

type Error = FinalizerError<kube::Error>;

async fn reconcile(req: Request<Widget>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let ns = req.key.namespace().unwrap_or_default().to_owned();
    let widgets = Api::<Widget>::namespaced(ctx.client.clone(), &ns);
    let config_maps = Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns);
    // The finalizer is added before the first apply and removed once cleanup succeeded.
    ctx.finalizer
        .reconcile(&widgets, req, |step| async {
            let (event, widget) = match step {
                FinalizerStep::Apply(widget) => {
                    let want = desired_config_map(&widget);
                    let name = want.name_any();
                    let cached = ctx.config_maps.get(Some(&ns), &name);
                    if cached.is_some_and(|cm| cm.data == want.data) {
                        return Ok(Action::done()); // nothing to change
                    }
                    let params = PatchParams::apply("widget-operator").force();
                    let patch = Patch::Apply(&want);
                    config_maps.patch(&name, &params, &patch).await?;
                    let note = format!("applied ConfigMap {name}");
                    (Event::normal("Applied", "Reconcile").note(note), widget)
                }
                FinalizerStep::Cleanup(widget) => {
                    // GC would delete it too; a finalizer is for what GC cannot reach.
                    let name = desired_config_map(&widget).name_any();
                    match config_maps.delete(&name, &DeleteParams::default()).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Action::done()),
                        Err(e) => return Err(e),
                    }
                    let note = format!("deleted ConfigMap {name}");
                    (Event::normal("CleanedUp", "Cleanup").note(note), widget)
                }
            };
            // Publishing never waits: the recorder writes from its own task.
            if let Err(e) = ctx.recorder.publish(widget.as_ref(), event) {
                eprintln!("event not recorded: {e}");
            }
            Ok(Action::done())
        })
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init(); // logs, reconcile errors too
    if std::env::args().any(|a| a == "--print-crd") {
        println!("{}", serde_json::to_string_pretty(&Widget::crd())?);
        return Ok(());
    }
    // With --cluster, the kubeconfig; without, the embedded server with the CRD installed.
    let mut demo = demo::Demo::start().await?;
    let client = demo.client();

    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let factory = InformerFactory::new(client.clone());
    let widgets = factory.reflected::<Widget>();
    let config_maps = factory.informer::<ConfigMap>();
    let config = LeaderElectionConfig::default().release_on_cancel(true);
    let leases = Api::<Lease>::default_namespaced(client.clone());
    let election = LeaderElection::new(leases, "widget-operator", config.metrics(&metrics))?;

    // /readyz: ready once both caches synced, as leader and as follower.
    let health = Health::new();
    health.informer("widgets", &widgets);
    health.informer("configmaps", &config_maps);
    health.leader_election(&election);
    let addr = std::env::var("METRICS_ADDR").unwrap_or_else(|_| "127.0.0.1:0".into());
    let server = MetricsServer::bind(addr.parse()?, Arc::new(registry))
        .await?
        .health(health);
    let addr = server.local_addr()?;
    println!("serving /metrics, /healthz and /readyz on http://{addr}");
    let stop_serving = CancellationToken::new();
    let serving = tokio::spawn(server.run(stop_serving.clone()));

    let recorder_config = RecorderConfig::default().metrics(&metrics);
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        finalizer: Finalizer::new("example.com/cleanup"),
        recorder: Recorder::with_config(client, "widget-operator", recorder_config)?,
        config_maps: config_maps.lister(),
    });
    Controller::new(widgets)
        .owns(config_maps)
        .name("widget")
        .metrics(&metrics)
        .leader_elected(election)
        .shutdown_on_signal()
        .graceful_shutdown_on(demo.story(addr)) // never resolves with --cluster
        .run(reconcile, ctx)
        .await?;
    stop_serving.cancel();
    serving.await??;
    demo.outcome().await
}
