//! The controller runtime against in-memory sources ([`FakeSource`]): sync before
//! reconcile, one worker per key, requeues and backoff, owner and watch mappings,
//! shutdown, and the metrics it reports. Time is tokio's paused clock.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use prometheus_client::registry::Registry;
use reflector_core::controller::{Action, Controller, ControllerError, ErrorPolicy, Request};
use reflector_core::informer::SharedIndexInformer;
use reflector_core::lister::Lister;
use reflector_core::listwatch::{FakeSource, ListWatchError};
use reflector_core::metrics::{Metrics, render_metrics};
use reflector_core::object::{ObjectKey, ObjectRef};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
#[error("reconcile failed on purpose")]
struct Fail;

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("ns".into()),
        ..ObjectMeta::default()
    }
}

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(name),
        ..ConfigMap::default()
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name)
}

fn informer<K: reflector_core::object::Object>(source: &FakeSource<K>) -> SharedIndexInformer<K> {
    SharedIndexInformer::new(source.clone())
}

/// A source holding ConfigMaps `names` and an informer over it.
fn source_and_informer(names: &[&str]) -> (FakeSource<ConfigMap>, SharedIndexInformer<ConfigMap>) {
    let source = FakeSource::<ConfigMap>::new();
    for name in names {
        source.add(cm(name));
    }
    let informer = informer(&source);
    (source, informer)
}

/// Starts `informer` on its own task, stopped by the returned token.
fn start_informer<K: reflector_core::object::Object>(
    informer: &SharedIndexInformer<K>,
) -> (CancellationToken, JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    (cancel, task)
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached: {what}");
}

/// Lets every task run until idle, moving the paused clock by `d`.
async fn settle(d: Duration) {
    tokio::time::sleep(d).await;
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
}

/// What the reconcilers of these tests record.
#[derive(Default)]
struct Record {
    /// Every reconcile: key, when, and whether the lister had the object.
    calls: Mutex<Vec<(ObjectKey, Instant, bool)>>,
}

impl Record {
    fn shared() -> Arc<Self> {
        Arc::new(Record::default())
    }
    fn push(&self, key: &ObjectKey, present: bool) {
        self.calls
            .lock()
            .unwrap()
            .push((key.clone(), Instant::now(), present));
    }
    fn len(&self) -> usize {
        self.calls.lock().unwrap().len()
    }
    fn count(&self, k: &ObjectKey) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(c, _, _)| c == k)
            .count()
    }
    fn times(&self, k: &ObjectKey) -> Vec<Instant> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(c, _, _)| c == k)
            .map(|(_, t, _)| *t)
            .collect()
    }
    fn keys(&self) -> BTreeSet<ObjectKey> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(k, _, _)| k.clone())
            .collect()
    }
    fn clear(&self) {
        self.calls.lock().unwrap().clear();
    }
}

/// A controller running on its own task until [`Running::stop`] (or
/// [`Running::cancel`]) shuts it down gracefully.
struct Running {
    cancel: CancellationToken,
    task: JoinHandle<Result<(), ControllerError>>,
}

impl Running {
    /// Runs `controller` with `reconcile` and `ctx` on a new task.
    fn spawn<K, P, R, Fut, E, Ctx>(
        controller: Controller<K, P>,
        reconcile: R,
        ctx: Arc<Ctx>,
    ) -> Self
    where
        K: reflector_core::object::Object,
        R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Action, E>> + Send + 'static,
        E: std::fmt::Display + Send + 'static,
        P: ErrorPolicy<K, E, Ctx> + Send + Sync + 'static,
        Ctx: Send + Sync + 'static,
    {
        let cancel = CancellationToken::new();
        let run = controller
            .graceful_shutdown_on(cancel.clone().cancelled_owned())
            .run(reconcile, ctx);
        Running {
            cancel,
            task: tokio::spawn(run),
        }
    }

    /// Starts the graceful shutdown.
    fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Whether `run` has returned.
    fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for `run` to return.
    async fn join(self) -> Result<(), ControllerError> {
        self.task
            .await
            .expect("the controller's task did not panic")
    }

    /// Shuts the controller down and returns what `run` returned.
    async fn stop(self) -> Result<(), ControllerError> {
        self.cancel();
        self.join().await
    }
}

/// Runs `controller` on its own task; each reconcile records its key in `record`,
/// then answers `answer(reconciles recorded so far)`.
fn run_recorded(
    controller: Controller<ConfigMap>,
    record: &Arc<Record>,
    answer: fn(usize) -> Result<Action, Fail>,
) -> Running {
    let reconcile = move |req: Request<ConfigMap>, rec: Arc<Record>| async move {
        rec.push(req.key.key(), true);
        answer(rec.len())
    };
    Running::spawn(controller, reconcile, Arc::clone(record))
}

