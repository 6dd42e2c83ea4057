//! A Widget controller: `#[derive(Reflect)]` on a CRD, a shared informer with typed
//! indexes, and a controller that owns ConfigMaps, writes status, cleans up
//! through a finalizer and records Events (`kubectl describe`'s Events section).
//!
//! For each Widget the controller keeps a ConfigMap `widget-<name>` (owned by the
//! widget) holding its owner, size and *peers* — the other widgets of the same owner,
//! found with the typed index query `by_owner`. The same query maps a change of one
//! widget to every widget of its owner (`Controller::watches`), so peers stay
//! current. It writes `status.observedGeneration` and `status.ready`, and on delete
//! removes the ConfigMap and then its finalizer. Each write is recorded as a Normal
//! Event on the widget, each failed reconcile as a Warning (the demo makes one
//! ConfigMap create fail once); the demo prints the Events from the server at the end,
//! and one widget's as `kubectl events --for widget/anvil` would (field selector
//! `regarding.name=anvil`).
//!
//! By default it starts the embedded API server, creates a handful of widgets,
//! updates and deletes some, prints what happens and a summary, and exits 0 once the
//! expected end state is reached (non-zero with a message if not). With `--cluster`
//! it uses the current kubeconfig (install the CRD first: `--print-crd` prints it)
//! and runs until Ctrl+C. Everything but `mod demo` is the controller; the demo driver
//! is `examples/widget_controller/demo.rs`.
//!
//! ```sh
//! cargo run --example widget_controller
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use reflector::Reflect;
use reflector::controller::{Finalizer, FinalizerError, FinalizerStep};
use reflector::events::{Event, Recorder, RecorderConfig};
use reflector::metrics::{Metrics, Registry};
use reflector::prelude::*;
use reflector::store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

/// A widget: the spec of the `Widget` custom resource.
#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
#[reflect(index(name = "by_app", label = "app"))]
pub struct WidgetSpec {
    /// Who owns the widget → `by_owner`.
    #[reflect(index)]
    owner: String,
    /// Free-form tags → `by_tags`, one index value per tag.
    #[reflect(index)]
    tags: Vec<String>,
    /// An optional parent widget → `by_parent`.
    #[reflect(index)]
    parent: Option<String>,
    /// How big it is.
    size: u32,
}

/// What the controller reports back.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    observed_generation: Option<i64>,
    ready: bool,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("API request failed")]
    Kube(#[from] kube::Error),
    #[error("index query failed")]
    Index(#[from] StoreError),
}

struct Ctx {
    client: kube::Client,
    finalizer: Finalizer,
    recorder: Recorder,
    widgets: SharedIndexInformer<Widget>,
    config_maps: Lister<ConfigMap>,
    reconciles: AtomicUsize,
    errors: AtomicUsize,
}

/// Records a Normal event about `widget`. Publishing never waits; an event the
/// recorder refuses (it cannot be invalid here) is only logged.
fn record(ctx: &Ctx, widget: &Widget, reason: &str, note: String) {
    let event = Event::normal(reason, "Reconcile").note(note);
    if let Err(e) = ctx.recorder.publish(widget, event) {
        println!("  cannot record {reason}: {e}");
    }
}

/// A short note for a failed reconcile: the step that failed and, for an API error,
/// the server's message (an Event's note holds at most 1 kB).
fn failure_note(e: &FinalizerError<Error>) -> String {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = match e {
        // The reconcile's own error is the step's payload, not its `source`.
        FinalizerError::ApplyFailed(inner) | FinalizerError::CleanupFailed(inner) => Some(inner),
        other => std::error::Error::source(other),
    };
    while let Some(c) = cause {
        if let Some(kube::Error::Api(status)) = c.downcast_ref::<kube::Error>() {
            return format!("{e}: {}", status.message);
        }
        cause = c.source();
    }
    e.to_string()
}

fn config_map_name(widget: &str) -> String {
    format!("widget-{widget}")
}

/// The other widgets of `owner`, from the typed index.
fn peers(
    widgets: &SharedIndexInformer<Widget>,
    owner: &str,
    me: &str,
) -> Result<String, StoreError> {
    let mut names: Vec<String> = widgets
        .by_owner(owner)?
        .iter()
        .map(|w| w.name_any())
        .filter(|n| n != me)
        .collect();
    names.sort();
    Ok(names.join(","))
}

fn desired_data(w: &Widget, peers: String) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("owner".to_owned(), w.spec.owner.clone()),
        ("size".to_owned(), w.spec.size.to_string()),
        ("peers".to_owned(), peers),
    ])
}

async fn reconcile(req: Request<Widget>, ctx: Arc<Ctx>) -> Result<Action, FinalizerError<Error>> {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    let key = req.key.clone();
    let ns = key.namespace().unwrap_or_default().to_owned();
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    // The finalizer helper adds the finalizer before the first apply and removes it
    // once `cleanup` succeeded.
    ctx.finalizer
        .reconcile(&widgets, req, |event| async {
            match event {
                FinalizerStep::Apply(widget) => apply(&key, &widget, &ctx).await,
                FinalizerStep::Cleanup(widget) => cleanup(&key, &widget, &ctx).await,
            }
        })
        .await
}

