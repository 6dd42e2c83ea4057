//! `Finalizer` on the embedded API server: the finalizer is added before the first
//! apply, cleanup runs once per deletion (even when its removal or the cleanup
//! itself fails and is retried), the finalizer is never added back to an object being
//! deleted, and an object deleted while the controller was down is cleaned up when
//! it comes back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use reflector_core::controller::{
    Action, Controller, ControllerError, Finalizer, FinalizerError, FinalizerStep, Request,
};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use tokio_util::sync::CancellationToken;

use crate::support::namespaces::create_namespaces;
use crate::support::patience::{PATIENCE, POLL};

const NAME: &str = "example.com/cleanup";
const NS: &str = "fin";

#[derive(Debug, thiserror::Error)]
#[error("cleanup not possible yet")]
struct NotYet;

struct Ctx {
    client: kube::Client,
    finalizer: Finalizer,
    applies: AtomicUsize,
    cleanups: AtomicUsize,
    /// The resourceVersion of the last object a reconcile was handed. Guarded by this
    /// mutex; never held across an await.
    reconciled: Mutex<Option<String>>,
    /// Cleanup attempts that fail on purpose before one succeeds.
    failing_cleanups: AtomicUsize,
}

impl Ctx {
    fn new(client: kube::Client, failing_cleanups: usize) -> Arc<Self> {
        Arc::new(Ctx {
            client,
            finalizer: Finalizer::new(NAME),
            applies: AtomicUsize::new(0),
            cleanups: AtomicUsize::new(0),
            reconciled: Mutex::new(None),
            failing_cleanups: AtomicUsize::new(failing_cleanups),
        })
    }
}

async fn reconcile(
    req: Request<ConfigMap>,
    ctx: Arc<Ctx>,
) -> Result<Action, FinalizerError<NotYet>> {
    if let Some(object) = &req.object {
        *ctx.reconciled.lock().unwrap() = object.metadata.resource_version.clone();
    }
    let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), NS);
    ctx.finalizer
        .reconcile(&api, &req, |event| async {
            match event {
                FinalizerStep::Apply(cm) => {
                    assert!(
                        cm.metadata.finalizers.iter().flatten().any(|f| f == NAME),
                        "applied before the finalizer was added"
                    );
                    ctx.applies.fetch_add(1, Ordering::SeqCst);
                }
                FinalizerStep::Cleanup(_) => {
                    let left = ctx.failing_cleanups.load(Ordering::SeqCst);
                    if left > 0 {
                        ctx.failing_cleanups.store(left - 1, Ordering::SeqCst);
                        return Err(NotYet);
                    }
                    ctx.cleanups.fetch_add(1, Ordering::SeqCst);
                }
            }
            Ok(Action::done())
        })
        .await
}

/// The controller over the `NS` ConfigMaps, running on its own task until
/// [`Running::stop`].
struct Running {
    stop: CancellationToken,
    run: tokio::task::JoinHandle<Result<(), ControllerError>>,
}

impl Running {
    /// Starts the controller with `ctx`.
    fn start(server: &ApiServer, ctx: &Arc<Ctx>) -> Self {
        let stop = CancellationToken::new();
        let api = Api::<ConfigMap>::namespaced(server.client(), NS);
        let run = tokio::spawn(
            Controller::for_api(api)
                .graceful_shutdown_on(stop.clone().cancelled_owned())
                .run(reconcile, Arc::clone(ctx)),
        );
        Running { stop, run }
    }

    /// Shuts the controller down; it must return `Ok`.
    async fn stop(self) {
        self.stop.cancel();
        self.run.await.unwrap().unwrap();
    }
}

/// A server holding `obj` in `NS`, and the `NS` ConfigMaps.
async fn serve(obj: &ConfigMap) -> (ApiServer, Api<ConfigMap>) {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let api = Api::<ConfigMap>::namespaced(server.client(), NS);
    api.create(&PostParams::default(), obj).await.unwrap();
    (server, api)
}