/// Records the key (and whether the request carried the object) and succeeds.
async fn record_and_succeed<K>(req: Request<K>, rec: Arc<Record>) -> Result<Action, Fail> {
    rec.push(req.key.key(), req.object.is_some());
    Ok(Action::done())
}

struct ConcurrencyCtx {
    lister: Lister<ConfigMap>,
    informer: SharedIndexInformer<ConfigMap>,
    in_flight: Mutex<BTreeSet<ObjectKey>>,
    max_in_flight: AtomicUsize,
    overlaps: AtomicUsize,
    before_sync: AtomicUsize,
    counts: Mutex<BTreeMap<ObjectKey, usize>>,
}

/// Concurrency 4 over 500 objects: every object is reconciled after sync (the
/// lister holds all 500 at the first reconcile), the same key is never reconciled
/// by two workers at once, all four workers are used, and objects changed during
/// the run are reconciled again.
#[tokio::test(start_paused = true)]
async fn concurrency_4_over_500_objects_one_worker_per_key_and_only_after_sync() {
    let source = FakeSource::<ConfigMap>::new();
    for i in 0..500 {
        source.add(cm(&format!("cm-{i:03}")));
    }
    let informer = informer(&source);
    let ctx = Arc::new(ConcurrencyCtx {
        lister: informer.lister(),
        informer: informer.clone(),
        in_flight: Mutex::new(BTreeSet::new()),
        max_in_flight: AtomicUsize::new(0),
        overlaps: AtomicUsize::new(0),
        before_sync: AtomicUsize::new(0),
        counts: Mutex::new(BTreeMap::new()),
    });
    let controller = Controller::new(informer.clone()).concurrency(4);
    let run = Running::spawn(
        controller,
        |req: Request<_>, ctx: Arc<ConcurrencyCtx>| async move {
            let key = req.key.into_key();
            if !ctx.informer.has_synced() || ctx.lister.list().len() < 500 {
                ctx.before_sync.fetch_add(1, Ordering::SeqCst);
            }
            {
                let mut in_flight = ctx.in_flight.lock().unwrap();
                if !in_flight.insert(key.clone()) {
                    ctx.overlaps.fetch_add(1, Ordering::SeqCst);
                }
                ctx.max_in_flight
                    .fetch_max(in_flight.len(), Ordering::SeqCst);
            }
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
            ctx.in_flight.lock().unwrap().remove(&key);
            *ctx.counts.lock().unwrap().entry(key).or_default() += 1;
            Ok::<_, Fail>(Action::done())
        },
        Arc::clone(&ctx),
    );

    eventually("500 keys reconciled", || {
        ctx.counts.lock().unwrap().len() == 500
    })
    .await;
    // Change every object twice while the controller runs: each key is reconciled
    // again, and changes landing while a key is in flight never run it twice at once.
    for round in 0..2 {
        for i in 0..500 {
            let mut c = cm(&format!("cm-{i:03}"));
            c.data = Some([("round".to_owned(), round.to_string())].into());
            source.modify(c);
        }
    }
    eventually("every key reconciled again", || {
        ctx.counts.lock().unwrap().values().all(|&n| n >= 2)
    })
    .await;
    run.stop().await.unwrap();

    assert_eq!(
        ctx.before_sync.load(Ordering::SeqCst),
        0,
        "reconciled before sync"
    );
    assert_eq!(
        ctx.overlaps.load(Ordering::SeqCst),
        0,
        "one key in two workers"
    );
    assert_eq!(ctx.max_in_flight.load(Ordering::SeqCst), 4);
    let counts = ctx.counts.lock().unwrap();
    assert_eq!(counts.len(), 500);
    // Initial add plus at most two changes: never more than three per key.
    assert!(counts.values().all(|&n| (2..=3).contains(&n)), "{counts:?}");
}

/// A reconcile that always fails is retried after 5 ms, 10 ms, 20 ms, 40 ms, ...:
/// the per-key exponential backoff of the default controller rate limiter.
#[tokio::test(start_paused = true)]
async fn always_failing_reconcile_backs_off_exponentially() {
    let (_source, informer) = source_and_informer(&["a"]);
    let record = Record::shared();
    let run = run_recorded(Controller::new(informer), &record, |_| {
        Err::<Action, _>(Fail)
    });
    eventually("ten attempts", || record.len() >= 10).await;
    run.stop().await.unwrap();

    let times = record.times(&key("a"));
    let delays: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).take(9).collect();
    let expected: Vec<Duration> = [5, 10, 20, 40, 80, 160, 320, 640, 1280]
        .into_iter()
        .map(Duration::from_millis)
        .collect();
    assert_eq!(delays, expected);
}

