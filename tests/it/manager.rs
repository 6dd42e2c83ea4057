//! The `Manager` on the embedded API server, each replica a manager with its own
//! `kube::Client` (its own User-Agent, so the request log and faults can tell the
//! replicas apart) running two controllers: `configmaps` (ConfigMaps, owning a
//! Secret copy of each) and `secrets` (Secrets, the kind the first owns: one
//! informer for both). Time-bound tests run on tokio's paused clock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{
    Api, ListParams, ObjectList, ObjectMeta, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::{Resource, ResourceExt};
use reflector::controller::{Action, Controller, EventFilter, Request};
use reflector::informer::SharedIndexInformer;
use reflector::leader_election::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, LeaderElection, LeaderElectionConfig,
};
use reflector::listwatch::{ApiListerWatcher, ListWatchError, ListerWatcher};
use reflector::manager::{Manager, ManagerError, Task};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::support::namespaces::create_namespaces;
#[path = "../../reflector-core/tests/it/paused/mod.rs"]
mod paused;
use paused::until;

/// Where the objects live (the Leases go in each client's default namespace).
const NS: &str = "mgr";
const LEASE: &str = "operator";
/// The annotation a Secret copy carries: its ConfigMap's `data.v`.
const COPY_OF: &str = "example.com/v";

/// One reconcile: replica, controller, key, start, end, and the `v` it saw.
#[derive(Debug, Clone)]
struct Reconciled {
    replica: usize,
    controller: &'static str,
    key: String,
    start: Instant,
    end: Instant,
    seen: Option<String>,
}

type Log = Arc<Mutex<Vec<Reconciled>>>;

struct Ctx {
    replica: usize,
    client: kube::Client,
    log: Log,
    /// How long each reconcile takes.
    reconcile_time: Duration,
}

/// Logs one reconcile when dropped: at its end, or when it is aborted.
struct Logged<'a> {
    ctx: &'a Ctx,
    controller: &'static str,
    key: String,
    start: Instant,
    seen: Option<String>,
}

impl Drop for Logged<'_> {
    fn drop(&mut self) {
        self.ctx.log.lock().unwrap().push(Reconciled {
            replica: self.ctx.replica,
            controller: self.controller,
            key: self.key.clone(),
            start: self.start,
            end: Instant::now(),
            seen: self.seen.take(),
        });
    }
}

fn v_of_config_map(cm: &ConfigMap) -> Option<String> {
    cm.data.as_ref()?.get("v").cloned()
}

fn v_of_secret(s: &Secret) -> Option<String> {
    s.annotations().get(COPY_OF).cloned()
}