/// Removes what the widget owns outside garbage collection: its ConfigMap.
async fn cleanup(key: &ObjectRef<Widget>, widget: &Widget, ctx: &Ctx) -> Result<Action, Error> {
    let ns = widget.namespace().unwrap_or_default();
    let cm_name = config_map_name(&widget.name_any());
    // The cache may lag behind our own writes: an object already gone (404) means
    // the work was done.
    if ctx.config_maps.get(Some(&ns), &cm_name).is_some() {
        let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
        ignore_not_found(
            cms.delete(&cm_name, &DeleteParams::default())
                .await
                .map(drop),
        )?;
        println!("  {key}: deleting, removed ConfigMap {cm_name}");
        record(
            ctx,
            widget,
            "Cleanup",
            format!("deleted ConfigMap {cm_name}"),
        );
    }
    Ok(Action::done())
}

/// Keeps the widget's ConfigMap and status in line with its spec.
async fn apply(key: &ObjectRef<Widget>, widget: &Widget, ctx: &Ctx) -> Result<Action, Error> {
    let name = widget.name_any();
    let ns = widget.namespace().unwrap_or_default();
    let widgets: Api<Widget> = Api::namespaced(ctx.client.clone(), &ns);
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    let cm_name = config_map_name(&name);
    let data = desired_data(widget, peers(&ctx.widgets, &widget.spec.owner, &name)?);
    match ctx.config_maps.get(Some(&ns), &cm_name) {
        None => {
            let owner_ref = OwnerReference {
                api_version: Widget::api_version(&()).into_owned(),
                kind: Widget::kind(&()).into_owned(),
                name: name.clone(),
                uid: widget.uid().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            };
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(cm_name.clone()),
                    namespace: Some(ns.clone()),
                    owner_references: Some(vec![owner_ref]),
                    ..ObjectMeta::default()
                },
                data: Some(data),
                ..ConfigMap::default()
            };
            cms.create(&PostParams::default(), &cm).await?;
            println!("  {key}: created ConfigMap {cm_name}");
            record(
                ctx,
                widget,
                "Created",
                format!("created ConfigMap {cm_name}"),
            );
        }
        Some(cm) if cm.data.as_ref() != Some(&data) => {
            let patch = serde_json::json!({ "data": data });
            cms.patch(&cm_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            println!("  {key}: updated ConfigMap {cm_name} {data:?}");
            record(
                ctx,
                widget,
                "Updated",
                format!("updated ConfigMap {cm_name}"),
            );
        }
        Some(_) => {}
    }

    let status = WidgetStatus {
        observed_generation: widget.meta().generation,
        ready: true,
    };
    if widget.status.as_ref() != Some(&status) {
        let patch = serde_json::json!({ "status": status });
        widgets
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        let generation = status.observed_generation.unwrap_or_default();
        println!("  {key}: ready, observedGeneration {generation}");
        record(
            ctx,
            widget,
            "Ready",
            format!("ready at generation {generation}"),
        );
    }
    Ok(Action::done())
}

/// `Ok(true)` on success, `Ok(false)` when the object was already gone.
fn ignore_not_found(r: Result<(), kube::Error>) -> Result<bool, Error> {
    match r {
        Ok(()) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[path = "widget_controller/demo.rs"]
mod demo;

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

    // One shared informer per type; the Widget one carries every declared index.
    // The controller starts them and stops them when it returns.
    let factory = InformerFactory::new(client.clone());
    let widgets = factory.reflected::<Widget>();
    let config_maps = factory.informer::<ConfigMap>();
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    // Events are written by the recorder's own task; its drop counter is registered
    // with the other metrics.
    let recorder = Recorder::with_config(
        client.clone(),
        "widget-controller",
        RecorderConfig::default().metrics(&metrics),
    )?;
    let ctx = Arc::new(Ctx {
        client,
        finalizer: Finalizer::new("example.com/cleanup"),
        recorder,
        widgets: widgets.clone(),
        config_maps: config_maps.lister(),
        reconciles: AtomicUsize::new(0),
        errors: AtomicUsize::new(0),
    });
    let peers_of = widgets.clone();
    Controller::new(widgets.clone())
        .owns(config_maps)
        // A widget's change concerns every widget of the same owner (their peers).
        .watches(widgets.clone(), move |w: &Widget| {
            let peers = peers_of.by_owner_keys(&w.spec.owner).unwrap_or_else(|e| {
                println!("  cannot map the peers of {}: {e}", w.name_any());
                Vec::new()
            });
            peers.into_iter().chain(ObjectRef::from_obj(w).ok())
        })
        .error_policy(error_policy)
        .concurrency(2)
        .name("widget")
        .metrics(&metrics)
        .shutdown_on_signal()
        .graceful_shutdown_on(demo.story()) // never resolves with --cluster
        .run(reconcile, ctx.clone())
        .await?;
    // Wait for the recorder's writes before the demo reads the Events back.
    ctx.recorder.flush().await?;
    let reconciles = ctx.reconciles.load(Ordering::Relaxed);
    demo.finish(
        &widgets,
        &registry,
        reconciles,
        ctx.errors.load(Ordering::Relaxed),
    )
    .await
}

/// A failed reconcile: counted, recorded as a Warning Event on the widget the
/// reconcile saw (a deleted one has none to report on), retried with backoff.
fn error_policy(req: &Request<Widget>, e: &FinalizerError<Error>, ctx: Arc<Ctx>) -> Action {
    ctx.errors.fetch_add(1, Ordering::Relaxed);
    let message = match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    };
    println!("  {}: {message}; retrying with backoff", req.key);
    if let Some(widget) = &req.object {
        let warning = Event::warning("ReconcileFailed", "Reconcile").note(failure_note(e));
        if let Err(e) = ctx.recorder.publish(widget.as_ref(), warning) {
            println!("  cannot record ReconcileFailed: {e}");
        }
    }
    Action::requeue_rate_limited()
}