/// A success after failures resets the backoff (`forget`): the next failure waits
/// 5 ms again.
#[tokio::test(start_paused = true)]
async fn success_resets_the_backoff() {
    let (source, informer) = source_and_informer(&[]);
    source.add(cm("a"));
    let record = Record::shared();
    // Fails three times, succeeds, then (after a change) fails twice more.
    let run = run_recorded(
        Controller::new(informer),
        &record,
        |attempts| match attempts {
            1..=3 | 5..=6 => Err(Fail),
            _ => Ok(Action::done()),
        },
    );
    eventually("four attempts", || record.len() == 4).await;
    settle(Duration::from_secs(1)).await;
    let mut changed = cm("a");
    changed.data = Some([("k".to_owned(), "v".to_owned())].into());
    source.modify(changed);
    eventually("seven attempts", || record.len() == 7).await;
    run.stop().await.unwrap();

    let t = record.times(&key("a"));
    assert_eq!(t[1] - t[0], Duration::from_millis(5));
    assert_eq!(t[2] - t[1], Duration::from_millis(10));
    assert_eq!(t[3] - t[2], Duration::from_millis(20));
    // After the success: 5 ms, 10 ms again.
    assert_eq!(t[5] - t[4], Duration::from_millis(5));
    assert_eq!(t[6] - t[5], Duration::from_millis(10));
}

/// `Action::requeue_after(d)` reconciles the key again exactly `d` later, once.
#[tokio::test(start_paused = true)]
async fn requeue_after_is_honoured() {
    let (_source, informer) = source_and_informer(&["a"]);
    let record = Record::shared();
    let run = run_recorded(Controller::new(informer), &record, |attempts| {
        if attempts == 1 {
            Ok::<_, Fail>(Action::requeue_after(Duration::from_secs(30)))
        } else {
            Ok(Action::done())
        }
    });
    eventually("first reconcile", || record.len() == 1).await;
    settle(Duration::from_secs(29)).await;
    assert_eq!(record.len(), 1, "requeued too early");
    eventually("second reconcile", || record.len() == 2).await;
    settle(Duration::from_secs(120)).await;
    run.stop().await.unwrap();

    let t = record.times(&key("a"));
    assert_eq!(t.len(), 2, "requeued more than once");
    assert_eq!(t[1] - t[0], Duration::from_secs(30));
}

struct GateCtx {
    record: Record,
    entered: Notify,
    gate: Notify,
    finished: AtomicBool,
    lister: Lister<ConfigMap>,
}

impl GateCtx {
    fn new(lister: Lister<ConfigMap>) -> Arc<Self> {
        Arc::new(GateCtx {
            record: Record::default(),
            entered: Notify::new(),
            gate: Notify::new(),
            finished: AtomicBool::new(false),
            lister,
        })
    }
}

/// The first reconcile waits at the gate; later ones pass. Records whether the
/// request carried the cached object, and checks it is the lister's.
async fn gated_reconcile(req: Request<ConfigMap>, ctx: Arc<GateCtx>) -> Result<Action, Fail> {
    let key = req.key.into_key();
    let present = req.object.is_some();
    assert_eq!(
        req.object.map(|o| o.metadata.resource_version.clone()),
        ctx.lister
            .get(key.namespace(), key.name())
            .map(|o| o.metadata.resource_version.clone()),
        "the request's object is not the cached one"
    );
    ctx.record.push(&key, present);
    if ctx.record.len() == 1 {
        ctx.entered.notify_one();
        ctx.gate.notified().await;
        ctx.finished.store(true, Ordering::SeqCst);
    }
    Ok(Action::done())
}

/// A key changed 100 times while it is being reconciled is reconciled exactly once
/// more afterwards: at most twice in all.
#[tokio::test(start_paused = true)]
async fn key_added_100_times_while_processing_is_reconciled_at_most_twice() {
    let (source, informer) = source_and_informer(&["a"]);
    let ctx = GateCtx::new(informer.lister());
    let run = Running::spawn(
        Controller::new(informer.clone()).concurrency(4),
        gated_reconcile,
        Arc::clone(&ctx),
    );
    ctx.entered.notified().await;
    let mut last = String::new();
    for i in 0..100 {
        let mut c = cm("a");
        c.data = Some([("i".to_owned(), i.to_string())].into());
        last = source.modify(c).metadata.resource_version.unwrap();
    }
    eventually("cache saw every change", || {
        informer.reflector_resource_version().as_deref() == Some(last.as_str())
    })
    .await;
    settle(Duration::from_secs(1)).await;
    assert_eq!(ctx.record.len(), 1, "reconciled concurrently with itself");
    ctx.gate.notify_one();
    settle(Duration::from_secs(60)).await;
    run.stop().await.unwrap();

    assert_eq!(ctx.record.count(&key("a")), 2);
}

