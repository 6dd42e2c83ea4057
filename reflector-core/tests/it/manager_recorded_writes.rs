//! Writes through the request's handle (`req.api`, `req.recording`) are recorded for
//! read-your-writes with no `req.wrote`: a controller whose watch lags its own
//! writes reconciles each Pod in rounds, each round writes once through the handle
//! (a replace, a merge, JSON or server-side apply patch, a status patch, the create
//! or delete of an owned Secret, an owned custom object's `scale`, a `Finalizer`
//! step's write) and asks to be reconciled again long before
//! the watch delivers the write. No reconcile may see what it wrote older than its
//! last write; owned informers of `PartialObjectMeta<Secret>` and of `DynamicObject`
//! Secrets serve the check as a `Secret` informer does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use either::Either;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::core::PartialObjectMeta;
use kube::{Resource, ResourceExt};
use prometheus_client::registry::Registry;
use reflector_core::controller::{Action, Controller, Finalizer, FinalizerStep, Request};
use reflector_core::informer::{InformerFactory, SharedIndexInformer};
use reflector_core::listwatch::ApiListerWatcher;
use reflector_core::metrics::{Metrics, render_metrics};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const OBJECTS: usize = 3;
/// Rounds per Pod (each writes once).
const ROUNDS: usize = 5;
/// How long the watch of the written resource holds each event.
const WATCH_LAG: Duration = Duration::from_millis(40);
/// The retrigger: far shorter than the watch's lag.
const REQUEUE: Duration = Duration::from_millis(2);
/// How long a test waits for its rounds (about a second): less than the 10 s after
/// which a deferred key is requeued anyway, so deferred keys were woken by their
/// informer.
const GUARD: Duration = Duration::from_secs(9);
const FIELD_MANAGER: &str = "manager-test";
/// Keeps a deleted child in the cache, so that its delete is answered with it.
const HOLD: &str = "example.com/hold";
/// The group of `Gadget`s.
const GROUP: &str = "example.com";

/// What each round writes, through the request's handle.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Write {
    /// A replace of the Pod (its cached copy, annotated).
    Replace,
    /// A merge patch of the Pod.
    Patch,
    /// A JSON patch of the Pod.
    JsonPatch,
    /// A server-side apply of the Pod.
    Apply,
    /// A merge patch of the Pod's `status`.
    Status,
    /// The create of an owned Secret (one per round).
    CreateChild,
    /// The delete of an owned Secret with a finalizer (one per round, created
    /// through a plain `Api`, so not recorded): answered with the object.
    DeleteChild,
    /// A server-side apply of an owned Secret in a `Finalizer`'s apply step.
    FinalizerStep,
    /// A server-side apply of an owned Secret cached by a `PartialObjectMeta<Secret>`
    /// informer.
    MetadataChild,
    /// A server-side apply of an owned Secret cached by a `DynamicObject` informer.
    DynamicChild,
    /// A merge patch of the `scale` of an owned `Gadget` (one per round, created
    /// through a plain `Api`, so not recorded).
    Scale,
}

impl Write {
    fn of_child(self) -> bool {
        !matches!(
            self,
            Write::Replace | Write::Patch | Write::JsonPatch | Write::Apply | Write::Status
        )
    }
}

#[derive(Default)]
struct Seen {
    /// Per Pod, what its last round wrote (the Pod or a child's name) and at which
    /// resource version.
    written: HashMap<String, (String, u64)>,
    /// Per Pod, the rounds that saw it.
    rounds: HashMap<String, usize>,
    /// Reconciles that saw what they wrote older than their last write.
    stale: usize,
}

/// The owned informer's cache: a child's resource version by name.
type ChildVersion = Box<dyn Fn(&str) -> Option<u64> + Send + Sync>;

struct Ctx {
    write: Write,
    client: kube::Client,
    finalizer: Finalizer,
    child_version: ChildVersion,
    /// Guarded by its own mutex, held only to update or read it.
    seen: Mutex<Seen>,
    /// Told how many Pods finished their rounds.
    done: watch::Sender<usize>,
}

fn rv(meta: &kube::api::ObjectMeta) -> u64 {
    meta.resource_version.as_deref().unwrap().parse().unwrap()
}

