//! `Finalizer` while the cache lags the controller's own writes: many objects are
//! deleted while their keys are requeued, and each deletion's cleanup must run once,
//! with no fault injected and with 409s and 500s on the finalizer's patches and
//! dropped watches.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use reflector_core::controller::{
    Action, Controller, Finalizer, FinalizerError, FinalizerStep, Request,
};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::support::patience::PATIENCE;

const FINALIZER: &str = "example.com/cleanup";
const NS: &str = "stale-fin";
const OBJECTS: usize = 150;
/// What every reconcile asks for: the keys are requeued all along.
const REQUEUE: Duration = Duration::from_millis(3);

#[derive(Default)]
struct Seen {
    /// Names applied at least once.
    applied: HashSet<String>,
    /// Cleanups per uid.
    cleanups: HashMap<String, usize>,
    /// Names reconciled with no object (gone from the cache).
    gone: HashSet<String>,
}

struct Ctx {
    client: kube::Client,
    finalizer: Finalizer,
    /// Guarded by its own mutex, held only to update or read it.
    seen: Mutex<Seen>,
    /// Told (applied, gone) counts after every change.
    progress: watch::Sender<(usize, usize)>,
}

impl Ctx {
    fn update(&self, change: impl FnOnce(&mut Seen)) {
        let counts = {
            let mut seen = self.seen.lock().unwrap();
            change(&mut seen);
            (seen.applied.len(), seen.gone.len())
        };
        self.progress.send_replace(counts);
    }
}

async fn reconcile(
    req: Request<ConfigMap>,
    ctx: Arc<Ctx>,
) -> Result<Action, FinalizerError<Infallible>> {
    if req.object.is_none() {
        let name = req.key.name().to_owned();
        ctx.update(|s| {
            s.gone.insert(name);
        });
        return Ok(Action::done());
    }
    let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), NS);
    ctx.finalizer
        .reconcile(&api, &req, |step| async {
            match step {
                FinalizerStep::Apply(cm) => ctx.update(|s| {
                    s.applied.insert(cm.name_any());
                }),
                FinalizerStep::Cleanup(cm) => {
                    let uid = cm.uid().unwrap();
                    ctx.update(|s| *s.cleanups.entry(uid).or_default() += 1);
                }
            }
            Ok(Action::requeue_after(REQUEUE))
        })
        .await
}

/// Which faults hit the deletions.
#[derive(Clone, Copy)]
enum Faults {
    None,
    /// 409s and 500s on the finalizer's patches, and every watch dropped now and
    /// then while the objects are deleted.
    PatchErrorsAndWatchDrops,
}

/// Creates `OBJECTS` ConfigMaps, runs a finalizing controller that requeues every
/// key all along, deletes every object once each was applied, and returns the
/// cleanups per uid once every object is gone from the controller's cache.
async fn delete_all_while_requeued(
    faults: Faults,
    read_your_writes: bool,
) -> HashMap<String, usize> {
    let server = ApiServer::start().await.unwrap();
    let mut ns = Namespace::default();
    ns.metadata.name = Some(NS.to_owned());
    Api::<Namespace>::all(server.client())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let api = Api::<ConfigMap>::namespaced(server.client(), NS);
    for i in 0..OBJECTS {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let (progress, mut counts) = watch::channel((0, 0));
    let ctx = Arc::new(Ctx {
        client: server.client(),
        finalizer: Finalizer::new(FINALIZER),
        seen: Mutex::new(Seen::default()),
        progress,
    });
    let stop = CancellationToken::new();
    let run = tokio::spawn(
        Controller::for_api(api.clone())
            .concurrency(4)
            .read_your_writes(read_your_writes)
            .graceful_shutdown_on(stop.clone().cancelled_owned())
            .run(reconcile, Arc::clone(&ctx)),
    );
    tokio::time::timeout(
        PATIENCE,
        counts.wait_for(|&(applied, _)| applied == OBJECTS),
    )
    .await
    .expect("every object applied")
    .unwrap();

    let injected = match faults {
        Faults::None => Vec::new(),
        Faults::PatchErrorsAndWatchDrops => {
            let patches = Matcher::verb(Verb::Patch).resource("configmaps");
            vec![
                server.inject(patches.clone().skip(5).times(20), Fault::Conflict),
                server.inject(patches.skip(40).times(20), Fault::InternalError),
            ]
        }
    };
    let mut dropped = 0;
    for i in 0..OBJECTS {
        api.delete(&format!("cm-{i}"), &DeleteParams::default())
            .await
            .unwrap();
        if let Faults::PatchErrorsAndWatchDrops = faults
            && i % 30 == 29
        {
            dropped += server.faults().drop_watches();
        }
    }
    tokio::time::timeout(PATIENCE, counts.wait_for(|&(_, gone)| gone == OBJECTS))
        .await
        .expect("every object gone from the cache")
        .unwrap();
    stop.cancel();
    run.await.unwrap().unwrap();
    assert_eq!(server.count::<ConfigMap>().unwrap(), 0, "objects left");
    for fault in injected {
        assert_eq!(server.fault_hits(fault), 20, "a patch fault did not fire");
    }
    if let Faults::PatchErrorsAndWatchDrops = faults {
        assert!(dropped >= 5, "only {dropped} watches dropped");
    }
    let seen = ctx.seen.lock().unwrap();
    seen.cleanups.clone()
}

/// Asserts one cleanup per uid, for all `OBJECTS` of them.
fn assert_cleaned_once(cleanups: &HashMap<String, usize>) {
    let twice: Vec<usize> = cleanups.values().copied().filter(|n| *n != 1).collect();
    assert!(
        twice.is_empty(),
        "{} of {OBJECTS} objects were cleaned up more than once (cleanups: {twice:?})",
        twice.len()
    );
    assert_eq!(cleanups.len(), OBJECTS, "objects never cleaned up");
}

/// No fault at all: the removal patch's success is not the cache's news, so a
/// requeued key reconciled before the DELETED event arrives must not clean up again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_cache_never_cleans_up_twice() {
    assert_cleaned_once(&delete_all_while_requeued(Faults::None, true).await);
}

/// The same with 409s and 500s on the finalizer's patches (retried) and the watches
/// dropped every 30 deletions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_cache_never_cleans_up_twice_through_patch_errors_and_watch_drops() {
    assert_cleaned_once(&delete_all_while_requeued(Faults::PatchErrorsAndWatchDrops, true).await);
}

/// The finalizer on its own, in a controller that does not wait for its writes
/// (`read_your_writes(false)`): still one cleanup per deletion, through the same
/// faults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_cache_never_cleans_up_twice_without_read_your_writes() {
    let cleanups = delete_all_while_requeued(Faults::PatchErrorsAndWatchDrops, false).await;
    assert_cleaned_once(&cleanups);
}