/// A deleted primary is reconciled: the request carries the cached object while it
/// exists, and `None` after the delete.
#[tokio::test(start_paused = true)]
async fn deleted_primary_is_reconciled_and_sees_it_gone() {
    let source = FakeSource::<ConfigMap>::new();
    let a = source.add(cm("a"));
    let informer = informer(&source);
    let ctx = GateCtx::new(informer.lister());
    ctx.gate.notify_one(); // no waiting
    let run = Running::spawn(Controller::new(informer), gated_reconcile, Arc::clone(&ctx));
    eventually("reconciled while present", || ctx.record.len() == 1).await;
    source.delete(a);
    eventually("reconciled after delete", || ctx.record.len() == 2).await;
    run.stop().await.unwrap();

    let calls = ctx.record.calls.lock().unwrap();
    assert_eq!(calls[0].0, key("a"));
    assert!(calls[0].2, "first reconcile must see the object");
    assert_eq!(calls[1].0, key("a"));
    assert!(!calls[1].2, "reconcile after delete must see it gone");
}

fn owned_cm(name: &str, owner: &str, controller: bool) -> ConfigMap {
    let mut c = cm(name);
    c.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: owner.into(),
        uid: format!("uid-{owner}"),
        controller: Some(controller),
        ..OwnerReference::default()
    }]);
    c
}

/// Child add/update/delete reconcile the controller owner; a non-controller owner
/// reference does not; a `watches` mapper maps a Secret to the Deployment its label
/// names.
#[tokio::test(start_paused = true)]
async fn owned_children_and_watches_mapper_map_to_primary_keys() {
    let deployments = FakeSource::<Deployment>::new();
    for name in ["web", "api"] {
        deployments.add(Deployment {
            metadata: meta(name),
            ..Deployment::default()
        });
    }
    let config_maps = FakeSource::<ConfigMap>::new();
    let secrets = FakeSource::<Secret>::new();
    let record = Record::shared();
    let controller = Controller::new(informer(&deployments))
        .owns(informer(&config_maps))
        .watches(informer(&secrets), |s: &Secret| {
            s.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .map(|app| ObjectRef::new(s.metadata.namespace.as_deref(), app))
        });
    let run = Running::spawn(controller, record_and_succeed, Arc::clone(&record));
    eventually("initial reconciles", || record.len() == 2).await;
    assert_eq!(record.keys(), [key("api"), key("web")].into());
    record.clear();

    let child = config_maps.add(owned_cm("web-config", "web", true));
    eventually("child add", || record.len() == 1).await;
    let mut changed = child.clone();
    changed.data = Some([("k".to_owned(), "v".to_owned())].into());
    let changed = config_maps.modify(changed);
    eventually("child update", || record.len() == 2).await;
    config_maps.delete(changed);
    eventually("child delete", || record.len() == 3).await;
    assert_eq!(record.count(&key("web")), 3);

    config_maps.add(owned_cm("api-extra", "api", false));
    settle(Duration::from_secs(5)).await;
    assert_eq!(record.len(), 3, "a non-controller owner was reconciled");

    let mut secret = Secret {
        metadata: meta("api-token"),
        ..Secret::default()
    };
    secret.metadata.labels = Some([("app".to_owned(), "api".to_owned())].into());
    secrets.add(secret);
    eventually("secret mapped", || record.len() == 4).await;
    assert_eq!(record.count(&key("api")), 1);
    run.stop().await.unwrap();
}

/// On cancel, the reconcile in flight finishes, no further key is taken, `run`
/// returns `Ok`, and no task keeps the context alive.
#[tokio::test(start_paused = true)]
async fn shutdown_with_work_in_flight_completes() {
    let (_source, informer) = source_and_informer(&["a", "b"]);
    let ctx = GateCtx::new(informer.lister());
    let run = Running::spawn(
        Controller::new(informer.clone()),
        gated_reconcile,
        Arc::clone(&ctx),
    );
    ctx.entered.notified().await;
    run.cancel();
    settle(Duration::from_secs(10)).await;
    assert!(
        !run.is_finished(),
        "run returned with a reconcile in flight"
    );
    ctx.gate.notify_one();
    run.join().await.unwrap();

    assert!(ctx.finished.load(Ordering::SeqCst));
    assert_eq!(ctx.record.len(), 1, "a key was taken after cancel");
    assert_eq!(
        Arc::strong_count(&ctx),
        1,
        "a worker still holds the context"
    );
    assert!(
        informer.is_stopped(),
        "the informer run started was not stopped"
    );
}