async fn reconcile(req: Request<Pod>, ctx: Arc<Ctx>) -> Result<Action, anyhow::Error> {
    if req.object.is_none() {
        return Ok(Action::done());
    }
    if ctx.write != Write::FinalizerStep {
        return round(&req, &ctx).await;
    }
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), NS);
    // The step borrows the request, to write through its handle.
    let (request, context) = (&req, &ctx);
    let action = ctx
        .finalizer
        .reconcile(&pods, &req, |step| async move {
            match step {
                FinalizerStep::Apply(_) => round(request, context).await,
                FinalizerStep::Cleanup(_) => Ok(Action::done()),
            }
        })
        .await?;
    Ok(action)
}

/// One round: checks what the reconcile sees of its last write, then writes.
async fn round(req: &Request<Pod>, ctx: &Ctx) -> Result<Action, anyhow::Error> {
    let pod = req.object.as_deref().unwrap();
    let name = pod.name_any();
    let round = {
        let mut seen = ctx.seen.lock().unwrap();
        if let Some((what, written)) = seen.written.get(&name) {
            let cached = if ctx.write.of_child() {
                (ctx.child_version)(what).unwrap_or(0)
            } else {
                rv(&pod.metadata)
            };
            if cached < *written {
                seen.stale += 1;
            }
        }
        let round = seen.rounds.entry(name.clone()).or_default();
        *round += 1;
        *round
    };
    if round > ROUNDS {
        return Ok(Action::done());
    }
    let written = write(req, ctx, pod, round).await?;
    ctx.seen.lock().unwrap().written.insert(name, written);
    if round == ROUNDS {
        ctx.done.send_modify(|n| *n += 1);
        return Ok(Action::done());
    }
    Ok(Action::requeue_after(REQUEUE))
}

/// The owned Secret `name`, with `pod` as its controller owner.
fn child(pod: &Pod, name: &str, finalizers: Option<Vec<String>>) -> Secret {
    let mut secret = Secret::default();
    secret.metadata.name = Some(name.to_owned());
    secret.metadata.owner_references = pod.controller_owner_ref(&()).map(|o| vec![o]);
    secret.metadata.finalizers = finalizers;
    secret
}

/// Writes round `round` through the request's handle only; answers what was
/// written and its resource version.
async fn write(
    req: &Request<Pod>,
    ctx: &Ctx,
    pod: &Pod,
    round: usize,
) -> Result<(String, u64), kube::Error> {
    let name = pod.name_any();
    let mark = json!({ "round": round.to_string() });
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let pods = req.api::<Pod>(&ctx.client);
    let secrets = req.api::<Secret>(&ctx.client);
    let written = match ctx.write {
        Write::Replace => {
            let mut replaced = pod.clone();
            replaced
                .annotations_mut()
                .insert("round".into(), round.to_string());
            rv(&pods
                .replace(&name, &PostParams::default(), &replaced)
                .await?
                .metadata)
        }
        Write::JsonPatch => {
            let ops = json!([{ "op": "add", "path": "/metadata/annotations", "value": mark }]);
            let patch = Patch::<()>::Json(serde_json::from_value(ops).unwrap());
            rv(&pods
                .patch(&name, &PatchParams::default(), &patch)
                .await?
                .metadata)
        }
        Write::Patch => {
            let patch = json!({ "metadata": { "annotations": mark } });
            let params = PatchParams::default();
            rv(&pods
                .patch(&name, &params, &Patch::Merge(&patch))
                .await?
                .metadata)
        }
        Write::Apply => {
            let patch = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": { "name": name, "annotations": mark },
            });
            rv(&pods
                .patch(&name, &apply, &Patch::Apply(&patch))
                .await?
                .metadata)
        }
        Write::Status => {
            let patch = Patch::Merge(json!({ "status": { "message": format!("round {round}") } }));
            let params = PatchParams::default();
            rv(&pods.patch_status(&name, &params, &patch).await?.metadata)
        }
        Write::CreateChild => {
            let child_name = format!("{name}-{round}");
            let created = secrets
                .create(&PostParams::default(), &child(pod, &child_name, None))
                .await?;
            return Ok((child_name, rv(&created.metadata)));
        }
        Write::DeleteChild => {
            let child_name = format!("{name}-{round}");
            let held = child(pod, &child_name, Some(vec![HOLD.to_owned()]));
            // Created through a plain `Api`: not recorded.
            let plain = Api::<Secret>::namespaced(ctx.client.clone(), NS);
            plain.create(&PostParams::default(), &held).await?;
            let answer = secrets
                .delete(&child_name, &DeleteParams::default())
                .await?;
            let Either::Left(deleting) = answer else {
                panic!("the delete of a Secret with a finalizer was answered with a Status");
            };
            assert!(deleting.metadata.deletion_timestamp.is_some());
            return Ok((child_name, rv(&deleting.metadata)));
        }
        Write::Scale => {
            let child_name = format!("{name}-{round}");
            let mut gadget = DynamicObject::new(&child_name, &gadget_resource());
            gadget.metadata.owner_references = pod.controller_owner_ref(&()).map(|o| vec![o]);
            gadget.data = json!({ "spec": { "replicas": 1 } });
            // Created through a plain `Api`: not recorded.
            let plain = Api::namespaced_with(ctx.client.clone(), NS, &gadget_resource());
            plain.create(&PostParams::default(), &gadget).await?;
            let scale = Patch::Merge(json!({ "spec": { "replicas": 2 } }));
            let gadgets = req.recording(plain);
            let scaled = gadgets
                .patch_scale(&child_name, &PatchParams::default(), &scale)
                .await?;
            return Ok((child_name, rv(&scaled.metadata)));
        }
        Write::FinalizerStep | Write::MetadataChild | Write::DynamicChild => {
            let mut secret = child(pod, &name, None);
            secret.metadata.annotations = Some([("round".into(), round.to_string())].into());
            let mut patch = serde_json::to_value(&secret).unwrap();
            patch["apiVersion"] = json!("v1");
            patch["kind"] = json!("Secret");
            let applied = secrets.patch(&name, &apply, &Patch::Apply(&patch)).await?;
            return Ok((name, rv(&applied.metadata)));
        }
    };
    Ok((name, written))
}