/// Starts the controller (its first `failing_cleanups` cleanups fail) and waits
/// for its first apply.
async fn applied(server: &ApiServer, failing_cleanups: usize) -> (Arc<Ctx>, Running) {
    let ctx = Ctx::new(server.client(), failing_cleanups);
    let running = Running::start(server, &ctx);
    eventually("applied", || ctx.applies.load(Ordering::SeqCst) >= 1).await;
    (ctx, running)
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    tokio::time::timeout(PATIENCE, async {
        while !cond() {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not reached: {what}"));
}

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.data = Some([("k".to_owned(), "v".to_owned())].into());
    c
}

fn stored(server: &ApiServer, name: &str) -> Option<ConfigMap> {
    server.get::<ConfigMap>(Some(NS), name).unwrap()
}

fn finalizers(c: &ConfigMap) -> Vec<String> {
    c.metadata.finalizers.clone().unwrap_or_default()
}

/// The finalizer is added before the first apply; a deletion runs the cleanup
/// once, even when the first removal of the finalizer fails (500) and is retried;
/// then the object is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_runs_once_per_deletion_even_when_the_removal_is_retried() {
    let (server, api) = serve(&cm("a")).await;
    let (ctx, running) = applied(&server, 0).await;
    assert_eq!(finalizers(&stored(&server, "a").unwrap()), [NAME]);

    // The next PATCH (the finalizer's removal) fails once.
    let fault = server.inject(Matcher::verb(Verb::Patch).times(1), Fault::InternalError);
    api.delete("a", &DeleteParams::default()).await.unwrap();
    eventually("object gone", || stored(&server, "a").is_none()).await;
    assert_eq!(server.fault_hits(fault), 1, "the removal was not retried");
    assert_eq!(ctx.cleanups.load(Ordering::SeqCst), 1, "cleanup ran twice");
    running.stop().await;
}

/// A cleanup that fails is retried (the finalizer stays meanwhile); the one that
/// succeeds removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_cleanup_is_retried_and_keeps_the_finalizer() {
    let (server, api) = serve(&cm("b")).await;
    let (ctx, running) = applied(&server, 2).await;
    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually("object gone", || stored(&server, "b").is_none()).await;
    assert_eq!(ctx.failing_cleanups.load(Ordering::SeqCst), 0, "no retry");
    assert_eq!(ctx.cleanups.load(Ordering::SeqCst), 1);
    running.stop().await;
}

/// An object being deleted never gets the finalizer back: with another finalizer
/// holding it, ours is removed after cleanup and stays removed through further
/// changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_is_never_added_back_during_deletion() {
    let mut held = cm("c");
    held.metadata.finalizers = Some(vec!["other.example.com/keep".into()]);
    let (server, api) = serve(&held).await;
    let (ctx, running) = applied(&server, 0).await;
    api.delete("c", &DeleteParams::default()).await.unwrap();
    eventually("our finalizer removed", || {
        stored(&server, "c").is_some_and(|c| finalizers(&c) == ["other.example.com/keep"])
    })
    .await;
    // More changes to the object being deleted: reconciled, never re-finalized.
    let mut last = None;
    for i in 0..3 {
        let patch = serde_json::json!({ "metadata": { "labels": { "touch": i.to_string() } } });
        let patched = api
            .patch("c", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        last = patched.metadata.resource_version;
    }
    // Woken once the controller has reconciled the last change.
    eventually("the last change reconciled", || {
        *ctx.reconciled.lock().unwrap() == last
    })
    .await;
    let c = stored(&server, "c").unwrap();
    assert!(c.metadata.deletion_timestamp.is_some());
    assert_eq!(finalizers(&c), ["other.example.com/keep"]);
    assert_eq!(ctx.cleanups.load(Ordering::SeqCst), 1);
    running.stop().await;
}

/// An object deleted while the controller is down waits on its finalizer; the
/// controller cleans it up when it comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_deleted_while_down_is_cleaned_up_on_return() {
    let (server, api) = serve(&cm("d")).await;
    let first = Ctx::new(server.client(), 0);
    let running = Running::start(&server, &first);
    eventually("finalizer added", || {
        stored(&server, "d").is_some_and(|c| finalizers(&c) == [NAME])
    })
    .await;
    running.stop().await;

    // Nothing runs against the object now: the DELETE's answer is its state.
    api.delete("d", &DeleteParams::default()).await.unwrap();
    assert!(
        stored(&server, "d").is_some_and(|c| c.metadata.deletion_timestamp.is_some()),
        "the finalizer did not hold the object"
    );
    let second = Ctx::new(server.client(), 0);
    let running = Running::start(&server, &second);
    eventually("object gone", || stored(&server, "d").is_none()).await;
    assert_eq!(second.cleanups.load(Ordering::SeqCst), 1);
    assert_eq!(first.cleanups.load(Ordering::SeqCst), 0);
    running.stop().await;
}