/// A reconcile still running after the graceful-shutdown timeout is aborted: `run`
/// returns `GracefulShutdownTimeout` exactly at the timeout and drops the reconcile.
#[tokio::test(start_paused = true)]
async fn shutdown_aborts_reconciles_after_graceful_timeout() {
    let (_source, informer) = source_and_informer(&["a"]);
    let ctx = GateCtx::new(informer.lister());
    let run = Running::spawn(
        Controller::new(informer).graceful_shutdown_timeout(Duration::from_secs(5)),
        gated_reconcile,
        Arc::clone(&ctx),
    );
    ctx.entered.notified().await;
    let cancelled_at = Instant::now();
    let result = run.stop().await;
    assert_eq!(cancelled_at.elapsed(), Duration::from_secs(5));
    assert!(
        matches!(
            result,
            Err(ControllerError::GracefulShutdownTimeout { timeout, aborted: 1 })
                if timeout == Duration::from_secs(5)
        ),
        "{result:?}"
    );
    assert!(!ctx.finished.load(Ordering::SeqCst));
    assert_eq!(
        Arc::strong_count(&ctx),
        1,
        "the aborted reconcile was not dropped"
    );
}

/// With `start_informers(false)`, `run` does not start informers and waits for
/// them: nothing is reconciled until their owner starts them.
#[tokio::test(start_paused = true)]
async fn run_waits_for_informers_started_elsewhere() {
    let (_source, informer) = source_and_informer(&["a"]);
    let record = Record::shared();
    let run = Running::spawn(
        Controller::new(informer.clone()).start_informers(false),
        record_and_succeed,
        Arc::clone(&record),
    );
    settle(Duration::from_secs(10)).await;
    assert!(!informer.has_started());
    assert_eq!(record.len(), 0);
    let (informer_cancel, informer_task) = start_informer(&informer);
    eventually("reconciled once started", || record.len() == 1).await;
    run.stop().await.unwrap();
    assert!(
        !informer.is_stopped(),
        "run stopped an informer it did not start"
    );
    informer_cancel.cancel();
    informer_task.await.unwrap();
}

struct SyncCtx {
    record: Record,
    deployments: SharedIndexInformer<Deployment>,
    config_maps: SharedIndexInformer<ConfigMap>,
    before_sync: AtomicUsize,
}

/// With the primary synced and its keys queued, nothing is reconciled until the
/// owned informer (whose lists fail at first) has synced too.
#[tokio::test(start_paused = true)]
async fn no_reconcile_before_every_informer_has_synced() {
    let deployments = FakeSource::<Deployment>::new();
    deployments.add(Deployment {
        metadata: meta("web"),
        ..Deployment::default()
    });
    let config_maps = FakeSource::<ConfigMap>::new();
    config_maps.fail_lists(ListWatchError::Api(Box::new(
        kube::core::Status::failure("unavailable", "InternalError").with_code(500),
    )));
    let ctx = Arc::new(SyncCtx {
        record: Record::default(),
        deployments: informer(&deployments),
        config_maps: informer(&config_maps),
        before_sync: AtomicUsize::new(0),
    });
    let run = Running::spawn(
        Controller::new(ctx.deployments.clone()).owns(ctx.config_maps.clone()),
        |req: Request<_>, ctx: Arc<SyncCtx>| async move {
            let key = req.key.into_key();
            if !ctx.deployments.has_synced() || !ctx.config_maps.has_synced() {
                ctx.before_sync.fetch_add(1, Ordering::SeqCst);
            }
            ctx.record.push(&key, true);
            Ok::<_, Fail>(Action::done())
        },
        Arc::clone(&ctx),
    );
    eventually("primary synced", || ctx.deployments.has_synced()).await;
    settle(Duration::from_secs(20)).await;
    assert_eq!(
        ctx.record.len(),
        0,
        "reconciled before the owned informer synced"
    );
    config_maps.clear_list_error();
    eventually("reconciled after sync", || ctx.record.len() == 1).await;
    run.stop().await.unwrap();
    assert_eq!(ctx.before_sync.load(Ordering::SeqCst), 0);
    assert_eq!(ctx.record.keys(), [key("web")].into());
}

