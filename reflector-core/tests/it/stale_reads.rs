//! A controller whose watch lags its own writes: each reconcile patches its object
//! (or writes its child, of a kind it owns) and is retriggered (a short requeue)
//! before the watch delivers the write. With the default, no reconcile sees its
//! object (or child) older than the controller's last write to it; with
//! `read_your_writes(false)`, some do (so the test can fail).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use prometheus_client::registry::Registry;
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::informer::InformerFactory;
use reflector_core::lister::Lister;
use reflector_core::metrics::{Metrics, render_metrics};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const OBJECTS: usize = 4;
/// Reconciles per object (each writes once).
const ROUNDS: usize = 6;
/// How long the watch holds each event.
const WATCH_LAG: Duration = Duration::from_millis(40);
/// The retrigger: far shorter than the watch's lag.
const REQUEUE: Duration = Duration::from_millis(2);
/// How long the test waits for its controller to finish its rounds (about a
/// second): less than the 10 s after which a deferred key is requeued anyway, so
/// the deferred keys must have been woken by their informer.
const GUARD: Duration = Duration::from_secs(9);

#[derive(Default)]
struct Seen {
    /// Per name, the resource version of the controller's last write.
    written: HashMap<String, u64>,
    /// Per name, the reconciles that saw the object.
    rounds: HashMap<String, usize>,
    /// Reconciles that saw an object older than the controller's last write to it.
    stale: usize,
}

/// What each reconcile writes.
#[derive(Clone, Copy, PartialEq)]
enum Writes {
    /// Its own ConfigMap.
    Primary,
    /// A Secret of the same name, owned kind of the controller, with no owner
    /// reference: its events queue no key, so a deferred reconcile is woken by the
    /// Secrets' informer reaching the write, or by nothing before the fallback.
    Child,
}

struct Ctx {
    writes: Writes,
    api: Api<ConfigMap>,
    secrets: Api<Secret>,
    /// The owned informer's cache of Secrets.
    children: Lister<Secret>,
    /// Guarded by its own mutex, held only to update or read it.
    seen: Mutex<Seen>,
    /// Told how many objects finished their rounds.
    done: watch::Sender<usize>,
}

fn rv(obj: &impl Resource) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

async fn reconcile(req: Request<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let Some(cm) = req.object.clone() else {
        return Ok(Action::done());
    };
    let name = req.key.name().to_owned();
    // What the reconcile sees of what it wrote last (0: not there yet).
    let seen_rv = match ctx.writes {
        Writes::Primary => rv(&*cm),
        Writes::Child => ctx.children.get(Some(NS), &name).map_or(0, |s| rv(&*s)),
    };
    let round = {
        let mut seen = ctx.seen.lock().unwrap();
        if seen.written.get(&name).is_some_and(|w| seen_rv < *w) {
            seen.stale += 1;
        }
        let round = seen.rounds.entry(name.clone()).or_default();
        *round += 1;
        *round
    };
    if round > ROUNDS {
        return Ok(Action::done());
    }
    let data = serde_json::json!({ "round": round.to_string() });
    let written = match ctx.writes {
        Writes::Primary => {
            let patch = serde_json::json!({ "data": data });
            let written = ctx
                .api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            req.wrote(&written);
            rv(&written)
        }
        Writes::Child => {
            let patch = serde_json::json!({ "stringData": data });
            let written = if round == 1 {
                let mut secret = Secret::default();
                secret.metadata.name = Some(name.clone());
                ctx.secrets.create(&PostParams::default(), &secret).await?
            } else {
                let params = PatchParams::default();
                ctx.secrets
                    .patch(&name, &params, &Patch::Merge(&patch))
                    .await?
            };
            req.wrote(&written);
            rv(&written)
        }
    };
    ctx.seen
        .lock()
        .unwrap()
        .written
        .insert(name.clone(), written);
    if round == ROUNDS {
        ctx.done.send_modify(|n| *n += 1);
        return Ok(Action::done());
    }
    Ok(Action::requeue_after(REQUEUE))
}

