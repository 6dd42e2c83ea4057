//! Lease leader election on the embedded API server, each replica a `Manager` with
//! one controller and its own `kube::Client`, on tokio's paused clock: one leader
//! at a time (no two replicas
//! reconcile in overlapping terms), hand-over with and without release, a leader
//! whose renewals fail steps down by the renew deadline before anyone takes over,
//! lost races are not errors, expiry is judged on the local clock, and the lease
//! record, the metric and `/readyz` say who leads.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use prometheus_client::registry::Registry;
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::leader_election::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, LeaderElection,
    LeaderElectionConfig, LeaderElectionError, LeaderState,
};
use reflector_core::manager::{Manager, ManagerError};
use reflector_core::metrics::{Health, Metrics, render_metrics};
use reflector_core::object::ObjectKey;
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::paused::until;
use crate::support::clients::replica_client;
use crate::support::namespaces::create_namespaces;

const LEASE: &str = "widgets";
const NS: &str = "le";
/// How long each reconcile takes.
const RECONCILE_TIME: Duration = Duration::from_millis(700);

fn config(id: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::default().identity(id)
}

fn election(server: &ApiServer, config: LeaderElectionConfig) -> LeaderElection {
    LeaderElection::new(Api::namespaced(server.client(), NS), LEASE, config).unwrap()
}

fn lease(server: &ApiServer) -> Option<LeaseSpec> {
    server
        .get::<Lease>(Some(NS), LEASE)
        .unwrap()
        .and_then(|l| l.spec)
}

fn holder(server: &ApiServer) -> Option<String> {
    lease(server).and_then(|s| s.holder_identity)
}

/// A replica's leadership terms: start, and end once it ended.
type Terms = Arc<Mutex<Vec<(Instant, Option<Instant>)>>>;

/// Every reconcile: replica, key, start, end.
type ReconcileLog = Arc<Mutex<Vec<(usize, ObjectKey, Instant, Instant)>>>;

struct Ctx {
    replica: usize,
    log: ReconcileLog,
    reconcile_time: Duration,
}

/// Logs one reconcile when dropped: at its end, or when it is aborted.
struct Logged {
    ctx: Arc<Ctx>,
    key: ObjectKey,
    start: Instant,
}

impl Drop for Logged {
    fn drop(&mut self) {
        self.ctx.log.lock().unwrap().push((
            self.ctx.replica,
            self.key.clone(),
            self.start,
            Instant::now(),
        ));
    }
}