/// An informer that never syncs makes `run` fail with `CacheSyncTimeout` after the
/// timeout, without reconciling.
#[tokio::test(start_paused = true)]
async fn cache_sync_timeout_is_reported() {
    let (_source, informer) = source_and_informer(&[]);
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let run = Controller::new(informer)
        .name("never-synced")
        .cache_sync_timeout(Duration::from_secs(7))
        .start_informers(false)
        .graceful_shutdown_on(cancel.cancelled_owned())
        .run(
            |_req: Request<_>, _ctx: Arc<()>| async { Ok::<_, Fail>(Action::done()) },
            Arc::new(()),
        );
    let result = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("run did not give up waiting for sync");
    assert_eq!(started.elapsed(), Duration::from_secs(7));
    assert!(
        matches!(
            &result,
            Err(ControllerError::CacheSyncTimeout { timeout, unsynced })
                if *timeout == Duration::from_secs(7)
                    && unsynced == &["never-synced/ConfigMap".to_owned()]
        ),
        "{result:?}"
    );
}

/// A panicking reconcile counts as an error and is retried with backoff; the
/// worker survives.
#[tokio::test(start_paused = true)]
async fn panicking_reconcile_is_retried_with_backoff() {
    let (_source, informer) = source_and_informer(&["a"]);
    let record = Record::shared();
    let run = run_recorded(Controller::new(informer), &record, |attempts| {
        assert!(attempts > 2, "panics on the first two attempts");
        Ok::<_, Fail>(Action::done())
    });
    eventually("third attempt", || record.len() == 3).await;
    run.stop().await.unwrap();
    let t = record.times(&key("a"));
    assert_eq!(t[1] - t[0], Duration::from_millis(5));
    assert_eq!(t[2] - t[1], Duration::from_millis(10));
}

/// Returns the value of the series `series` (the whole text before the value).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no series {series} in:\n{text}"))
        .parse()
        .unwrap()
}

/// The metrics text holds every controller-runtime, workqueue and reflector name,
/// with values matching what the reconciler did: a succeeds, b fails once then
/// succeeds, c asks requeue-after once, d asks a rate-limited requeue once.
#[tokio::test(start_paused = true)]
async fn metrics_report_what_the_controller_did() {
    let source = FakeSource::<ConfigMap>::new();
    for name in ["a", "b", "c", "d"] {
        source.add(cm(name));
    }
    let informer = informer(&source);
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let record = Record::shared();
    let run = Running::spawn(
        Controller::new(informer.clone())
            .name("cms")
            .concurrency(2)
            .metrics(&metrics),
        |req: Request<_>, rec: Arc<Record>| async move {
            let key = req.key.into_key();
            rec.push(&key, true);
            let first = rec.count(&key) == 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
            match key.name() {
                "b" if first => Err(Fail),
                "c" if first => Ok(Action::requeue_after(Duration::from_secs(1))),
                "d" if first => Ok(Action::requeue_rate_limited()),
                _ => Ok(Action::done()),
            }
        },
        Arc::clone(&record),
    );
    eventually("seven reconciles", || record.len() == 7).await;
    let mut changed = cm("a");
    changed.data = Some([("k".to_owned(), "v".to_owned())].into());
    source.modify(changed);
    eventually("a again", || record.len() == 8).await;
    settle(Duration::from_secs(5)).await;

    let text = render_metrics(&registry);
    let total = |result: &str| {
        value(
            &text,
            &format!(
                "controller_runtime_reconcile_total{{controller=\"cms\",result=\"{result}\"}}"
            ),
        )
    };
    // a twice, b, c, d once each after their first attempt.
    assert_eq!(total("success"), 5.0);
    assert_eq!(total("error"), 1.0);
    assert_eq!(total("requeue_after"), 1.0);
    assert_eq!(total("requeue"), 1.0);
    assert_eq!(
        value(
            &text,
            "controller_runtime_reconcile_errors_total{controller=\"cms\"}"
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            "controller_runtime_reconcile_time_seconds_count{controller=\"cms\"}"
        ),
        8.0
    );
    // Every reconcile slept 20 ms of paused time.
    let sum = value(
        &text,
        "controller_runtime_reconcile_time_seconds_sum{controller=\"cms\"}",
    );
    assert!((sum - 8.0 * 0.02).abs() < 1e-9, "{sum}");
    assert_eq!(
        value(
            &text,
            "controller_runtime_reconcile_time_seconds_bucket{le=\"0.025\",controller=\"cms\"}"
        ),
        8.0
    );
    assert_eq!(
        value(
            &text,
            "controller_runtime_active_workers{controller=\"cms\"}"
        ),
        0.0
    );
    assert_eq!(
        value(
            &text,
            "controller_runtime_max_concurrent_reconciles{controller=\"cms\"}"
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            "controller_runtime_reconcile_panics_total{controller=\"cms\"}"
        ),
        0.0
    );
    // The queue: 4 initial adds, b, c, d re-added after delay (3 retries), a changed.
    assert_eq!(value(&text, "workqueue_adds_total{name=\"cms\"}"), 8.0);
    assert_eq!(value(&text, "workqueue_retries_total{name=\"cms\"}"), 3.0);
    assert_eq!(
        value(&text, "workqueue_depth{name=\"cms\",priority=\"-100\"}"),
        0.0
    );
    assert_eq!(
        value(&text, "workqueue_work_duration_seconds_count{name=\"cms\"}"),
        8.0
    );
    // The reflector: one list, one watch, one watch event (the change of a).
    let stats = informer.reflector_stats();
    assert_eq!(
        value(&text, "reflector_lists_total{name=\"cms/ConfigMap\"}"),
        1.0
    );
    assert_eq!(
        value(&text, "reflector_watches_total{name=\"cms/ConfigMap\"}"),
        stats.watches as f64
    );
    assert_eq!(
        value(
            &text,
            "reflector_watch_events_total{name=\"cms/ConfigMap\"}"
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            "reflector_errors_total{name=\"cms/ConfigMap\",reason=\"expired\"}"
        ),
        0.0
    );
    for name in [
        "reflector_list_pages_total",
        "reflector_relists_total",
        "reflector_short_watches_total",
        "reflector_bookmarks_total",
        "reflector_resyncs_total",
        "reflector_handler_panics_total",
    ] {
        assert!(
            text.contains(&format!("{name}{{name=\"cms/ConfigMap\"}}")),
            "{name}"
        );
    }
    run.stop().await.unwrap();
}