/// Keeps a Secret `<name>-copy` annotated with the ConfigMap's `v`, owned by it.
async fn reconcile_config_map(
    req: Request<ConfigMap>,
    ctx: Arc<Ctx>,
) -> Result<Action, kube::Error> {
    let _logged = Logged {
        ctx: &ctx,
        controller: "configmaps",
        key: req.key.to_string(),
        start: Instant::now(),
        seen: req.object.as_deref().and_then(v_of_config_map),
    };
    tokio::time::sleep(ctx.reconcile_time).await;
    let Some(cm) = req.object else {
        return Ok(Action::done());
    };
    let copy = Secret {
        metadata: ObjectMeta {
            name: Some(format!("{}-copy", cm.name_any())),
            namespace: cm.namespace(),
            annotations: Some(
                [(COPY_OF.to_owned(), v_of_config_map(&cm).unwrap_or_default())].into(),
            ),
            owner_references: cm.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    let api = Api::<Secret>::namespaced(ctx.client.clone(), NS);
    let params = PatchParams::apply("manager-test").force();
    api.patch(&copy.name_any(), &params, &Patch::Apply(&copy))
        .await?;
    Ok(Action::done())
}

/// Records the `v` each Secret carries.
async fn reconcile_secret(req: Request<Secret>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let _logged = Logged {
        ctx: &ctx,
        controller: "secrets",
        key: req.key.to_string(),
        start: Instant::now(),
        seen: req.object.as_deref().and_then(v_of_secret),
    };
    tokio::time::sleep(ctx.reconcile_time).await;
    Ok(Action::done())
}

/// A replica's leadership terms: start, and end once it ended.
type TermLog = Arc<Mutex<Vec<(Instant, Option<Instant>)>>>;

/// A replica's id and its terms.
type Terms = (usize, TermLog);

/// How a replica is made.
#[derive(Clone)]
struct Options {
    reconcile_time: Duration,
    release: bool,
    /// Whether the `secrets` controller runs on every replica.
    secrets_every_replica: bool,
    tasks: Vec<(&'static str, bool)>,
    metrics_server: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            reconcile_time: Duration::from_millis(200),
            release: true,
            secrets_every_replica: false,
            tasks: Vec::new(),
            metrics_server: false,
        }
    }
}

/// One replica: a manager with both controllers, its own client, its leadership
/// terms, and the tasks that run on it now.
struct Replica {
    id: usize,
    election: LeaderElection,
    stop: CancellationToken,
    run: JoinHandle<Result<(), ManagerError>>,
    terms: TermLog,
    watcher: JoinHandle<()>,
    /// Each task's name, and whether it runs now.
    running_tasks: Arc<Mutex<BTreeMap<&'static str, bool>>>,
    metrics_addr: Option<std::net::SocketAddr>,
    manager_health: reflector::metrics::Health,
}

fn agent(id: usize) -> String {
    format!("replica-{id}")
}

impl Replica {
    fn start(server: &ApiServer, id: usize, log: &Log, options: Options) -> Replica {
        let client = server.client_with_user_agent(&agent(id)).unwrap();
        let stop = CancellationToken::new();
        let config = LeaderElectionConfig::default()
            .identity(agent(id))
            .release_on_cancel(options.release);
        let mut manager = Manager::new(client.clone())
            .leader_election(LEASE, config)
            .unwrap()
            .graceful_shutdown_on(stop.clone().cancelled_owned());
        if options.metrics_server {
            manager = manager
                .metrics_server("127.0.0.1:0".parse().unwrap())
                .unwrap();
        }
        let ctx = Arc::new(Ctx {
            replica: id,
            client,
            log: Arc::clone(log),
            reconcile_time: options.reconcile_time,
        });
        // Each controller asks the factory for Secrets: one informer for both.
        let factory = manager.factory();
        let copies = Controller::new(factory.namespaced::<ConfigMap>(NS))
            .owns(factory.namespaced::<Secret>(NS))
            .name("configmaps");
        let mut secrets = Controller::new(factory.namespaced::<Secret>(NS)).name("secrets");
        manager.add(copies, reconcile_config_map, Arc::clone(&ctx));
        if options.secrets_every_replica {
            secrets = secrets.every_replica();
        }
        manager.add(secrets, reconcile_secret, ctx);
        let running_tasks = Arc::new(Mutex::new(BTreeMap::new()));
        for (name, every_replica) in options.tasks {
            let running = Arc::clone(&running_tasks);
            let mut task = Task::new(name, move |stop: CancellationToken| {
                let running = Arc::clone(&running);
                async move {
                    running.lock().unwrap().insert(name, true);
                    stop.cancelled().await;
                    running.lock().unwrap().insert(name, false);
                }
            });
            if every_replica {
                task = task.every_replica();
            }
            manager.add_task(task);
        }
        let election = manager.election().unwrap().clone();
        let terms = Arc::new(Mutex::new(Vec::new()));
        let watcher = tokio::spawn({
            let (mut transitions, terms) = (election.transitions(), Arc::clone(&terms));
            async move {
                while let Some(state) = transitions.next().await {
                    let mut terms = terms.lock().unwrap();
                    let open = matches!(terms.last(), Some((_, None)));
                    if state.is_leading() && !open {
                        terms.push((Instant::now(), None));
                    } else if !state.is_leading() && open {
                        terms.last_mut().unwrap().1 = Some(Instant::now());
                    }
                }
            }
        });
        let metrics_addr = manager.metrics_addr();
        let manager_health = manager.health().clone();
        Replica {
            id,
            election,
            stop,
            run: tokio::spawn(manager.run()),
            terms,
            watcher,
            running_tasks,
            metrics_addr,
            manager_health,
        }
    }

    fn terms(&self) -> Terms {
        (self.id, Arc::clone(&self.terms))
    }

    fn task_running(&self, name: &str) -> bool {
        self.running_tasks
            .lock()
            .unwrap()
            .get(name)
            .copied()
            .unwrap_or(false)
    }

    /// Stops the manager gracefully and waits for it.
    async fn stop(mut self) -> Result<(), ManagerError> {
        self.stop.cancel();
        let run = &mut self.run;
        run.await.unwrap()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.run.abort();
        self.watcher.abort();
    }
}

async fn server_with(config_maps: usize) -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    for i in 0..config_maps {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        cm.metadata.namespace = Some(NS.into());
        cm.data = Some([("v".to_owned(), "0".to_owned())].into());
        server.insert(&cm).unwrap();
    }
    server
}