async fn reconcile(req: Request<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, kube::Error> {
    let reconcile_time = ctx.reconcile_time;
    let _logged = Logged {
        ctx,
        key: req.key.key().clone(),
        start: Instant::now(),
    };
    tokio::time::sleep(reconcile_time).await;
    // Keep reconciling while leading, so every term has reconciles to check.
    Ok(Action::requeue_after(Duration::from_secs(1)))
}

/// One replica: a manager running a leader-only controller, with its own client,
/// its leadership terms as its election reported them, and its metrics and
/// readiness.
struct Replica {
    id: usize,
    election: LeaderElection,
    stop: CancellationToken,
    run: JoinHandle<Result<(), ManagerError>>,
    terms: Terms,
    watcher: JoinHandle<()>,
    registry: Registry,
    health: Health,
}

impl Replica {
    fn start(server: &ApiServer, id: usize, log: &ReconcileLog, release: bool) -> Replica {
        Self::start_with(server, id, log, release, RECONCILE_TIME)
    }

    fn start_with(
        server: &ApiServer,
        id: usize,
        log: &ReconcileLog,
        release: bool,
        reconcile_time: Duration,
    ) -> Replica {
        // Each replica's requests carry its own User-Agent, so a fault can target one.
        let client = replica_client(server, &format!("replica-{id}/test"), NS);
        let stop = CancellationToken::new();
        let config = config(&format!("replica-{id}")).release_on_cancel(release);
        let mut manager = Manager::new(client)
            .leader_election(LEASE, config)
            .unwrap()
            .graceful_shutdown_on(stop.clone().cancelled_owned());
        let election = manager.election().unwrap().clone();
        let health = manager.health().clone();
        let mut registry = Registry::default();
        manager.metrics().register(&mut registry);
        let terms = Terms::default();
        let watcher = tokio::spawn({
            let (mut transitions, terms) = (election.transitions(), Arc::clone(&terms));
            async move {
                while let Some(state) = transitions.next().await {
                    let leading = state.is_leading();
                    let mut terms = terms.lock().unwrap();
                    let open = matches!(terms.last(), Some((_, None)));
                    if leading && !open {
                        terms.push((Instant::now(), None));
                    } else if !leading && open {
                        terms.last_mut().unwrap().1 = Some(Instant::now());
                    }
                }
            }
        });
        let ctx = Arc::new(Ctx {
            replica: id,
            log: Arc::clone(log),
            reconcile_time,
        });
        let config_maps = manager.factory().namespaced::<ConfigMap>(NS);
        manager.add(Controller::new(config_maps), reconcile, ctx);
        let run = tokio::spawn(manager.run());
        Replica {
            id,
            election,
            stop,
            run,
            terms,
            watcher,
            registry,
            health,
        }
    }

    fn terms(&self) -> Vec<(Instant, Option<Instant>)> {
        self.terms.lock().unwrap().clone()
    }

    fn master_status(&self) -> String {
        let text = render_metrics(&self.registry);
        text.lines()
            .find(|l| l.starts_with("leader_election_master_status{"))
            .unwrap_or_default()
            .to_owned()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.run.abort();
        self.watcher.abort();
    }
}

/// Replica 0, once it leads, and replica 1, started after it.
async fn leader_then_follower(
    server: &ApiServer,
    log: &ReconcileLog,
    release: bool,
    reconcile_time: Duration,
) -> (Replica, Replica) {
    let a = Replica::start_with(server, 0, log, release, reconcile_time);
    until("a leads", DEFAULT_LEASE_DURATION, || a.election.is_leader()).await;
    let b = Replica::start_with(server, 1, log, release, reconcile_time);
    (a, b)
}

async fn seeded_server() -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    for i in 0..3 {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        cm.metadata.namespace = Some(NS.into());
        server.insert(&cm).unwrap();
    }
    server
}

fn leaders(replicas: &[Replica]) -> Vec<usize> {
    replicas
        .iter()
        .filter(|r| r.election.is_leader())
        .map(|r| r.id)
        .collect()
}

/// Asserts that no two replicas' terms overlap, that every reconcile started
/// within a term of its replica, and that no two replicas' reconciles overlap.
fn assert_no_overlap(replicas: &[Replica], log: &ReconcileLog) {
    let now = Instant::now();
    let terms: Vec<Vec<(Instant, Instant)>> = replicas
        .iter()
        .map(|r| {
            r.terms()
                .into_iter()
                .map(|(s, e)| (s, e.unwrap_or(now)))
                .collect()
        })
        .collect();
    for (i, a) in terms.iter().enumerate() {
        for (j, b) in terms.iter().enumerate().filter(|(j, _)| *j != i) {
            for &(s1, e1) in a {
                for &(s2, e2) in b {
                    assert!(
                        e1 <= s2 || e2 <= s1,
                        "terms of replicas {i} and {j} overlap: one lasts {:?}, the other starts {:?} after it began and lasts {:?}",
                        e1 - s1,
                        s2.checked_duration_since(s1),
                        e2 - s2
                    );
                }
            }
        }
    }
    let log = log.lock().unwrap().clone();
    for (replica, key, start, _) in &log {
        assert!(
            terms[*replica]
                .iter()
                .any(|&(s, e)| s <= *start && *start <= e),
            "replica {replica} reconciled {key} outside its terms"
        );
    }
    for a in &log {
        for b in log.iter().filter(|b| b.0 != a.0) {
            assert!(
                a.3 <= b.2 || b.3 <= a.2,
                "replicas {} and {} reconciled at the same time",
                a.0,
                b.0
            );
        }
    }
}