/// While a reconcile runs, `controller_runtime_active_workers` counts it.
#[tokio::test(start_paused = true)]
async fn active_workers_counts_reconciles_in_flight() {
    let (_source, informer) = source_and_informer(&["a"]);
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let ctx = GateCtx::new(informer.lister());
    let run = Running::spawn(
        Controller::new(informer).metrics(&metrics),
        gated_reconcile,
        Arc::clone(&ctx),
    );
    ctx.entered.notified().await;
    let series = "controller_runtime_active_workers{controller=\"configmap\"}";
    assert_eq!(value(&render_metrics(&registry), series), 1.0);
    ctx.gate.notify_one();
    settle(Duration::from_secs(1)).await;
    assert_eq!(value(&render_metrics(&registry), series), 0.0);
    run.stop().await.unwrap();
}

/// The request carries the object as cached when a worker takes the key: a key
/// queued while its object changed three times is reconciled with the last state.
#[tokio::test(start_paused = true)]
async fn request_carries_the_latest_cached_object() {
    let (source, informer) = source_and_informer(&["a"]);
    let ctx = GateCtx::new(informer.lister());
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let run = Running::spawn(
        Controller::new(informer.clone()),
        {
            let seen = Arc::clone(&seen);
            move |req: Request<ConfigMap>, ctx: Arc<GateCtx>| {
                let data = req
                    .object
                    .as_ref()
                    .and_then(|o| o.data.as_ref()?.get("v").cloned());
                seen.lock().unwrap().push(data);
                gated_reconcile(req, ctx)
            }
        },
        Arc::clone(&ctx),
    );
    ctx.entered.notified().await;
    for v in ["1", "2", "3"] {
        let mut c = cm("a");
        c.data = Some([("v".to_owned(), v.to_owned())].into());
        source.modify(c);
    }
    settle(Duration::from_secs(1)).await;
    ctx.gate.notify_one();
    eventually("reconciled again", || ctx.record.len() == 2).await;
    run.stop().await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [None, Some("3".to_owned())]);
}

/// `anyhow::Error` is a reconcile error like any other: logged, counted and retried
/// with the key's exponential backoff (5 ms, 10 ms, 20 ms).
#[tokio::test(start_paused = true)]
async fn anyhow_errors_are_retried_with_backoff() {
    let source = FakeSource::<ConfigMap>::new();
    source.add(cm("a"));
    let record = Record::shared();
    let run = Running::spawn(
        Controller::new(informer(&source)),
        |req: Request<ConfigMap>, rec: Arc<Record>| async move {
            let key = req.key.into_key();
            rec.push(&key, req.object.is_some());
            anyhow::ensure!(rec.len() > 3, "attempt {} of {key} fails", rec.len());
            Ok(Action::done())
        },
        Arc::clone(&record),
    );
    eventually("fourth attempt", || record.len() == 4).await;
    settle(Duration::from_secs(5)).await;
    run.stop().await.unwrap();
    let t = record.times(&key("a"));
    assert_eq!(t.len(), 4, "retried after the success");
    let delays: Vec<Duration> = t.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        delays,
        [5, 10, 20].map(Duration::from_millis),
        "not the per-key backoff"
    );
}

