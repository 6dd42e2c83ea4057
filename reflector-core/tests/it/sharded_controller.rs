//! Sharded controllers on the embedded API server, on tokio's paused clock:
//! ConfigMaps (3,000 for the split, 900 for membership changes), each owning one
//! Secret, split over replicas that each run a
//! `Controller::sharded` (with its own client), a primary `Sharder` and an owned one.
//! A global reconcile log (start and end instants per key per replica) shows that no
//! key is ever reconciled by two replicas at overlapping times: while the ring is
//! stable, when a replica is aborted (its objects move once its lease expires), when
//! one stops gracefully (they move at once), and when a fourth joins (each moved
//! object goes through drain → acknowledgement → relabel while reconciles run).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use prometheus_client::registry::Registry;
use reflector_core::controller::{Action, Controller, ControllerError, Request};
use reflector_core::informer::{InformerFactory, InformerScope, SharedIndexInformer};
use reflector_core::leader_election::LeaderElectionConfig;
use reflector_core::metrics::{Metrics, render_metrics};
use reflector_core::sharding::{Ring, Sharder, shard_key, winner};
use reflector_testkit::ApiServer;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::paused::until;
use crate::ring::{
    History, LEASE_NS, NS, RING, SECS, drain_of, label_of, objects, record_history, set,
};
use crate::support::namespaces::create_namespaces;

/// How long one reconcile takes (paused time), so reconciles are in flight.
const RECONCILE_TIME: Duration = Duration::from_secs(1);
/// Every key is reconciled again this long after its reconcile.
const REQUEUE: Duration = Duration::from_secs(3);
const CONCURRENCY: usize = 400;

/// One reconcile: of `key`, by `shard`, from `start` until `end` (`None` while it
/// runs).
struct Run {
    key: String,
    shard: String,
    start: Instant,
    end: Option<Instant>,
}

/// Every reconcile of every replica.
#[derive(Default)]
struct Log {
    entries: Mutex<Vec<Run>>,
    /// Reconciles that got no object (none is deleted in these tests), or one
    /// carrying the drain annotation (a shard must not start those).
    violations: Mutex<Vec<String>>,
}

impl Log {
    /// Ends the reconciles `shard` still runs at `at` (it was aborted).
    fn close(&self, shard: &str, at: Instant) {
        for run in self.entries.lock().unwrap().iter_mut() {
            if run.shard == shard && run.end.is_none() {
                run.end = Some(at);
            }
        }
    }

    /// The shards that started a reconcile of `key` at or after `since`.
    fn reconcilers_since(&self, since: Instant) -> HashMap<String, BTreeSet<String>> {
        let mut by_key: HashMap<String, BTreeSet<String>> = HashMap::new();
        for run in self.entries.lock().unwrap().iter() {
            if run.start >= since {
                by_key
                    .entry(run.key.clone())
                    .or_default()
                    .insert(run.shard.clone());
            }
        }
        by_key
    }

    /// Asserts that no key was reconciled by two shards at overlapping times, and
    /// that every reconcile had its object, never draining.
    fn assert_no_overlap(&self) {
        let entries = self.entries.lock().unwrap();
        let mut by_key: HashMap<&str, Vec<(Instant, Instant, &str)>> = HashMap::new();
        let now = Instant::now();
        for run in entries.iter() {
            by_key.entry(&run.key).or_default().push((
                run.start,
                run.end.unwrap_or(now),
                &run.shard,
            ));
        }
        for (key, mut runs) in by_key {
            runs.sort();
            // The latest end of each shard's reconciles so far.
            let mut ends: HashMap<&str, Instant> = HashMap::new();
            for (start, end, shard) in runs {
                for (other, other_end) in &ends {
                    assert!(
                        *other == shard || *other_end <= start,
                        "{key}: {other} reconciled until {other_end:?}, {shard} started at {start:?}"
                    );
                }
                let e = ends.entry(shard).or_insert(end);
                *e = (*e).max(end);
            }
        }
        assert_eq!(*self.violations.lock().unwrap(), Vec::<String>::new());
    }
}

struct Ctx {
    shard: String,
    log: Arc<Log>,
}