/// Runs `n` replicas through hand-overs (a graceful stop, an abort, failed
/// renewals) and checks after each that one replica leads and that no two
/// replicas ever reconciled in overlapping terms.
async fn one_leader_at_a_time(n: usize) {
    let server = seeded_server().await;
    let log = ReconcileLog::default();
    let mut replicas: Vec<Replica> = (0..n)
        .map(|id| Replica::start(&server, id, &log, true))
        .collect();
    let limit = DEFAULT_LEASE_DURATION * 3;
    until("one leader", limit, || leaders(&replicas).len() == 1).await;

    // Run a while; sample that never more than one leads.
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(leaders(&replicas).len() <= 1, "{:?}", leaders(&replicas));
    }
    // Graceful stop of the leader (release), then an abort (no release) of the
    // next one; a new replica joins first whenever fewer than two are running.
    let mut stopped = Vec::new();
    for graceful in [true, false] {
        if replicas.len() < 2 {
            let id = replicas.len() + stopped.len();
            replicas.push(Replica::start(&server, id, &log, true));
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
        let leader = leaders(&replicas)[0];
        let pos = replicas.iter().position(|r| r.id == leader).unwrap();
        let gone = replicas.remove(pos);
        if graceful {
            gone.stop.cancel();
        } else {
            gone.run.abort();
        }
        let start = Instant::now();
        while start.elapsed() < limit && leaders(&replicas).len() != 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(leaders(&replicas).len() <= 1);
        }
        assert_eq!(leaders(&replicas).len(), 1, "a survivor leads");
        tokio::time::sleep(Duration::from_secs(5)).await;
        stopped.push(gone);
    }
    replicas.extend(stopped);
    let log_len = log.lock().unwrap().len();
    assert!(log_len > 0, "something was reconciled");
    replicas.sort_by_key(|r| r.id);
    assert_no_overlap(&replicas, &log);
    let reconciled_by: std::collections::BTreeSet<usize> =
        log.lock().unwrap().iter().map(|e| e.0).collect();
    assert!(
        reconciled_by.len() >= 2,
        "hand-overs moved the reconciling: {reconciled_by:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn two_replicas_never_reconcile_in_overlapping_terms() {
    one_leader_at_a_time(2).await;
}

#[tokio::test(start_paused = true)]
async fn three_replicas_never_reconcile_in_overlapping_terms() {
    one_leader_at_a_time(3).await;
}