/// An error policy set with `error_policy` decides after each failure: a terminal
/// error (`Action::done()`) is not retried, another is retried after a fixed delay.
#[tokio::test(start_paused = true)]
async fn error_policy_decides_what_follows_a_failure() {
    #[derive(Debug, thiserror::Error)]
    enum Error {
        #[error("invalid")]
        Invalid,
        #[error("unavailable")]
        Unavailable,
    }
    let source = FakeSource::<ConfigMap>::new();
    source.add(cm("bad"));
    source.add(cm("flaky"));
    let record = Record::shared();
    let run = Running::spawn(
        Controller::new(informer(&source)).error_policy(
            |req: &Request<ConfigMap>, e: &Error, _: Arc<Record>| {
                assert_eq!(req.key.namespace(), Some("ns"));
                match e {
                    Error::Invalid => Action::done(),
                    Error::Unavailable => Action::requeue_after(Duration::from_secs(7)),
                }
            },
        ),
        |req: Request<ConfigMap>, rec: Arc<Record>| async move {
            let key = req.key.into_key();
            rec.push(&key, true);
            match key.name() {
                "bad" => Err(Error::Invalid),
                _ if rec.count(&key) == 1 => Err(Error::Unavailable),
                _ => Ok(Action::done()),
            }
        },
        Arc::clone(&record),
    );
    eventually("flaky retried", || record.count(&key("flaky")) == 2).await;
    settle(Duration::from_secs(60)).await;
    run.stop().await.unwrap();
    assert_eq!(record.count(&key("bad")), 1, "a terminal error was retried");
    let t = record.times(&key("flaky"));
    assert_eq!(t[1] - t[0], Duration::from_secs(7));
}

/// The controller's sync wait is woken by the informers: with the paused clock, the
/// first reconcile runs at the instant the cache synced, not at a 100 ms poll.
#[tokio::test(start_paused = true)]
async fn first_reconcile_runs_at_sync_without_polling() {
    let source = FakeSource::<ConfigMap>::new();
    source.add(cm("a"));
    source.fail_lists(ListWatchError::Api(Box::new(
        kube::core::Status::failure("unavailable", "InternalError").with_code(500),
    )));
    let informer = informer(&source);
    let synced_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    {
        let synced_at = Arc::clone(&synced_at);
        informer
            .add_event_fn(move |ev: reflector_core::informer::Change<ConfigMap>| {
                if let reflector_core::informer::Change::Added {
                    is_in_initial_list: true,
                    ..
                } = ev
                {
                    *synced_at.lock().unwrap() = Some(Instant::now());
                }
            })
            .unwrap();
    }
    let record = Record::shared();
    let run = Running::spawn(
        Controller::new(informer),
        record_and_succeed,
        Arc::clone(&record),
    );
    tokio::time::sleep(Duration::from_millis(1_234)).await;
    source.clear_list_error();
    eventually("reconciled", || record.len() == 1).await;
    run.stop().await.unwrap();
    let synced = synced_at.lock().unwrap().expect("initial add seen");
    let reconciled = record.times(&key("a"))[0];
    assert!(
        reconciled.duration_since(synced) < Duration::from_millis(1),
        "first reconcile {:?} after sync",
        reconciled.duration_since(synced)
    );
}

/// A plain `Box<dyn Error>` (not `Send`) is a reconcile error too: the controller
/// only needs `Display`. Compiled, not run.
#[allow(dead_code)]
fn box_dyn_error_is_a_reconcile_error(informer: SharedIndexInformer<ConfigMap>) {
    async fn reconcile(
        req: Request<ConfigMap>,
        _: Arc<()>,
    ) -> Result<Action, Box<dyn std::error::Error>> {
        let cm = req.object.ok_or("deleted")?;
        let _: u32 = cm.metadata.name.as_deref().unwrap_or("x").parse()?;
        Ok(Action::done())
    }
    let run = Controller::new(informer).run(reconcile, Arc::new(()));
    fn spawnable<F: std::future::Future + Send + 'static>(_: F) {}
    spawnable(run);
}