/// `Gadget`s, a custom resource with a `scale` subresource.
fn gadget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1", "Gadget"), "gadgets")
}

/// Serves `Gadget`s.
async fn create_gadget_crd(client: &kube::Client) {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("gadgets.{GROUP}") },
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": { "scale": {
                    "specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas",
                } },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": { "type": "object", "properties": { "replicas": { "type": "integer" } } },
                        "status": { "type": "object", "properties": { "replicas": { "type": "integer" } } },
                    },
                } },
            }],
        },
    });
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(crd).unwrap(),
    )
    .await
    .unwrap();
}

/// The owned informer of Secrets `write` reads, and how to read a child's version
/// from it: typed, metadata-only or dynamic.
fn owned_informer<C: reflector_core::object::Object>(
    informer: SharedIndexInformer<C>,
) -> (SharedIndexInformer<C>, ChildVersion) {
    let lister = informer.lister();
    let version: ChildVersion = Box::new(move |name| {
        (lister.get(Some(NS), name)).map(|c| {
            c.meta()
                .resource_version
                .as_deref()
                .unwrap()
                .parse()
                .unwrap()
        })
    });
    (informer, version)
}

/// Runs a controller of `OBJECTS` Pods (owning Secrets) that writes `write` in
/// every round behind a lagging watch of the written resource, until each Pod did
/// its rounds; answers the stale reconciles and `stale_sync_skips_total`.
async fn run_rounds(write: Write) -> (usize, f64) {
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    let pods = Api::<Pod>::namespaced(client.clone(), NS);
    for i in 0..OBJECTS {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": { "name": format!("pod-{i}") },
            "spec": { "containers": [{ "name": "c", "image": "busybox" }] },
        });
        pods.create(
            &PostParams::default(),
            &serde_json::from_value(pod).unwrap(),
        )
        .await
        .unwrap();
    }
    let lagging = match write {
        Write::Scale => "gadgets",
        _ if write.of_child() => "secrets",
        _ => "pods",
    };
    let lag = Matcher::verb(Verb::Watch).resource(lagging).every();
    server.inject(lag, Fault::LatencyBetweenEvents(WATCH_LAG));
    let factory = InformerFactory::new(client.clone());
    let (done, mut finished) = watch::channel(0);
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let controller = Controller::new(factory.informer::<Pod>());
    let (controller, child_version) = match write {
        Write::MetadataChild => {
            let (informer, version) =
                owned_informer(factory.informer::<PartialObjectMeta<Secret>>());
            (controller.owns(informer), version)
        }
        Write::DynamicChild | Write::Scale => {
            let resource = if write == Write::Scale {
                create_gadget_crd(&client).await;
                gadget_resource()
            } else {
                ApiResource::erase::<Secret>(&())
            };
            let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
            let informer = SharedIndexInformer::new(ApiListerWatcher::new_with(api, &resource));
            let (informer, version) = owned_informer(informer);
            (controller.owns(informer), version)
        }
        _ => {
            let (informer, version) = owned_informer(factory.informer::<Secret>());
            (controller.owns(informer), version)
        }
    };
    let ctx = Arc::new(Ctx {
        write,
        client,
        finalizer: Finalizer::new("example.com/cleanup"),
        child_version,
        seen: Mutex::new(Seen::default()),
        done,
    });
    let stop = CancellationToken::new();
    let run = tokio::spawn(
        controller
            .name("recorded-writes")
            .concurrency(2)
            .metrics(&metrics)
            .graceful_shutdown_on(stop.clone().cancelled_owned())
            .run(reconcile, Arc::clone(&ctx)),
    );
    tokio::time::timeout(GUARD, finished.wait_for(|n| *n == OBJECTS))
        .await
        .unwrap_or_else(|_| {
            panic!("{write:?}: every Pod did its rounds before the fallback requeue")
        })
        .unwrap();
    stop.cancel();
    run.await.unwrap().unwrap();
    let skips = render_metrics(&registry)
        .lines()
        .find_map(|l| l.strip_prefix("stale_sync_skips_total{controller=\"recorded-writes\"} "))
        .expect("no stale_sync_skips_total series")
        .parse()
        .unwrap();
    let stale = ctx.seen.lock().unwrap().stale;
    (stale, skips)
}