fn leaders(replicas: &[&Replica]) -> Vec<usize> {
    replicas
        .iter()
        .filter(|r| r.election.is_leader())
        .map(|r| r.id)
        .collect()
}

/// Asserts that every reconcile of a leader-only controller started within a term
/// of its replica, and that no object was reconciled by two replicas at once.
fn assert_leader_only_and_never_at_once(replicas: &[Terms], log: &Log, leader_only: &[&str]) {
    let now = Instant::now();
    let log = log.lock().unwrap().clone();
    for r in &log {
        if !leader_only.contains(&r.controller) {
            continue;
        }
        let terms = replicas[r.replica].1.lock().unwrap().clone();
        assert!(
            terms
                .iter()
                .any(|&(s, e)| s <= r.start && r.start <= e.unwrap_or(now)),
            "replica {} reconciled {} ({}) outside its terms",
            r.replica,
            r.key,
            r.controller
        );
    }
    for a in &log {
        for b in log
            .iter()
            .filter(|b| b.replica != a.replica && b.controller == a.controller && b.key == a.key)
        {
            assert!(
                a.end <= b.start || b.end <= a.start,
                "{} {} reconciled by replicas {} and {} at once",
                a.controller,
                a.key,
                a.replica,
                b.replica
            );
        }
    }
}

/// Two replicas, both controllers leader-only: the follower's controllers never
/// reconcile; after a graceful hand-over the other replica's both do, and nothing
/// was reconciled outside a term or by both replicas at once.
#[tokio::test(start_paused = true)]
async fn manager_controllers_reconcile_only_while_leading() {
    let server = server_with(3).await;
    let log = Log::default();
    let a = Replica::start(&server, 0, &log, Options::default());
    until("a leads", DEFAULT_LEASE_DURATION, || a.election.is_leader()).await;
    let b = Replica::start(&server, 1, &log, Options::default());
    tokio::time::sleep(Duration::from_secs(10)).await;
    let by = |replica: usize, controller: &str| {
        log.lock()
            .unwrap()
            .iter()
            .filter(|r| r.replica == replica && r.controller == controller)
            .count()
    };
    assert!(by(0, "configmaps") >= 3 && by(0, "secrets") >= 3, "{log:?}");
    assert_eq!(
        (by(1, "configmaps"), by(1, "secrets")),
        (0, 0),
        "the follower reconciled"
    );
    assert!(!b.election.is_leader());

    let terms = [a.terms(), b.terms()];
    a.stop().await.unwrap();
    until("b leads", DEFAULT_LEASE_DURATION, || b.election.is_leader()).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        by(1, "configmaps") >= 3 && by(1, "secrets") >= 3,
        "the new leader reconciles every cached object in both controllers"
    );
    assert_eq!(b.terms.lock().unwrap().len(), 1);
    assert_leader_only_and_never_at_once(&terms, &log, &["configmaps", "secrets"]);
    let a_log: Vec<_> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.replica == 0)
        .cloned()
        .collect();
    let b_first = b.terms.lock().unwrap()[0].0;
    assert!(
        a_log.iter().all(|r| r.end <= b_first),
        "replica 0 still reconciled when replica 1 started leading"
    );
    b.stop().await.unwrap();
}