/// With `release_on_cancel`, a graceful stop of the leader clears
/// `holderIdentity` (lease duration 1 s) once its reconciles are done, and a
/// follower, which watches the lease between attempts, leads within one retry
/// period of the release, far before the lease would have expired.
#[tokio::test(start_paused = true)]
async fn cancelled_leader_with_release_hands_over_within_a_retry_period() {
    let server = seeded_server().await;
    let log = ReconcileLog::default();
    let (a, b) = leader_then_follower(&server, &log, true, RECONCILE_TIME).await;
    until("b follows a", DEFAULT_LEASE_DURATION, || {
        b.election.state()
            == LeaderState::Following {
                holder: Some("replica-0".into()),
            }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;

    a.stop.cancel();
    let stopped = Instant::now();
    until("a released", DEFAULT_RENEW_DEADLINE, || a.run.is_finished()).await;
    let released_at = Instant::now();
    a.run.is_finished().then_some(()).unwrap();
    let spec = lease(&server).unwrap();
    assert!(
        spec.holder_identity
            .as_deref()
            .is_none_or(|h| h == "replica-1"),
        "released: {spec:?}"
    );
    until("b leads", DEFAULT_LEASE_DURATION, || b.election.is_leader()).await;
    let handover = released_at.elapsed();
    assert!(
        handover <= DEFAULT_RETRY_PERIOD,
        "b took {handover:?} after the release"
    );
    assert!(
        stopped.elapsed() < DEFAULT_LEASE_DURATION / 2,
        "much sooner than the lease would expire: {:?}",
        stopped.elapsed()
    );
    assert_no_overlap(&[a, b], &log);
}

/// Records, on the paused clock, every instant the stored lease spec changed (read
/// from the server's memory every 10 ms, no request).
fn lease_changes(server: &Arc<ApiServer>) -> (Arc<Mutex<Vec<Instant>>>, JoinHandle<()>) {
    let changes = Arc::new(Mutex::new(Vec::new()));
    let task = tokio::spawn({
        let (server, changes) = (Arc::clone(server), Arc::clone(&changes));
        async move {
            let mut last: Option<LeaseSpec> = None;
            loop {
                let now = lease(&server);
                if now != last {
                    changes.lock().unwrap().push(Instant::now());
                    last = now;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    (changes, task)
}

fn last_change(changes: &Mutex<Vec<Instant>>) -> Instant {
    *changes.lock().unwrap().last().unwrap()
}

/// A follower whose role may not watch leases (403; client-go's election needs
/// only get, create and update) tries the watch once, then polls as client-go:
/// it still takes a released lease, within one jittered retry period
/// (retry period × (1 + 1.2)).
#[tokio::test(start_paused = true)]
async fn follower_without_watch_permission_polls_as_client_go() {
    let server = seeded_server().await;
    let denied = server.inject(
        Matcher::verb(Verb::Watch)
            .resource("leases")
            .user_agent("replica-1/")
            .every(),
        Fault::Forbidden,
    );
    let log = ReconcileLog::default();
    let (a, b) = leader_then_follower(&server, &log, true, RECONCILE_TIME).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(server.fault_hits(denied), 1, "tried to watch once");

    a.stop.cancel();
    until("a released", DEFAULT_RENEW_DEADLINE, || a.run.is_finished()).await;
    let released_at = Instant::now();
    until("b leads", DEFAULT_LEASE_DURATION, || b.election.is_leader()).await;
    let handover = released_at.elapsed();
    assert!(
        handover <= DEFAULT_RETRY_PERIOD.mul_f64(2.2),
        "b took {handover:?} after the release"
    );
    assert_eq!(server.fault_hits(denied), 1, "never again");
    assert_no_overlap(&[a, b], &log);
}

/// Aborting the leader (no release) leaves the lease to expire: a follower takes
/// it only once it saw no change for the lease duration — never before — and within
/// the lease duration plus one retry period of the last renewal (a candidate sees
/// each renewal when it happens, through its watch of the lease, and tries again at
/// the expiry it counts, not up to a jittered period later).
#[tokio::test(start_paused = true)]
async fn aborted_leader_is_replaced_only_after_the_lease_expired() {
    let server = Arc::new(seeded_server().await);
    let (changes, watch) = lease_changes(&server);
    let log = ReconcileLog::default();
    let (a, b) = leader_then_follower(&server, &log, true, RECONCILE_TIME).await;
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(!b.election.is_leader());

    a.run.abort();
    until("a gone", Duration::from_secs(1), || a.run.is_finished()).await;
    let renewed = last_change(&changes);
    until("b leads", DEFAULT_LEASE_DURATION * 2, || {
        b.election.is_leader()
    })
    .await;
    let took_over = Instant::now();
    assert_eq!(holder(&server).as_deref(), Some("replica-1"));
    let since_renewal = took_over - renewed;
    assert!(
        since_renewal >= DEFAULT_LEASE_DURATION,
        "taken {since_renewal:?} after the last renewal, before the lease expired"
    );
    assert!(
        since_renewal <= DEFAULT_LEASE_DURATION + DEFAULT_RETRY_PERIOD,
        "taken {since_renewal:?} after the last renewal"
    );
    watch.abort();
    assert_no_overlap(&[a, b], &log);
}

/// A leader whose renewals fail stops leading by the renew deadline (counted
/// from its last successful renewal), while the lease is still valid for every
/// other replica; the follower, whose requests go through, takes the lease once it
/// expired — within the lease duration plus one retry period of the last renewal —
/// and only after the old leader stopped. Twice: the leader's lease requests
/// answered 500, then held back for a minute. The faults hit only the leader's
/// client (its User-Agent).
#[tokio::test(start_paused = true)]
async fn leader_whose_renewals_fail_steps_down_by_the_renew_deadline() {
    for fault in [
        Fault::InternalError,
        Fault::LatencyBeforeHeaders(Duration::from_secs(60)),
    ] {
        let server = Arc::new(seeded_server().await);
        let (changes, watch) = lease_changes(&server);
        let log = ReconcileLog::default();
        let (a, b) = leader_then_follower(&server, &log, false, RECONCILE_TIME).await;
        tokio::time::sleep(Duration::from_secs(5)).await;

        let id = server.inject(
            Matcher::any()
                .resource("leases")
                .user_agent("replica-0/")
                .every(),
            fault.clone(),
        );
        until("a steps down", DEFAULT_LEASE_DURATION, || {
            !a.election.is_leader()
        })
        .await;
        let stepped_down = Instant::now();
        let renewed = last_change(&changes);
        assert!(
            stepped_down - renewed <= DEFAULT_RENEW_DEADLINE + Duration::from_millis(50),
            "{fault:?}: stepped down {:?} after the last renewal",
            stepped_down - renewed
        );
        assert!(
            stepped_down - renewed >= DEFAULT_RENEW_DEADLINE - DEFAULT_RETRY_PERIOD,
            "{fault:?}: kept trying until near the deadline"
        );
        assert!(!b.election.is_leader(), "{fault:?}: nobody else leads yet");
        assert!(server.fault_hits(id) > 0);
        // The lease still names a, and will for the other replicas until it expires.
        assert_eq!(holder(&server).as_deref(), Some("replica-0"));

        until("b leads", DEFAULT_LEASE_DURATION, || b.election.is_leader()).await;
        // `renewed` is sampled every 10 ms, so it may be up to 10 ms late.
        let taken = b.terms()[0].0 + Duration::from_millis(10) - renewed;
        assert!(
            taken >= DEFAULT_LEASE_DURATION
                && taken <= DEFAULT_LEASE_DURATION + DEFAULT_RETRY_PERIOD,
            "{fault:?}: b took the lease {taken:?} after a's last renewal"
        );
        assert_eq!(holder(&server).as_deref(), Some("replica-1"));
        assert!(
            !a.election.is_leader(),
            "{fault:?}: a still failing, not leading"
        );

        server.faults().remove(id);
        tokio::time::sleep(Duration::from_secs(20)).await;
        let replicas = [a, b];
        assert_eq!(leaders(&replicas), vec![1], "{fault:?}: b kept the lease");
        watch.abort();
        assert_no_overlap(&replicas, &log);
    }
}

#[tokio::test(start_paused = true)]
async fn racing_candidates_count_lost_races_not_errors() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    for (verb, round) in [(Verb::Create, "create"), (Verb::Update, "update")] {
        if verb == Verb::Update {
            // A released lease: no holder, so both candidates try to take it at once.
            let api = Api::<Lease>::namespaced(server.client(), NS);
            let mut l = api.get(LEASE).await.unwrap();
            l.spec = Some(LeaseSpec {
                lease_duration_seconds: Some(1),
                lease_transitions: Some(4),
                ..LeaseSpec::default()
            });
            api.replace(LEASE, &PostParams::default(), &l)
                .await
                .unwrap();
        }
        let id = server.inject(
            Matcher::verb(verb).resource("leases"),
            Fault::LatencyBeforeHeaders(Duration::from_secs(1)),
        );
        let mut registry = Registry::default();
        let metrics = Metrics::registered(&mut registry);
        let stop = CancellationToken::new();
        let candidates: Vec<LeaderElection> = ["x", "y"]
            .iter()
            .map(|id| election(&server, config(&format!("{round}-{id}")).metrics(&metrics)))
            .collect();
        let runs: Vec<_> = candidates
            .iter()
            .map(|e| {
                let (e, stop) = (e.clone(), stop.clone());
                tokio::spawn(async move { e.run(stop).await })
            })
            .collect();
        until("one leads", Duration::from_secs(10), || {
            candidates.iter().any(LeaderElection::is_leader)
        })
        .await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(server.fault_hits(id), 1);
        let leading: Vec<&str> = candidates
            .iter()
            .filter(|e| e.is_leader())
            .map(LeaderElection::identity)
            .collect();
        assert_eq!(leading.len(), 1, "{round}: {leading:?}");
        assert_eq!(holder(&server).as_deref(), Some(leading[0]));
        let text = render_metrics(&registry);
        assert!(
            text.contains(&format!(
                "reflector_leader_election_lost_races_total{{name=\"{LEASE}\"}} 1"
            )),
            "{round}: {text}"
        );
        assert!(
            !text.contains("reflector_leader_election_errors_total{"),
            "{round}: no errors: {text}"
        );
        if verb == Verb::Update {
            assert_eq!(lease(&server).unwrap().lease_transitions, Some(5));
        }
        stop.cancel();
        for run in runs {
            run.await.unwrap().unwrap();
        }
    }
}

/// Expiry is judged on the candidate's own clock, not from the `renewTime`
/// written by the holder's: a lease whose `renewTime` is an hour old (the holder's
/// clock is behind) is still respected for the lease duration after the
/// candidate first saw it, and one renewed "in the future" is taken once that
/// duration passed without change.
#[tokio::test(start_paused = true)]
async fn expiry_is_measured_on_the_local_clock_not_from_renew_time() {
    for skew in [-3600, 3600] {
        let server = ApiServer::start().await.unwrap();
        create_namespaces(&server.client(), &[NS]).await;
        let renew = Timestamp::now()
            .checked_add(SignedDuration::from_secs(skew))
            .unwrap();
        let mut held = Lease::default();
        held.metadata.name = Some(LEASE.into());
        held.metadata.namespace = Some(NS.into());
        held.spec = Some(LeaseSpec {
            holder_identity: Some("ghost".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(renew)),
            renew_time: Some(MicroTime(renew)),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        });
        server.insert(&held).unwrap();
        let e = election(&server, config("candidate"));
        let stop = CancellationToken::new();
        let started = Instant::now();
        let run = tokio::spawn({
            let (e, stop) = (e.clone(), stop.clone());
            async move { e.run(stop).await }
        });
        until("following ghost", Duration::from_secs(1), || {
            e.state()
                == LeaderState::Following {
                    holder: Some("ghost".into()),
                }
        })
        .await;
        until("leads", DEFAULT_LEASE_DURATION * 2, || e.is_leader()).await;
        let waited = started.elapsed();
        assert!(
            waited >= DEFAULT_LEASE_DURATION
                && waited <= DEFAULT_LEASE_DURATION + DEFAULT_RETRY_PERIOD,
            "skew {skew}: took the lease after {waited:?}"
        );
        let spec = lease(&server).unwrap();
        assert_eq!(spec.lease_transitions, Some(1), "ghost → candidate");
        stop.cancel();
        run.await.unwrap().unwrap();
    }
}

/// `leaseTransitions` counts hand-overs (0 on creation, +1 per new holder, kept
/// across renewals and a release); `leader_election_master_status` flips 1/0 per
/// replica; `/readyz` is ready for leader and follower alike and says which.
#[tokio::test(start_paused = true)]
async fn transitions_metric_and_readiness_follow_the_hand_overs() {
    let server = seeded_server().await;
    let log = ReconcileLog::default();
    let (a, b) = leader_then_follower(&server, &log, true, RECONCILE_TIME).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(lease(&server).unwrap().lease_transitions, Some(0));
    assert_eq!(
        a.master_status(),
        format!("leader_election_master_status{{name=\"{LEASE}\"}} 1")
    );
    assert_eq!(
        b.master_status(),
        format!("leader_election_master_status{{name=\"{LEASE}\"}} 0")
    );
    let (ready, body) = a.health.readiness();
    assert!(ready, "{body}");
    assert!(
        body.contains("[+]leader-election widgets ok (leading as replica-0)"),
        "{body}"
    );
    let (ready, body) = b.health.readiness();
    assert!(ready, "a follower is ready: {body}");
    assert!(
        body.contains("[+]leader-election widgets ok (following replica-0)"),
        "{body}"
    );

    a.stop.cancel();
    until("b leads", DEFAULT_LEASE_DURATION, || b.election.is_leader()).await;
    assert_eq!(lease(&server).unwrap().lease_transitions, Some(1));
    assert!(a.master_status().ends_with(" 0"), "{}", a.master_status());
    assert!(b.master_status().ends_with(" 1"), "{}", b.master_status());
    let (ready, body) = a.health.readiness();
    assert!(!ready, "a stopped election is not ready: {body}");
    assert!(
        body.contains("[-]leader-election widgets failed (stopped)"),
        "{body}"
    );

    // a comes back, b stops: a leads again, a second hand-over.
    let a = Replica::start(&server, 0, &log, true);
    tokio::time::sleep(Duration::from_secs(3)).await;
    b.stop.cancel();
    until("a leads again", DEFAULT_LEASE_DURATION, || {
        a.election.is_leader()
    })
    .await;
    assert_eq!(lease(&server).unwrap().lease_transitions, Some(2));
}

/// Bad configuration is a typed error when the election is built, as client-go's
/// `NewLeaderElector` checks; a second concurrent run is a typed error too (also
/// through a controller), not a second elector on the same identity.
#[tokio::test(start_paused = true)]
async fn bad_configuration_and_double_runs_are_typed_errors() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let api = || Api::<Lease>::namespaced(server.client(), NS);
    assert!(matches!(
        LeaderElection::new(api(), "", config("a")),
        Err(LeaderElectionError::EmptyName)
    ));
    assert!(matches!(
        LeaderElection::new(Api::all(server.client()), LEASE, config("a")),
        Err(LeaderElectionError::NoNamespace)
    ));
    assert!(matches!(
        LeaderElection::new(
            api(),
            LEASE,
            config("a").renew_deadline(Duration::from_secs(15))
        ),
        Err(LeaderElectionError::LeaseDurationNotAboveRenewDeadline { .. })
    ));

    // A manager whose election is already running elsewhere does not start.
    let mut manager = Manager::new(replica_client(&server, "a", NS))
        .leader_election(LEASE, config("a"))
        .unwrap();
    let e = manager.election().unwrap().clone();
    let stop = CancellationToken::new();
    let first = tokio::spawn({
        let (e, stop) = (e.clone(), stop.clone());
        async move { e.run(stop).await }
    });
    until("leads", Duration::from_secs(5), || e.is_leader()).await;
    assert!(matches!(
        e.run(stop.clone()).await,
        Err(LeaderElectionError::AlreadyRunning(_))
    ));
    let config_maps = manager.factory().namespaced::<ConfigMap>(NS);
    let ctx = Arc::new(Ctx {
        replica: 0,
        log: ReconcileLog::default(),
        reconcile_time: RECONCILE_TIME,
    });
    manager.add(Controller::new(config_maps), reconcile, ctx);
    assert!(matches!(
        manager.run().await,
        Err(ManagerError::LeaderElection(
            LeaderElectionError::AlreadyRunning(_)
        ))
    ));
    // A manager with an invalid election is refused when configured.
    assert!(matches!(
        Manager::new(server.client()).leader_election("", config("a")),
        Err(ManagerError::LeaderElection(LeaderElectionError::EmptyName))
    ));
    stop.cancel();
    first.await.unwrap().unwrap();
    assert_eq!(e.state(), LeaderState::Stopped);
}

/// A graceful stop of a leader whose reconcile outlasts the lease: the leader
/// keeps renewing while the reconcile finishes and releases the lease only after
/// it, so the next leader's reconciles never overlap it.
#[tokio::test(start_paused = true)]
async fn graceful_stop_releases_the_lease_only_after_reconciles_finish() {
    let long = DEFAULT_LEASE_DURATION + Duration::from_secs(5);
    let server = seeded_server().await;
    let log = ReconcileLog::default();
    let (a, b) = leader_then_follower(&server, &log, true, long).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    a.stop.cancel();
    until("b leads", DEFAULT_LEASE_DURATION * 3, || {
        b.election.is_leader()
    })
    .await;
    let a_ended = log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.0 == 0)
        .map(|e| e.3)
        .max()
        .expect("a reconciled");
    let b_started = b.terms()[0].0;
    assert!(b_started >= a_ended, "b led before a's reconcile ended");
    assert!(
        b_started - a_ended <= DEFAULT_RETRY_PERIOD,
        "released right after the reconcile: {:?}",
        b_started - a_ended
    );
    tokio::time::sleep(long * 2).await;
    assert_no_overlap(&[a, b], &log);
}

/// A leader that loses the lease (renewals answered 500) while a long reconcile
/// runs: no new reconcile starts, the one in flight is awaited — but only until
/// the lease could be taken by another replica (last renewal + lease duration),
/// when it is aborted.
#[tokio::test(start_paused = true)]
async fn lost_leadership_awaits_reconciles_only_until_the_lease_could_be_taken() {
    let long = DEFAULT_LEASE_DURATION * 2;
    let server = Arc::new(seeded_server().await);
    let (changes, watch) = lease_changes(&server);
    let log = ReconcileLog::default();
    let a = Replica::start_with(&server, 0, &log, false, long);
    until("a leads", DEFAULT_LEASE_DURATION, || a.election.is_leader()).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let id = server.inject(
        Matcher::verb(Verb::Update).resource("leases").every(),
        Fault::InternalError,
    );
    until("a steps down", DEFAULT_LEASE_DURATION, || {
        !a.election.is_leader()
    })
    .await;
    let stepped_down = Instant::now();
    let bound = last_change(&changes) + DEFAULT_LEASE_DURATION;
    tokio::time::sleep(DEFAULT_LEASE_DURATION).await;
    let in_flight: Vec<_> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.2 < stepped_down)
        .map(|e| (e.2, e.3))
        .collect();
    let (started, ended) = *in_flight.last().expect("a reconcile was in flight");
    assert!(
        ended > stepped_down && ended <= bound + Duration::from_millis(50),
        "in flight from {:?} before the step-down, ended {:?} after it (bound {:?})",
        stepped_down - started,
        ended.checked_duration_since(stepped_down),
        bound - stepped_down
    );
    assert!(ended - started < long, "aborted, not finished");
    assert!(
        log.lock().unwrap().iter().all(|e| e.2 < stepped_down),
        "no reconcile started after the step-down"
    );
    server.faults().remove(id);
    watch.abort();
}

/// The released lease, as the server stores it, is the record client-go's
/// `release()` writes (through `LeaseLock`'s spec conversion): `holderIdentity`
/// present and empty, `leaseDurationSeconds: 1`, `acquireTime` and `renewTime` the
/// release time, `leaseTransitions` as it was; no other spec field.
#[tokio::test(start_paused = true)]
async fn a_released_lease_is_the_record_client_go_writes() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    // Released by another replica after four hand-overs: taking it is the fifth.
    let mut free = Lease::default();
    free.metadata.name = Some(LEASE.into());
    free.metadata.namespace = Some(NS.into());
    free.spec = Some(LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        lease_transitions: Some(4),
        ..LeaseSpec::default()
    });
    server.insert(&free).unwrap();
    let e = election(&server, config("a").release_on_cancel(true));
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (e, stop) = (e.clone(), stop.clone());
        async move { e.run(stop).await }
    });
    until("leads", Duration::from_secs(5), || e.is_leader()).await;
    tokio::time::sleep(DEFAULT_RETRY_PERIOD * 2).await;
    assert_eq!(lease(&server).unwrap().lease_transitions, Some(5));

    let before = Timestamp::now();
    stop.cancel();
    run.await.unwrap().unwrap();
    let after = Timestamp::now();
    let stored = server
        .object_json::<Lease>(Some(NS), LEASE)
        .unwrap()
        .unwrap();
    let spec = stored["spec"].as_object().unwrap();
    let mut fields: Vec<&str> = spec.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "acquireTime",
            "holderIdentity",
            "leaseDurationSeconds",
            "leaseTransitions",
            "renewTime"
        ],
        "{stored}"
    );
    assert_eq!(spec["holderIdentity"], "");
    assert_eq!(spec["leaseDurationSeconds"], 1);
    assert_eq!(spec["leaseTransitions"], 5, "transitions kept");
    assert_eq!(
        spec["acquireTime"], spec["renewTime"],
        "both the release time"
    );
    let at: Timestamp = spec["renewTime"].as_str().unwrap().parse().unwrap();
    // MicroTime keeps microseconds: `before` may be up to 1 µs later than its record.
    let slack = SignedDuration::from_micros(1);
    assert!(
        before - slack <= at && at <= after,
        "released at {at}, between {before} and {after}"
    );
}