/// Asserts that no reconcile saw its write older than written, and that some were
/// deferred (the watch did lag behind the writes).
async fn assert_waited_for(write: Write) {
    let (stale, skips) = run_rounds(write).await;
    assert_eq!(
        stale, 0,
        "{write:?}: reconciles saw what they wrote older than their last write"
    );
    assert!(
        skips > 0.0,
        "{write:?}: no reconcile was deferred: the test did not lag"
    );
}

/// A replace through `req.api` defers the next reconcile until the primary's cache
/// has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_replace_is_waited_for() {
    assert_waited_for(Write::Replace).await;
}

/// A merge patch through `req.api` defers the next reconcile until the primary's
/// cache has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_patch_is_waited_for() {
    assert_waited_for(Write::Patch).await;
}

/// A JSON patch through `req.api` likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_json_patch_is_waited_for() {
    assert_waited_for(Write::JsonPatch).await;
}

/// A server-side apply through `req.api` likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_server_side_apply_is_waited_for() {
    assert_waited_for(Write::Apply).await;
}

/// A `status` patch through `req.api` likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_status_patch_is_waited_for() {
    assert_waited_for(Write::Status).await;
}

/// The create of an owned child through `req.api` defers the next reconcile until
/// the owned informer has the child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_child_create_is_waited_for() {
    assert_waited_for(Write::CreateChild).await;
}

/// A delete answered with the object (a child with a finalizer, now being deleted)
/// defers the next reconcile until the owned informer has the child's deletion
/// started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_child_delete_is_waited_for() {
    assert_waited_for(Write::DeleteChild).await;
}

/// A `scale` patch of an owned custom object through `req.recording` defers the
/// next reconcile until the owned (`DynamicObject`) informer has the object at the
/// `Scale`'s resource version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_scale_patch_is_waited_for() {
    assert_waited_for(Write::Scale).await;
}

/// A write in a `Finalizer`'s apply step, through the request the step borrows, is
/// recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_finalizer_step_write_is_waited_for() {
    assert_waited_for(Write::FinalizerStep).await;
}

/// A Secret written through a typed `Api` is waited for in an owned
/// `PartialObjectMeta<Secret>` informer: records are keyed by resource, not by
/// Rust type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_write_waits_for_a_metadata_informer() {
    assert_waited_for(Write::MetadataChild).await;
}

/// The same for an owned informer of `DynamicObject` Secrets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_recorded_write_waits_for_a_dynamic_informer() {
    assert_waited_for(Write::DynamicChild).await;
}
