//! A complete operator, two controllers under one `Manager` (one Lease, one informer per
//! kind, one `/metrics` server): `WidgetSet`s keep `Widget`s, each `Widget` a ConfigMap behind
//! a finalizer, with Events; every write through `req.api`. `mod demo` checks it on the embedded
//! server; `-- --cluster` uses your kubeconfig; `-- --print-manifests`: see `docs/cluster.md`.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use reflector::controller::{Finalizer, FinalizerStep};
use reflector::events::{Event, Recorder};
use reflector::manager::DeployOptions;
use reflector::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[path = "operator/demo.rs"]
pub mod demo;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// A set of `replicas` widgets named `<set>-<i>`, all saying `message`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "WidgetSet", namespaced)]
#[kube(status = "WidgetSetStatus")]
pub struct WidgetSetSpec {
    replicas: u32,
    message: String,
}

/// How many widgets the set keeps.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetSetStatus {
    widgets: u32,
}

/// A widget: the operator keeps a ConfigMap `widget-<name>` holding its message.
#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[reflect(index(name = "by_set", label = "example.com/set"))]
pub struct WidgetSpec {
    message: String,
}

struct Ctx {
    client: kube::Client,
    finalizer: Finalizer,
    recorder: Recorder,
    widgets: Lister<Widget>,
}

/// The operator: both controllers under one manager (the Widget informer is shared).
pub fn operator(client: kube::Client) -> Result<Manager, Error> {
    let config = LeaderElectionConfig::default().release_on_cancel(true);
    let mut manager = Manager::new(client.clone()).leader_election("widget-operator", config)?;
    let (sets, widgets) = (manager.factory().informer(), manager.factory().reflected());
    let config_maps = manager.factory().informer::<ConfigMap>();
    let ctx = Arc::new(Ctx {
        client,
        finalizer: Finalizer::new("example.com/cleanup"),
        recorder: manager.recorder("widget-operator")?,
        widgets: widgets.lister(),
    });
    let by_spec = EventFilter::generation_changed(); // its own status writes: not again
    let set_controller = Controller::new(sets).filter(by_spec).owns(widgets.clone());
    manager.add(set_controller, reconcile_set, Arc::clone(&ctx));
    let widget_controller = Controller::new(widgets).owns(config_maps);
    manager.add(widget_controller, reconcile_widget, ctx);
    Ok(manager)
}

/// Applies the set's widgets, deletes those beyond `replicas`, and records their count.
async fn reconcile_set(req: Request<WidgetSet>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let Some(set) = req.object.as_deref() else {
        return Ok(Action::done());
    };
    let (ns, name) = (set.namespace().unwrap_or_default(), set.name_any());
    let replicas = set.spec.replicas;
    let widgets = req.api::<Widget>(&ctx.client);
    let want: Vec<String> = (0..replicas).map(|i| format!("{name}-{i}")).collect();
    for widget_name in &want {
        let cached = ctx.widgets.get(Some(&ns), widget_name);
        if cached.is_none_or(|w| w.spec.message != set.spec.message) {
            let message = set.spec.message.clone();
            let mut widget = Widget::new(widget_name, WidgetSpec { message });
            widget.metadata.labels = Some([("example.com/set".into(), name.clone())].into());
            widget.metadata.owner_references = set.controller_owner_ref(&()).map(|o| vec![o]);
            let (apply, patch) = (PatchParams::apply("widget-operator"), Patch::Apply(&widget));
            widgets.patch(widget_name, &apply.force(), &patch).await?;
        }
    }
    for extra in ctx.widgets.by_set(&name)? {
        let gone = extra.name_any();
        if extra.namespace() == Some(ns.clone()) && !want.contains(&gone) {
            widgets.delete(&gone, &DeleteParams::default()).await?;
        }
    }
    if set.status.as_ref().map(|s| s.widgets) != Some(replicas) {
        let status = Patch::Merge(serde_json::json!({ "status": { "widgets": replicas } }));
        let sets = req.api::<WidgetSet>(&ctx.client);
        let params = PatchParams::default();
        sets.patch_status(&name, &params, &status).await?;
    }
    Ok(Action::done())
}

/// Applies the widget's ConfigMap; deletes it behind the finalizer; records Events.
async fn reconcile_widget(req: Request<Widget>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let ns = req.key.namespace().unwrap_or_default();
    let widgets = Api::<Widget>::namespaced(ctx.client.clone(), ns);
    let config_maps = req.api::<ConfigMap>(&ctx.client);
    let apply_or_clean_up = |step: FinalizerStep<Widget>| async {
        let (event, widget) = match step {
            FinalizerStep::Apply(widget) => {
                let name = format!("widget-{}", widget.name_any());
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(name.clone());
                cm.metadata.owner_references = widget.controller_owner_ref(&()).map(|o| vec![o]);
                cm.data = Some([("message".into(), widget.spec.message.clone())].into());
                let apply = PatchParams::apply("widget-operator").force();
                config_maps.patch(&name, &apply, &Patch::Apply(&cm)).await?;
                let note = format!("applied {name}");
                (Event::normal("Applied", "Reconcile").note(note), widget)
            }
            FinalizerStep::Cleanup(widget) => {
                let name = format!("widget-{}", widget.name_any());
                match config_maps.delete(&name, &DeleteParams::default()).await {
                    Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Action::done()),
                    deleted => deleted?,
                };
                let note = format!("deleted {name}");
                (Event::normal("CleanedUp", "Cleanup").note(note), widget)
            }
        };
        if let Err(e) = ctx.recorder.publish(widget.as_ref(), event) {
            eprintln!("event not recorded: {e}");
        }
        Ok::<_, kube::Error>(Action::done())
    };
    // The finalizer is added before the first apply and removed once cleanup succeeded.
    let done = ctx.finalizer.reconcile(&widgets, &req, apply_or_clean_up);
    Ok(done.await?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init(); // logs, reconcile errors too
    if std::env::args().any(|a| a == "--print-manifests") {
        let image = DeployOptions::new("widget-operator", "widget-operator:latest");
        let options = image.args(["--cluster"]).replicas(2);
        let manifests = operator(demo::offline_client()?)?.manifests(&options);
        return demo::print_yaml([WidgetSet::crd(), Widget::crd()], manifests);
    }
    // With --cluster: the kubeconfig, /metrics on 0.0.0.0:8080; else the embedded server.
    let mut demo = demo::Demo::start().await?;
    let manager = operator(demo.client())?.metrics_server(demo.metrics_addr())?;
    let addr = manager.metrics_addr().ok_or("no metrics address")?;
    manager.graceful_shutdown_on(demo.story(addr)).run().await?; // SIGTERM, or the story's end
    demo.outcome().await
}