/// `transitions()` hands over every change, none merged, however late it is read:
/// acquire, lose (renewals failing past the renew deadline), acquire again as soon as
/// the API answers (the lease still names this replica), stop — all read only after
/// the last of them, where a watch of the state would show the last one alone.
#[tokio::test(start_paused = true)]
async fn transitions_are_never_merged_even_when_read_late() {
    let server = ApiServer::start().await.unwrap();
    create_namespaces(&server.client(), &[NS]).await;
    let e = election(&server, config("a"));
    let mut transitions = e.transitions();
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (e, stop) = (e.clone(), stop.clone());
        async move { e.run(stop).await }
    });
    until("leads", Duration::from_secs(5), || e.is_leader()).await;
    let failing = server.inject(
        Matcher::any().resource("leases").every(),
        Fault::InternalError,
    );
    until("loses", DEFAULT_LEASE_DURATION, || !e.is_leader()).await;
    server.faults().remove(failing);
    until("leads again", DEFAULT_LEASE_DURATION, || e.is_leader()).await;
    stop.cancel();
    run.await.unwrap().unwrap();

    let seen: Vec<LeaderState> =
        std::iter::from_fn(|| transitions.next().now_or_never().flatten()).collect();
    assert_eq!(
        seen,
        [
            LeaderState::Stopped,
            LeaderState::Leading,
            LeaderState::Following { holder: None },
            LeaderState::Leading,
            LeaderState::Stopped,
        ]
    );
}