/// A leader whose renewals fail (500) stops leading by the renew deadline: both
/// of its controllers take no new key, their reconciles in flight are awaited
/// only until the lease could be taken by another replica, then aborted; once the
/// API answers again the replica is a candidate, leads again, and both
/// controllers reconcile again.
#[tokio::test(start_paused = true)]
async fn manager_lost_lease_drains_both_controllers_until_the_takeover_bound() {
    let server = Arc::new(server_with(1).await);
    let log = Log::default();
    let long = DEFAULT_LEASE_DURATION * 3;
    let options = Options {
        reconcile_time: long,
        ..Options::default()
    };
    let a = Replica::start(&server, 0, &log, options);
    until("a leads", DEFAULT_LEASE_DURATION, || a.election.is_leader()).await;
    // The ConfigMap's reconcile is in flight; a Secret gives the secrets controller
    // one too.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut secret = Secret::default();
    secret.metadata.name = Some("s".into());
    Api::<Secret>::namespaced(server.client(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let renewed_at = Instant::now();
    let fault = server.inject(
        Matcher::verb(Verb::Update)
            .resource("leases")
            .user_agent(agent(0))
            .every(),
        Fault::InternalError,
    );
    until("a steps down", DEFAULT_LEASE_DURATION, || {
        !a.election.is_leader()
    })
    .await;
    let stepped_down = Instant::now();
    assert!(stepped_down - renewed_at <= DEFAULT_RENEW_DEADLINE + Duration::from_secs(3));
    tokio::time::sleep(DEFAULT_LEASE_DURATION + Duration::from_secs(1)).await;
    {
        let log = log.lock().unwrap();
        for controller in ["configmaps", "secrets"] {
            let ended: Vec<_> = log
                .iter()
                .filter(|r| r.controller == controller && r.start < stepped_down)
                .collect();
            let r = ended.last().unwrap_or_else(|| {
                panic!("no {controller} reconcile in flight at the step-down has ended: {log:?}")
            });
            assert!(
                r.end > stepped_down && r.end - r.start < long,
                "{controller}: in flight at the step-down, aborted by the takeover bound: {r:?}"
            );
            assert!(
                r.end <= stepped_down + DEFAULT_LEASE_DURATION,
                "{controller} ran past the takeover bound: {:?} after the step-down",
                r.end - stepped_down
            );
        }
        assert!(
            log.iter().all(|r| r.start < stepped_down),
            "a reconcile started after the step-down"
        );
    }
    // The API answers again: a candidate again, it leads and reconciles again.
    server.faults().remove(fault);
    until("a leads again", DEFAULT_LEASE_DURATION * 3, || {
        a.election.is_leader()
    })
    .await;
    let count = log.lock().unwrap().len();
    let again = Instant::now();
    until(
        "both controllers reconcile again",
        DEFAULT_LEASE_DURATION * 6,
        || {
            let log = log.lock().unwrap();
            ["configmaps", "secrets"]
                .iter()
                .all(|c| log.iter().any(|r| r.controller == *c && r.start >= again))
        },
    )
    .await;
    assert!(log.lock().unwrap().len() > count);
}

/// On a follower, a task made with `every_replica` runs and a leader-only task does
/// not (nor do leader-only controllers, while an every-replica controller does);
/// on the leader both tasks run; after a hand-over they swap.
#[tokio::test(start_paused = true)]
async fn manager_every_replica_task_runs_on_a_follower() {
    let server = server_with(2).await;
    let log = Log::default();
    let options = Options {
        tasks: vec![("everywhere", true), ("leader", false)],
        secrets_every_replica: true,
        ..Options::default()
    };
    let a = Replica::start(&server, 0, &log, options.clone());
    until("a leads", DEFAULT_LEASE_DURATION, || a.election.is_leader()).await;
    let b = Replica::start(&server, 1, &log, options);
    until(
        "b's every-replica task runs",
        DEFAULT_LEASE_DURATION,
        || b.task_running("everywhere"),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(a.task_running("everywhere") && a.task_running("leader"));
    assert!(b.task_running("everywhere"), "every replica");
    assert!(
        !b.task_running("leader"),
        "a leader-only task ran on the follower"
    );
    let reconciled = |replica: usize, controller: &str| {
        log.lock()
            .unwrap()
            .iter()
            .any(|r| r.replica == replica && r.controller == controller)
    };
    assert!(
        reconciled(1, "secrets"),
        "the every-replica controller runs on the follower"
    );
    assert!(
        !reconciled(1, "configmaps"),
        "a leader-only controller ran on the follower"
    );

    let a_tasks = Arc::clone(&a.running_tasks);
    a.stop().await.unwrap();
    assert_eq!(
        a_tasks.lock().unwrap().clone(),
        BTreeMap::from([("everywhere", false), ("leader", false)]),
        "both stopped on shutdown"
    );
    until("b leads", DEFAULT_LEASE_DURATION, || b.election.is_leader()).await;
    until("b's leader-only task runs", DEFAULT_LEASE_DURATION, || {
        b.task_running("leader")
    })
    .await;
    assert!(b.task_running("everywhere"));
    b.stop().await.unwrap();
}

/// Two controllers of one manager watch Secrets (one owns them, the other
/// reconciles them): the manager lists and watches Secrets once.
#[tokio::test(start_paused = true)]
async fn manager_lists_a_kind_shared_by_two_controllers_once() {
    let server = server_with(2).await;
    let log = Log::default();
    let a = Replica::start(&server, 0, &log, Options::default());
    until(
        "both controllers reconciled",
        DEFAULT_LEASE_DURATION * 2,
        || {
            let log = log.lock().unwrap();
            log.iter().filter(|r| r.controller == "secrets").count() >= 2
        },
    )
    .await;
    let requests: Vec<_> = server
        .request_log()
        .into_iter()
        .filter(|e| e.user_agent == agent(0))
        .collect();
    let count = |verb: Verb, resource: &str| {
        requests
            .iter()
            .filter(|e| e.verb == verb && e.resource.as_deref() == Some(resource))
            .count()
    };
    assert_eq!(count(Verb::List, "secrets"), 1, "{requests:#?}");
    assert_eq!(count(Verb::Watch, "secrets"), 1);
    assert_eq!(count(Verb::List, "configmaps"), 1);
    assert_eq!(count(Verb::Watch, "configmaps"), 1);
    a.stop().await.unwrap();
}

/// The names a reconcile saw, in order.
type Order = Mutex<Vec<String>>;

async fn record_slowly(req: Request<ConfigMap>, order: Arc<Order>) -> Result<Action, kube::Error> {
    order.lock().unwrap().push(req.key.name().to_owned());
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(Action::done())
}

/// A controller run by a manager keeps its priority queue and its event filter:
/// with 40 ConfigMaps in the initial list and a second per reconcile, one created
/// once reconciling started is reconciled before half the backlog (without
/// priorities it would be last); then, under `labels_changed`, a data-only update
/// is not reconciled and a label change is.
#[tokio::test(start_paused = true)]
async fn manager_controller_keeps_its_priority_queue_and_filter() {
    const BACKLOG: usize = 40;
    let server = server_with(BACKLOG).await;
    let stop = CancellationToken::new();
    let client = server.client_with_user_agent(&agent(0)).unwrap();
    let mut manager = Manager::new(client).graceful_shutdown_on(stop.clone().cancelled_owned());
    let order: Arc<Order> = Arc::default();
    let config_maps = manager.factory().namespaced::<ConfigMap>(NS);
    let controller = Controller::new(config_maps).filter(EventFilter::labels_changed());
    manager.add(controller, record_slowly, Arc::clone(&order));
    let run = tokio::spawn(manager.run());
    until("reconciling started", Duration::from_secs(60), || {
        !order.lock().unwrap().is_empty()
    })
    .await;
    let api = Api::<ConfigMap>::namespaced(server.client(), NS);
    let mut live = ConfigMap::default();
    live.metadata.name = Some("live".into());
    api.create(&PostParams::default(), &live).await.unwrap();
    until(
        "every ConfigMap reconciled",
        Duration::from_secs(120),
        || order.lock().unwrap().len() == BACKLOG + 1,
    )
    .await;
    let position = order.lock().unwrap().iter().position(|n| n == "live");
    assert!(
        position.is_some_and(|p| p < BACKLOG / 2),
        "the live change waited behind the backlog: {order:?}"
    );

    let reconciled = |name: &str| order.lock().unwrap().iter().filter(|n| *n == name).count();
    let data = serde_json::json!({ "data": { "v": "1" } });
    api.patch("cm-0", &PatchParams::default(), &Patch::Merge(&data))
        .await
        .unwrap();
    let labels = serde_json::json!({ "metadata": { "labels": { "l": "1" } } });
    api.patch("cm-1", &PatchParams::default(), &Patch::Merge(&labels))
        .await
        .unwrap();
    until(
        "the label change reconciled",
        Duration::from_secs(60),
        || reconciled("cm-1") == 2,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(reconciled("cm-0"), 1, "a data-only update was reconciled");
    stop.cancel();
    run.await.unwrap().unwrap();
}

/// `/readyz` (served by the manager) fails while an informer has not synced,
/// passes once every informer synced, as leader and as follower, and says which.
#[tokio::test(start_paused = true)]
async fn manager_readyz_reflects_sync_and_leadership() {
    let server = server_with(1).await;
    // The first list of ConfigMaps takes a while: the informer is not synced yet.
    server.inject(
        Matcher::verb(Verb::List).resource("configmaps"),
        Fault::LatencyBeforeHeaders(Duration::from_secs(20)),
    );
    let log = Log::default();
    let options = Options {
        metrics_server: true,
        ..Options::default()
    };
    let a = Replica::start(&server, 0, &log, options.clone());
    until("a leads", DEFAULT_LEASE_DURATION, || a.election.is_leader()).await;
    let (status, body) = readyz(&a).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("[-]informer configmaps/ConfigMap failed"),
        "{body}"
    );
    assert!(body.contains("[+]informer secrets/Secret ok"), "{body}");
    assert!(
        body.contains("[+]leader-election operator ok (leading as replica-0)"),
        "{body}"
    );
    until("a ready", Duration::from_secs(60), || {
        a.manager_health.readiness().0
    })
    .await;
    let (status, body) = readyz(&a).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("[+]informer configmaps/ConfigMap ok"),
        "{body}"
    );
    assert!(body.contains("[+]informer configmaps/Secret ok"), "{body}");

    let b = Replica::start(&server, 1, &log, options);
    until("b ready", Duration::from_secs(60), || {
        b.manager_health.readiness().0
    })
    .await;
    let (status, body) = readyz(&b).await;
    assert_eq!(status, 200, "a follower is ready: {body}");
    assert!(
        body.contains("[+]leader-election operator ok (following replica-0)"),
        "{body}"
    );
    b.stop().await.unwrap();
    a.stop().await.unwrap();
}

/// `GET /readyz` on a replica's server: the status and the body.
async fn readyz(replica: &Replica) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = replica.metrics_addr.unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

/// The holder of the Lease, as stored.
fn holder(server: &ApiServer) -> Option<String> {
    server
        .get::<Lease>(Some("default"), LEASE)
        .unwrap()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
}

/// A ConfigMap lister-watcher that calls `on_watch_end` whenever a watch stream it
/// opened is dropped (its informer stopped, or re-watches).
struct Observed {
    inner: ApiListerWatcher<ConfigMap>,
    on_watch_end: Arc<dyn Fn() + Send + Sync>,
}

/// Calls the function when dropped.
struct WatchEnd(Arc<dyn Fn() + Send + Sync>);

impl Drop for WatchEnd {
    fn drop(&mut self) {
        (self.0)();
    }
}

impl ListerWatcher<ConfigMap> for Observed {
    async fn list(&self, params: &ListParams) -> Result<ObjectList<ConfigMap>, ListWatchError> {
        self.inner.list(params).await
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<BoxStream<'static, Result<WatchEvent<ConfigMap>, ListWatchError>>, ListWatchError>
    {
        let events = self.inner.watch(params, resource_version).await?;
        let end = WatchEnd(Arc::clone(&self.on_watch_end));
        Ok(events
            .map(move |event| {
                let _ = &end;
                event
            })
            .boxed())
    }
}

/// At the end of a watch: the Lease's holder, and whether the factory's informer
/// had stopped.
type WatchEndSeen = (Option<String>, bool);

/// What the shutdown-order test's reconcile shares.
struct OrderCtx {
    server: Arc<ApiServer>,
    started: tokio::sync::Notify,
    /// The Lease's holder when the in-flight reconcile finished.
    holder_at_reconcile_end: Mutex<Option<Option<String>>>,
}

async fn slow_reconcile(_: Request<ConfigMap>, ctx: Arc<OrderCtx>) -> Result<Action, kube::Error> {
    ctx.started.notify_waiters();
    tokio::time::sleep(Duration::from_secs(3)).await;
    *ctx.holder_at_reconcile_end.lock().unwrap() = Some(holder(&ctx.server));
    Ok(Action::done())
}

async fn quick_reconcile(_: Request<Secret>, _: Arc<OrderCtx>) -> Result<Action, kube::Error> {
    Ok(Action::done())
}

/// A graceful shutdown with a reconcile in flight: the reconcile finishes while the
/// Lease is still held; the Lease is given up before any informer stops (a
/// controller's own informer's watch ends with the holder already cleared, while
/// the factory's informers still run); and the factory's informers stop after.
#[tokio::test(start_paused = true)]
async fn manager_shuts_down_in_order() {
    let server = Arc::new(server_with(1).await);
    let client = server.client_with_user_agent(&agent(0)).unwrap();
    let stop = CancellationToken::new();
    let config = LeaderElectionConfig::default()
        .identity(agent(0))
        .release_on_cancel(true);
    let mut manager = Manager::new(client.clone())
        .leader_election(LEASE, config)
        .unwrap()
        .graceful_shutdown_on(stop.clone().cancelled_owned());
    let secrets = manager.factory().namespaced::<Secret>(NS);
    // At each end of a watch of the hand-built informer: the Lease's holder, and
    // whether the factory's Secret informer had stopped.
    let watch_ends: Arc<Mutex<Vec<WatchEndSeen>>> = Arc::default();
    let on_watch_end = {
        let (server, secrets, ends) = (
            Arc::clone(&server),
            secrets.clone(),
            Arc::clone(&watch_ends),
        );
        Arc::new(move || {
            let seen = (holder(&server), secrets.is_stopped());
            ends.lock().unwrap().push(seen);
        })
    };
    let config_maps = SharedIndexInformer::new(Observed {
        inner: ApiListerWatcher::new(Api::namespaced(client, NS)),
        on_watch_end,
    });
    let ctx = Arc::new(OrderCtx {
        server: Arc::clone(&server),
        started: tokio::sync::Notify::new(),
        holder_at_reconcile_end: Mutex::new(None),
    });
    let started = ctx.started.notified();
    manager.add(
        Controller::new(config_maps).name("configmaps"),
        slow_reconcile,
        Arc::clone(&ctx),
    );
    manager.add(
        Controller::new(secrets.clone()).name("secrets"),
        quick_reconcile,
        Arc::clone(&ctx),
    );
    let run = tokio::spawn(manager.run());
    tokio::time::timeout(DEFAULT_LEASE_DURATION, started)
        .await
        .expect("the reconcile started");
    assert!(watch_ends.lock().unwrap().is_empty());
    stop.cancel();
    run.await.unwrap().unwrap();

    assert_eq!(
        *ctx.holder_at_reconcile_end.lock().unwrap(),
        Some(Some(agent(0))),
        "the reconcile in flight finished while the Lease was held"
    );
    assert_eq!(
        watch_ends.lock().unwrap().clone(),
        [(Some(String::new()), false)],
        "the informers stopped after the Lease was given up, the factory's after the controller's own"
    );
    assert!(secrets.is_stopped(), "the factory's informers stopped");
    assert_eq!(holder(&server), Some(String::new()));
}

/// Two replicas of the two-controller manager on one server, with lost races (409
/// on Lease updates), 500s (on the copies' writes, a watch, and the leader's
/// renewals, forcing hand-overs) and dropped watches, while the ConfigMaps keep
/// changing: no object is reconciled by both replicas at once, nothing outside a
/// term, and in the end every ConfigMap's last value is in its copy, and the last
/// reconcile of each ConfigMap and of each copy saw it.
#[tokio::test(start_paused = true)]
async fn manager_two_replicas_with_faults_reconcile_every_change_never_at_once() {
    const OBJECTS: usize = 4;
    const ROUNDS: usize = 6;
    let server = Arc::new(server_with(OBJECTS).await);
    let log = Log::default();
    let options = Options {
        reconcile_time: Duration::from_millis(300),
        ..Options::default()
    };
    let replicas = [
        Replica::start(&server, 0, &log, options.clone()),
        Replica::start(&server, 1, &log, options),
    ];
    let all: Vec<&Replica> = replicas.iter().collect();
    until("one leads", DEFAULT_LEASE_DURATION * 2, || {
        leaders(&all).len() == 1
    })
    .await;
    server.inject(
        Matcher::verb(Verb::Update).resource("leases").times(3),
        Fault::Conflict,
    );
    server.inject(
        Matcher::verb(Verb::Patch).resource("secrets").times(6),
        Fault::InternalError,
    );
    server.inject(
        Matcher::verb(Verb::Watch).resource("secrets").times(2),
        Fault::InternalError,
    );
    let api = Api::<ConfigMap>::namespaced(server.client(), NS);
    let mut hand_overs = 0;
    for round in 1..=ROUNDS {
        for i in 0..OBJECTS {
            let patch = serde_json::json!({ "data": { "v": round.to_string() } });
            api.patch(
                &format!("cm-{i}"),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .unwrap();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        server.faults().drop_watches();
        if round % 2 == 0 {
            // The leader's renewals fail until it steps down; the other takes over.
            let leader = leaders(&all)[0];
            let fault = server.inject(
                Matcher::verb(Verb::Update)
                    .resource("leases")
                    .user_agent(agent(leader))
                    .every(),
                Fault::InternalError,
            );
            until("the leader steps down", DEFAULT_LEASE_DURATION, || {
                !replicas[leader].election.is_leader()
            })
            .await;
            until("the other leads", DEFAULT_LEASE_DURATION * 3, || {
                leaders(&all) == [1 - leader]
            })
            .await;
            server.faults().remove(fault);
            hand_overs += 1;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let last = ROUNDS.to_string();
    let last_seen = |controller: &str, key: &str| {
        let log = log.lock().unwrap();
        let done = log
            .iter()
            .filter(|r| r.controller == controller && r.key == key);
        done.max_by_key(|r| r.end).and_then(|r| r.seen.clone())
    };
    until("every change reconciled", Duration::from_secs(120), || {
        (0..OBJECTS).all(|i| {
            let copy = server
                .get::<Secret>(Some(NS), &format!("cm-{i}-copy"))
                .unwrap();
            copy.as_ref().and_then(v_of_secret).as_deref() == Some(last.as_str())
                && last_seen("configmaps", &format!("ConfigMap {NS}/cm-{i}")).as_deref()
                    == Some(last.as_str())
                && last_seen("secrets", &format!("Secret {NS}/cm-{i}-copy")).as_deref()
                    == Some(last.as_str())
        })
    })
    .await;
    assert_eq!(hand_overs, ROUNDS / 2);
    let terms = [replicas[0].terms(), replicas[1].terms()];
    assert_leader_only_and_never_at_once(&terms, &log, &["configmaps", "secrets"]);
    let by: std::collections::BTreeSet<usize> =
        log.lock().unwrap().iter().map(|r| r.replica).collect();
    assert_eq!(by.len(), 2, "the hand-overs moved the reconciling");
    let [a, b] = replicas;
    a.stop().await.unwrap();
    b.stop().await.unwrap();
}