async fn reconcile(req: Request<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Infallible> {
    let key = req.key.key().as_str().to_owned();
    let violation = match req.object.as_deref() {
        None => Some("no object"),
        Some(cm) if drain_of(cm).is_some() => Some("draining"),
        Some(_) => None,
    };
    if let Some(what) = violation {
        ctx.log
            .violations
            .lock()
            .unwrap()
            .push(format!("{key}: {what}"));
    }
    let at = {
        let mut entries = ctx.log.entries.lock().unwrap();
        entries.push(Run {
            key,
            shard: ctx.shard.clone(),
            start: Instant::now(),
            end: None,
        });
        entries.len() - 1
    };
    tokio::time::sleep(RECONCILE_TIME).await;
    ctx.log.entries.lock().unwrap()[at].end = Some(Instant::now());
    Ok(Action::requeue_after(REQUEUE))
}

/// `n` ConfigMaps `cm-<i>`, each the controller owner of a Secret `sec-<i>`.
async fn server_with(n: usize) -> ApiServer {
    let server = ApiServer::start().await.expect("server");
    create_namespaces(&server.client(), &[NS, LEASE_NS]).await;
    let cms: Vec<ConfigMap> = (0..n)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("cm-{i}"), "namespace": NS, "uid": format!("uid-{i}")},
                "data": {"k": "v"}
            }))
            .unwrap()
        })
        .collect();
    let secrets: Vec<Secret> = (0..n)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {
                    "name": format!("sec-{i}"),
                    "namespace": NS,
                    "ownerReferences": [{
                        "apiVersion": "v1", "kind": "ConfigMap", "name": format!("cm-{i}"),
                        "uid": format!("uid-{i}"), "controller": true,
                    }],
                },
            }))
            .unwrap()
        })
        .collect();
    server.insert_many(&cms).unwrap();
    server.insert_many(&secrets).unwrap();
    server
}

/// One replica with its own client: a sharded controller (which runs the ring) on
/// its share of ConfigMaps and Secrets, and, once started, the two sharders.
struct Replica {
    shard: String,
    ring: Ring,
    factory: InformerFactory,
    primaries: SharedIndexInformer<ConfigMap>,
    children: SharedIndexInformer<Secret>,
    stop: CancellationToken,
    controller: JoinHandle<Result<(), ControllerError>>,
    sharders: Vec<JoinHandle<()>>,
    sharding: Arc<Sharder<ConfigMap>>,
    metrics: Metrics,
}

impl Replica {
    fn start(server: &ApiServer, shard: &str, log: &Arc<Log>, metrics: &Metrics) -> Replica {
        let client = server.client_with_user_agent(shard).unwrap();
        let ring = Ring::new(
            Api::<Lease>::namespaced(client.clone(), LEASE_NS),
            RING,
            shard,
            LeaderElectionConfig::default(),
        )
        .unwrap();
        let factory = InformerFactory::new(client);
        let sharding = Arc::new(
            Sharder::<ConfigMap>::new(&ring, &factory)
                .unwrap()
                .metrics(metrics),
        );
        let mine = InformerScope::default().labels(ring.selector());
        let primaries = factory.scoped::<ConfigMap>(&mine);
        let children = factory.scoped::<Secret>(&mine);
        let stop = CancellationToken::new();
        let controller = Controller::new(primaries.clone())
            .owns(children.clone())
            .sharded(&ring)
            .concurrency(CONCURRENCY)
            .metrics(metrics)
            .graceful_shutdown_on(stop.clone().cancelled_owned());
        let ctx = Arc::new(Ctx {
            shard: shard.to_owned(),
            log: Arc::clone(log),
        });
        let controller = tokio::spawn(controller.run(reconcile, ctx));
        Replica {
            shard: shard.to_owned(),
            ring,
            factory,
            primaries,
            children,
            stop,
            controller,
            sharders: Vec::new(),
            sharding,
            metrics: metrics.clone(),
        }
    }

    /// Starts the primary and the owned sharder (after the ring is complete, so
    /// the first assignment is final).
    fn start_sharders(&mut self) {
        let owned = Sharder::<Secret>::owned(&self.ring, &self.factory)
            .unwrap()
            .metrics(&self.metrics);
        self.factory.start();
        let (primary, stop) = (Arc::clone(&self.sharding), self.stop.clone());
        self.sharders.push(tokio::spawn(
            async move { primary.run(stop).await.unwrap() },
        ));
        let stop = self.stop.clone();
        self.sharders
            .push(tokio::spawn(async move { owned.run(stop).await.unwrap() }));
    }

    fn is_sharder(&self) -> bool {
        self.sharding.election().is_leader()
    }

    /// The keys of this replica's cached primaries.
    fn share(&self) -> BTreeSet<String> {
        self.primaries
            .lister()
            .list()
            .iter()
            .map(|cm| format!("{NS}/{}", cm.metadata.name.as_deref().unwrap()))
            .collect()
    }