/// Runs the controller (waiting for its own writes or not) over `OBJECTS`
/// ConfigMaps, writing `writes` behind a lagging watch, until each did `ROUNDS`
/// writes; answers the stale reconciles and `stale_sync_skips_total`.
async fn run_rounds(writes: Writes, read_your_writes: bool) -> (usize, f64) {
    let server = ApiServer::start().await.unwrap();
    let api = Api::<ConfigMap>::namespaced(server.client(), NS);
    for i in 0..OBJECTS {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let lagging = match writes {
        Writes::Primary => "configmaps",
        Writes::Child => "secrets",
    };
    let lag = Matcher::verb(Verb::Watch).resource(lagging).every();
    server.inject(lag, Fault::LatencyBetweenEvents(WATCH_LAG));
    let factory = InformerFactory::new(server.client());
    let children = factory.informer::<Secret>();
    let (done, mut finished) = watch::channel(0);
    let ctx = Arc::new(Ctx {
        writes,
        api: api.clone(),
        secrets: Api::namespaced(server.client(), NS),
        children: children.lister(),
        seen: Mutex::new(Seen::default()),
        done,
    });
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let stop = CancellationToken::new();
    let run = tokio::spawn(
        Controller::new(factory.informer::<ConfigMap>())
            .owns(children)
            .name("stale-reads")
            .concurrency(2)
            .metrics(&metrics)
            .read_your_writes(read_your_writes)
            .graceful_shutdown_on(stop.clone().cancelled_owned())
            .run(reconcile, Arc::clone(&ctx)),
    );
    tokio::time::timeout(GUARD, finished.wait_for(|n| *n == OBJECTS))
        .await
        .expect("every object did its rounds before the fallback requeue")
        .unwrap();
    stop.cancel();
    run.await.unwrap().unwrap();
    let skips = render_metrics(&registry)
        .lines()
        .find_map(|l| l.strip_prefix("stale_sync_skips_total{controller=\"stale-reads\"} "))
        .expect("no stale_sync_skips_total series")
        .parse()
        .unwrap();
    let stale = ctx.seen.lock().unwrap().stale;
    (stale, skips)
}

/// With the default, a reconcile retriggered before the watch delivered the
/// controller's own write waits for it: none sees an older object, and the waits
/// are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_reconciles_never_see_an_object_older_than_their_own_write() {
    let (stale, skips) = run_rounds(Writes::Primary, true).await;
    assert_eq!(
        stale, 0,
        "reconciles saw an object older than their own write"
    );
    assert!(
        skips > 0.0,
        "no reconcile was deferred: the test did not lag"
    );
}

/// The opt-out: the same controller without waiting sees objects older than its
/// own writes (what the default prevents).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_reconciles_with_the_opt_out_see_older_objects() {
    let (stale, skips) = run_rounds(Writes::Primary, false).await;
    assert!(
        stale > 0,
        "the watch's lag was never seen: the test proves nothing"
    );
    assert_eq!(skips, 0.0);
}

/// A write of a child (a kind the controller owns) defers the next reconcile until
/// the owned informer has it, woken by that informer (no event of the child queues
/// the key, and the run ends long before the fallback requeue could).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_reconciles_wait_for_their_children_in_the_owned_cache() {
    let (stale, skips) = run_rounds(Writes::Child, true).await;
    assert_eq!(
        stale, 0,
        "reconciles saw a child older than their own write"
    );
    assert!(
        skips > 0.0,
        "no reconcile was deferred: the test did not lag"
    );
}

/// The opt-out, for children: reconciles see their children's cache behind their
/// own writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_reconciles_with_the_opt_out_see_older_children() {
    let (stale, skips) = run_rounds(Writes::Child, false).await;
    assert!(
        stale > 0,
        "the watch's lag was never seen: the test proves nothing"
    );
    assert_eq!(skips, 0.0);
}