    /// Whether this replica caches exactly the children of its cached primaries.
    fn children_follow(&self) -> bool {
        let share = self.share();
        let children = self.children.lister().list();
        let owners: BTreeSet<String> = children
            .iter()
            .map(|s| shard_key(&s.metadata).unwrap().as_str().to_owned())
            .collect();
        children.len() == share.len() && owners == share
    }

    /// Killed: no reconcile finishes, no lease is released.
    fn abort(self, log: &Log) {
        self.controller.abort();
        for s in self.sharders {
            s.abort();
        }
        log.close(&self.shard, Instant::now());
    }

    async fn stop(self) {
        self.stop.cancel();
        self.controller.await.unwrap().unwrap();
        for s in self.sharders {
            s.await.unwrap();
        }
    }
}

/// Key → the shard rendezvous hashing picks among `members`.
fn winners(cms: &[ConfigMap], members: &BTreeSet<String>) -> BTreeMap<String, String> {
    cms.iter()
        .map(|cm| {
            let key = shard_key(&cm.metadata).unwrap();
            (
                format!("{NS}/{}", cm.metadata.name.as_deref().unwrap()),
                winner(key.as_str(), members).unwrap().clone(),
            )
        })
        .collect()
}

/// Waits until every replica caches exactly the primaries (and their children)
/// the ring's members win, with no drain pending.
async fn converged(server: &ApiServer, replicas: &[Replica], limit: Duration) {
    let members: BTreeSet<String> = replicas.iter().map(|r| r.shard.clone()).collect();
    let want = winners(&objects(server).await, &members);
    let start = Instant::now();
    loop {
        let done = replicas.iter().all(|r| {
            let share = r.share();
            share.len() == want.values().filter(|w| **w == r.shard).count()
                && share.iter().all(|k| want[k] == r.shard)
                && r.children_follow()
        }) && objects(server)
            .await
            .iter()
            .all(|cm| drain_of(cm).is_none() && label_of(cm).is_some());
        if done {
            return;
        }
        assert!(start.elapsed() < limit, "not converged within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts `shards`, waits until each sees the whole ring, then starts the
/// sharders and waits for the assignment to settle.
async fn start_ring(
    server: &ApiServer,
    shards: &[&str],
    log: &Arc<Log>,
    metrics: &Metrics,
) -> Vec<Replica> {
    let mut replicas: Vec<Replica> = shards
        .iter()
        .map(|s| Replica::start(server, s, log, metrics))
        .collect();
    let all = set(shards);
    until("every replica sees the whole ring", SECS(10), || {
        replicas.iter().all(|r| r.ring.members() == all)
    })
    .await;
    for r in &mut replicas {
        r.start_sharders();
    }
    converged(server, &replicas, SECS(60)).await;
    replicas
}

async fn stop_all(replicas: Vec<Replica>) {
    for r in replicas {
        r.stop().await;
    }
}

/// The number of primaries, for the split across three replicas.
const N: usize = 3000;
/// Fewer for the membership changes (the issue names no number there), to keep the
/// suite's real time short.
const N_CHANGE: usize = 900;

/// Three replicas on 3,000 ConfigMaps with a Secret each: each caches and
/// reconciles 1,000 ± 15% of the primaries and exactly their children, every
/// primary is reconciled (by its shard only), and no key is in two replicas'
/// overlapping reconciles.
#[tokio::test(start_paused = true)]
async fn three_replicas_split_the_objects_and_never_overlap() {
    let server = server_with(N).await;
    let log = Arc::new(Log::default());
    let replicas = start_ring(&server, &["a", "b", "c"], &log, &Metrics::new()).await;
    let settled = Instant::now();
    tokio::time::sleep(REQUEUE * 2).await;

    let mut all = BTreeSet::new();
    for r in &replicas {
        let share = r.share();
        assert!(
            (850..=1150).contains(&share.len()),
            "{}: {}",
            r.shard,
            share.len()
        );
        all.extend(share);
    }
    assert_eq!(all.len(), N);
    // Since the assignment settled, every key is reconciled, by its shard alone.
    let by_key = log.reconcilers_since(settled);
    assert_eq!(by_key.len(), N, "every primary reconciled");
    for r in &replicas {
        for key in r.share() {
            assert_eq!(by_key[&key], set(&[&r.shard]), "{key}");
        }
    }
    log.assert_no_overlap();
    stop_all(replicas).await;
}

/// The victim's primaries, and the instant by which each was first reconciled by
/// another replica after `since` (waiting up to `limit`).
async fn taken_over(
    log: &Log,
    victim: &str,
    keys: &BTreeSet<String>,
    since: Instant,
    limit: Duration,
) -> Duration {
    let taken = || {
        let by_key = log.reconcilers_since(since);
        keys.iter()
            .all(|k| by_key.get(k).is_some_and(|s| s.iter().any(|s| s != victim)))
    };
    until("the others reconcile the victim's objects", limit, taken).await;
    since.elapsed()
}

/// Three converged replicas on `N_CHANGE` primaries: the two that stay (one of
/// them the sharder) and the one to take away.
async fn three_and_one_to_leave() -> (ApiServer, Arc<Log>, Vec<Replica>, Replica) {
    let server = server_with(N_CHANGE).await;
    let log = Arc::new(Log::default());
    let mut replicas = start_ring(&server, &["a", "b", "c"], &log, &Metrics::new()).await;
    let at = replicas.iter().position(|r| !r.is_sharder()).unwrap();
    let leaver = replicas.remove(at);
    (server, log, replicas, leaver)
}

/// A replica is aborted (its lease not released): its objects stay put while its
/// lease is valid, then are reconciled by the others within the lease duration
/// (15 s) plus one retry period (2 s) of the abort (its last renewal was no later),
/// with no overlap.
#[tokio::test(start_paused = true)]
async fn an_aborted_replicas_objects_move_once_its_lease_expires() {
    let (server, log, replicas, victim) = three_and_one_to_leave().await;
    let (shard, keys) = (victim.shard.clone(), victim.share());
    let died = Instant::now();
    victim.abort(&log);

    tokio::time::sleep(SECS(12)).await;
    let early = log.reconcilers_since(died);
    assert!(
        keys.iter().all(|k| !early.contains_key(k)),
        "moved before the lease expired"
    );
    let took = taken_over(&log, &shard, &keys, died, SECS(17)).await;
    assert!(took <= SECS(17), "{took:?}");
    converged(&server, &replicas, SECS(5)).await;
    log.assert_no_overlap();
    stop_all(replicas).await;
}

/// A replica stops gracefully: its reconciles end, then its lease is released, and
/// the others take its objects at once (well before a lease could expire), with
/// no overlap.
#[tokio::test(start_paused = true)]
async fn a_stopped_replica_hands_over_without_waiting_for_expiry() {
    let (server, log, replicas, leaver) = three_and_one_to_leave().await;
    let (shard, keys) = (leaver.shard.clone(), leaver.share());
    let stopped = Instant::now();
    leaver.stop().await;
    let took = taken_over(&log, &shard, &keys, stopped, SECS(5)).await;
    assert!(took < SECS(5), "{took:?}");
    converged(&server, &replicas, SECS(5)).await;
    log.assert_no_overlap();
    stop_all(replicas).await;
}

/// The value of the sample `name{ring="cms"}` in `text` (0 if it has none yet).
fn sample(text: &str, name: &str) -> u64 {
    let prefix = format!("{name}{{ring=\"{RING}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |v| v.parse().unwrap())
}

/// Asserts that each of `movers` went from its label in `before` through the drain
/// protocol (drain annotation naming `d`, then label and annotation removed, then
/// labelled `d`) and every other object kept its label; answers how many movers'
/// drains met a reconcile of their old shard in flight.
fn assert_drained_through_the_protocol(
    before: &BTreeMap<String, String>,
    movers: &BTreeSet<&String>,
    history: &History<(Option<String>, Option<String>)>,
    log: &Log,
) -> usize {
    let history = history.lock().unwrap();
    let entries = log.entries.lock().unwrap();
    let mut in_flight_at_drain = 0;
    for (key, old) in before {
        let seen = &history[key.strip_prefix(&format!("{NS}/")).unwrap()];
        let states: Vec<(Option<&str>, Option<&str>)> = seen
            .iter()
            .map(|(_, (l, d))| (l.as_deref(), d.as_deref()))
            .collect();
        let tail = &states[states
            .iter()
            .position(|s| *s == (Some(old.as_str()), None))
            .unwrap()..];
        if movers.contains(key) {
            assert_eq!(
                tail,
                [
                    (Some(old.as_str()), None),
                    (Some(old.as_str()), Some("d")),
                    (None, None),
                    (Some("d"), None)
                ],
                "{key}"
            );
            let drained = seen.iter().find(|(_, (_, d))| d.is_some()).unwrap().0;
            in_flight_at_drain += entries
                .iter()
                .filter(|r| {
                    r.key == *key
                        && r.shard == *old
                        && r.start <= drained
                        && r.end.is_none_or(|e| e > drained)
                })
                .count();
        } else {
            assert_eq!(tail, [(Some(old.as_str()), None)], "{key} should stay");
        }
    }
    in_flight_at_drain
}

/// A fourth replica joins while every key is being reconciled: at most 30% of the
/// objects move, each through the drain protocol (its old label gets the drain
/// annotation naming `d`, then label and annotation go, then it is labelled `d`),
/// some of them while their old shard was reconciling them, and no key is in two
/// replicas' overlapping reconciles. The sharding metrics count the drains started
/// and acknowledged, and the ring's size.
#[tokio::test(start_paused = true)]
async fn a_joining_replica_takes_its_objects_through_drains() {
    let server = server_with(N_CHANGE).await;
    let log = Arc::new(Log::default());
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let mut replicas = start_ring(&server, &["a", "b", "c"], &log, &metrics).await;
    let (_history_factory, history) = record_history(&server, |cm| (label_of(cm), drain_of(cm)));
    let before: BTreeMap<String, String> = objects(&server)
        .await
        .iter()
        .map(|cm| {
            (
                format!("{NS}/{}", cm.metadata.name.as_deref().unwrap()),
                label_of(cm).unwrap(),
            )
        })
        .collect();
    let drains_before = sample(
        &render_metrics(&registry),
        "reflector_sharding_drains_started_total",
    );
    assert_eq!(drains_before, 0);

    let mut d = Replica::start(&server, "d", &log, &metrics);
    until("everyone sees d", SECS(10), || {
        replicas.iter().all(|r| r.ring.members().contains("d")) && d.ring.members().len() == 4
    })
    .await;
    d.start_sharders();
    replicas.push(d);
    converged(&server, &replicas, SECS(60)).await;

    let want = winners(&objects(&server).await, &set(&["a", "b", "c", "d"]));
    let movers: BTreeSet<&String> = before.keys().filter(|k| before[*k] != want[*k]).collect();
    assert!(
        !movers.is_empty() && movers.len() * 10 <= N_CHANGE * 3,
        "{} moved",
        movers.len()
    );
    let in_flight_at_drain = assert_drained_through_the_protocol(&before, &movers, &history, &log);
    assert!(in_flight_at_drain > 0, "no drain met a reconcile in flight");
    log.assert_no_overlap();

    let text = render_metrics(&registry);
    let moved = movers.len() as u64;
    assert_eq!(
        sample(&text, "reflector_sharding_drains_started_total"),
        moved
    );
    assert_eq!(
        sample(&text, "reflector_sharding_drains_acknowledged_total"),
        moved
    );
    assert_eq!(sample(&text, "reflector_sharding_ring_members"), 4);
    // Every primary and child labelled once, then each mover and its child again.
    assert_eq!(
        sample(&text, "reflector_sharding_assignments_total"),
        2 * (N_CHANGE as u64 + moved)
    );
    // The movers' drains, and their children relabelled at once.
    assert_eq!(sample(&text, "reflector_sharding_moves_total"), 2 * moved);
    stop_all(replicas).await;
}

/// A context for shard `a` whose log nobody reads.
fn unlogged() -> Arc<Ctx> {
    Arc::new(Ctx {
        shard: "a".into(),
        log: Arc::default(),
    })
}

/// A sharded controller whose informers do not select the shard's label does not
/// start: a typed error names the informer. One made by `for_kind` selects it.
#[tokio::test]
async fn an_unsharded_informer_is_a_typed_error() {
    let server = server_with(0).await;
    let ring = Ring::new(
        Api::<Lease>::namespaced(server.client(), LEASE_NS),
        RING,
        "a",
        LeaderElectionConfig::default(),
    )
    .unwrap();
    let factory = InformerFactory::new(server.client());
    let mine = InformerScope::default().labels(ring.selector());
    let cases = [
        (
            Controller::new(factory.informer::<ConfigMap>()),
            Some("configmap/ConfigMap"),
        ),
        (
            Controller::new(factory.scoped::<ConfigMap>(&mine)).owns(factory.informer::<Secret>()),
            Some("configmap/Secret"),
        ),
    ];
    for (controller, informer) in cases {
        let err = controller
            .sharded(&ring)
            .run(reconcile, unlogged())
            .await
            .unwrap_err();
        match err {
            ControllerError::Sharding { informer: i, .. } => assert_eq!(i.as_deref(), informer),
            other => panic!("{other}"),
        }
    }
    // for_kind remakes its own informer with the selector: it starts (and stops).
    let stop = CancellationToken::new();
    stop.cancel();
    Controller::<ConfigMap>::for_kind(server.client())
        .sharded(&ring)
        .graceful_shutdown_on(stop.cancelled_owned())
        .run(reconcile, unlogged())
        .await
        .unwrap();
}
