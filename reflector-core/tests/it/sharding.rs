//! Sharding on the embedded API server, each replica with its own `kube::Client`, on
//! tokio's paused clock: membership leases appear, expire and are released; the
//! sharder spreads objects evenly over three shards, writing each object once; a
//! fourth shard takes only the objects it now wins; a dead shard's objects move
//! once its lease expires; a live shard's objects move only through the drain
//! hand-over (annotation, acknowledgement, relabel); injected 409s and 500s on the
//! sharder's patches and dropped watches delay assignment but never assign an
//! object twice; a sharder acting on a stale view is refused by the
//! resourceVersion precondition.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use reflector_core::informer::InformerFactory;
use reflector_core::leader_election::LeaderElectionConfig;
use reflector_core::sharding::{Ring, Sharder, ShardingError, shard_key, winner};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::paused::until;
use crate::ring::{
    DRAIN, History, LABEL, LEASE_NS, NS, RING, SECS, drain_of, label_of, objects, record_history,
    set,
};
use crate::support::namespaces::create_namespaces;

async fn server_with(n: usize) -> ApiServer {
    let server = ApiServer::start().await.expect("server");
    create_namespaces(&server.client(), &[NS, LEASE_NS]).await;
    let objects: Vec<ConfigMap> = (0..n)
        .map(|i| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("cm-{i}"), "namespace": NS},
                "data": {"k": "v"}
            }))
            .unwrap()
        })
        .collect();
    server.insert_many(&objects).unwrap();
    server
}

fn ring(server: &ApiServer, shard: &str) -> Ring {
    Ring::new(
        Api::namespaced(server.client(), LEASE_NS),
        RING,
        shard,
        LeaderElectionConfig::default(),
    )
    .unwrap()
}

/// One replica: its ring membership and (once started) its sharder, each on a task
/// it owns, with its own client.
struct Replica {
    ring: Ring,
    stop: CancellationToken,
    ring_task: JoinHandle<Result<(), ShardingError>>,
    sharder: Option<(Arc<Sharder<ConfigMap>>, JoinHandle<()>)>,
}

impl Replica {
    fn start(server: &ApiServer, shard: &str) -> Replica {
        let ring = ring(server, shard);
        let stop = CancellationToken::new();
        let ring_task = tokio::spawn({
            let (ring, stop) = (ring.clone(), stop.clone());
            async move { ring.run(stop).await }
        });
        Replica {
            ring,
            stop,
            ring_task,
            sharder: None,
        }
    }

    fn start_sharder(&mut self, server: &ApiServer) {
        let factory = InformerFactory::new(server.client());
        let sharder = Arc::new(Sharder::<ConfigMap>::new(&self.ring, &factory).unwrap());
        factory.start();
        let task = tokio::spawn({
            let (sharder, stop) = (Arc::clone(&sharder), self.stop.clone());
            async move {
                let _factory = factory;
                sharder.run(stop).await.unwrap();
            }
        });
        self.sharder = Some((sharder, task));
    }

    fn is_sharding(&self) -> bool {
        self.sharder
            .as_ref()
            .is_some_and(|(s, _)| s.election().is_leader())
    }

    /// Stops without releasing anything, as a killed process.
    fn abort(self) {
        self.ring_task.abort();
        if let Some((_, task)) = self.sharder {
            task.abort();
        }
    }

    /// Stops gracefully: the leases are released.
    async fn stop(self) {
        self.stop.cancel();
        self.ring_task.await.unwrap().unwrap();
        if let Some((_, task)) = self.sharder {
            task.await.unwrap();
        }
    }
}

/// name → (assignment label, resourceVersion), as the server has them.
async fn assignments(server: &ApiServer) -> BTreeMap<String, (Option<String>, String)> {
    objects(server)
        .await
        .into_iter()
        .map(|cm| {
            let rv = cm.metadata.resource_version.clone().unwrap();
            (cm.metadata.name.clone().unwrap(), (label_of(&cm), rv))
        })
        .collect()
}

/// name → the shard rendezvous hashing picks among `members`.
async fn winners(server: &ApiServer, members: &BTreeSet<String>) -> BTreeMap<String, String> {
    objects(server)
        .await
        .into_iter()
        .map(|cm| {
            let key = shard_key(&cm.metadata).unwrap();
            let shard = winner(key.as_str(), members).unwrap().clone();
            (cm.metadata.name.clone().unwrap(), shard)
        })
        .collect()
}

/// Polls (on the paused clock) until every object carries its winner among
/// `members`, up to `limit`.
async fn converge(server: &ApiServer, members: &BTreeSet<String>, limit: Duration) {
    let want = winners(server, members).await;
    let start = Instant::now();
    loop {
        let have = assignments(server).await;
        let wrong = want
            .iter()
            .filter(|(n, w)| have.get(*n).and_then(|(l, _)| l.as_ref()) != Some(*w))
            .count();
        if wrong == 0 {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{wrong} objects not on their winner among {members:?} within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The names of the ConfigMaps successfully patched so far, with how many times.
fn patched(server: &ApiServer) -> BTreeMap<String, usize> {
    let mut names = BTreeMap::new();
    for e in server.request_log() {
        if e.verb == Verb::Patch && e.resource.as_deref() == Some("configmaps") && e.status == 200 {
            let name = e.path.rsplit('/').next().unwrap().to_owned();
            *names.entry(name).or_default() += 1;
        }
    }
    names
}

/// Checks a move against the assignment `before` it and the patches counted
/// `patched_before` it: the objects `should_move` picks (by name and old shard) now
/// carry their winner among `members` and were patched exactly once; every other
/// object kept its label and resourceVersion and was not patched. Returns the moved
/// objects' names.
async fn assert_only_these_moved(
    server: &ApiServer,
    before: &BTreeMap<String, (Option<String>, String)>,
    patched_before: &BTreeMap<String, usize>,
    members: &BTreeSet<String>,
    should_move: impl Fn(&str, Option<&str>) -> bool,
) -> BTreeSet<String> {
    let want = winners(server, members).await;
    let mut patched_since = patched(server);
    for (name, count) in patched_before {
        *patched_since.get_mut(name).unwrap() -= count;
    }
    let mut moved = BTreeSet::new();
    for (name, (label, rv)) in assignments(server).await {
        let (old_label, old_rv) = &before[&name];
        let since = patched_since.get(&name).copied().unwrap_or(0);
        if should_move(&name, old_label.as_deref()) {
            assert_eq!(label.as_ref(), Some(&want[&name]), "{name}");
            assert_eq!(since, 1, "{name} moved with {since} patches");
            moved.insert(name);
        } else {
            assert_eq!((&label, &rv), (old_label, old_rv), "{name} should stay");
            assert_eq!(since, 0, "{name} stayed but was patched");
        }
    }
    moved
}

/// Asserts that each of the `n` objects was assigned exactly once: the history
/// shows its label going from none straight to its winner among `members`, and
/// the sharder patched it once.
async fn each_assigned_once(
    server: &ApiServer,
    history: &History<Option<String>>,
    members: &BTreeSet<String>,
    n: usize,
) {
    let want = winners(server, members).await;
    until("the history informer saw every write", SECS(5), || {
        let h = history.lock().unwrap();
        h.len() == n && h.values().all(|h| h.len() == 2)
    })
    .await;
    for (name, h) in history.lock().unwrap().iter() {
        let labels: Vec<_> = h.iter().map(|(_, label)| label.clone()).collect();
        assert_eq!(labels, [None, Some(want[name].clone())], "{name}");
    }
    let patched = patched(server);
    assert_eq!(patched.len(), n);
    assert!(
        patched.values().all(|n| *n == 1),
        "an object was patched twice"
    );
}

/// Starts `shards` replicas, waits until each sees all of them, then starts their
/// sharders (so the sharder's first view is the whole ring).
async fn start_ring(server: &ApiServer, shards: &[&str]) -> Vec<Replica> {
    let mut replicas: Vec<Replica> = shards.iter().map(|s| Replica::start(server, s)).collect();
    let all = set(shards);
    until("every replica sees the whole ring", SECS(10), || {
        replicas.iter().all(|r| r.ring.members() == all)
    })
    .await;
    for r in &mut replicas {
        r.start_sharder(server);
    }
    replicas
}

/// `n` objects assigned over shards a, b and c, one of whose sharders leads; the
/// assignment and the patch counts at that point.
async fn three_converged(
    n: usize,
) -> (
    ApiServer,
    Vec<Replica>,
    BTreeMap<String, (Option<String>, String)>,
    BTreeMap<String, usize>,
) {
    let server = server_with(n).await;
    let replicas = start_ring(&server, &["a", "b", "c"]).await;
    converge(&server, &set(&["a", "b", "c"]), SECS(60)).await;
    until("a sharder leads", SECS(10), || {
        replicas.iter().any(Replica::is_sharding)
    })
    .await;
    let (before, patched_before) = (assignments(&server).await, patched(&server));
    (server, replicas, before, patched_before)
}

/// Stops every replica gracefully.
async fn stop_all(replicas: Vec<Replica>) {
    for r in replicas {
        r.stop().await;
    }
}

/// Each shard's membership Lease exists, labelled with the ring and held by the
/// shard; a graceful stop releases it (empty holder) and the others drop the shard at
/// once; an aborted shard stays a member until its lease expires by the observers'
/// clocks (a lease duration after its last renewal was seen), then leaves.
#[tokio::test(start_paused = true)]
async fn membership_appears_is_released_and_expires() {
    let server = server_with(0).await;
    let a = Replica::start(&server, "a");
    let b = Replica::start(&server, "b");
    let c = Replica::start(&server, "c");
    until("all three members", SECS(10), || {
        c.ring.members() == set(&["a", "b", "c"])
    })
    .await;
    assert!(a.ring.is_member() && b.ring.is_member() && c.ring.is_member());
    let lease: Lease = server.get(Some(LEASE_NS), "cms-a").unwrap().unwrap();
    assert_eq!(
        lease
            .metadata
            .labels
            .unwrap()
            .get("reflector.rs/ring")
            .map(String::as_str),
        Some(RING)
    );
    assert_eq!(lease.spec.unwrap().holder_identity.as_deref(), Some("a"));

    // Graceful stop: released, and gone from the others' view within a second.
    let stopped = Instant::now();
    a.stop().await;
    let lease: Lease = server.get(Some(LEASE_NS), "cms-a").unwrap().unwrap();
    assert_eq!(
        lease.spec.unwrap().holder_identity.as_deref(),
        Some(""),
        "released as client-go releases"
    );
    until("a leaves at once", SECS(1), || {
        c.ring.members() == set(&["b", "c"])
    })
    .await;
    assert!(stopped.elapsed() < SECS(1));

    // Abort: b renewed within the last retry period (2 s), so it stays a member for
    // at least 15 − 2 s, and leaves by 15 s plus the watch's delivery.
    let aborted = Instant::now();
    b.abort();
    tokio::time::sleep(SECS(12)).await;
    assert_eq!(c.ring.members(), set(&["b", "c"]), "not expired yet");
    until("b expires", SECS(4), || c.ring.members() == set(&["c"])).await;
    let gone = aborted.elapsed();
    assert!(gone >= SECS(13) && gone <= SECS(16), "{gone:?}");
    c.stop().await;
}

/// Invalid names are typed errors, not panics.
#[tokio::test]
async fn invalid_ring_and_shard_names_are_refused() {
    let server = server_with(0).await;
    let api = || Api::<Lease>::namespaced(server.client(), LEASE_NS);
    let config = LeaderElectionConfig::default;
    assert!(matches!(
        Ring::new(api(), "Cms", "a", config()),
        Err(ShardingError::InvalidName { what: "ring", .. })
    ));
    assert!(matches!(
        Ring::new(api(), "cms", "a_b", config()),
        Err(ShardingError::InvalidName { what: "shard", .. })
    ));
    assert!(matches!(
        Ring::new(api(), "cms", "sharder", config()),
        Err(ShardingError::ReservedShardName)
    ));
    assert!(matches!(
        Ring::new(Api::all(server.client()), "cms", "a", config()),
        Err(ShardingError::LeaderElection(_))
    ));
}

/// 900 objects over three shards: one replica shards, each shard gets 300 ± 15%,
/// every object carries exactly its rendezvous winner, and each was written once
/// (its label went from none to its shard, with nothing in between).
#[tokio::test(start_paused = true)]
async fn sharder_spreads_objects_evenly_and_writes_each_once() {
    let server = server_with(900).await;
    let (_history_factory, history) = record_history(&server, label_of);
    let replicas = start_ring(&server, &["a", "b", "c"]).await;
    let members = set(&["a", "b", "c"]);
    converge(&server, &members, SECS(60)).await;

    assert_eq!(replicas.iter().filter(|r| r.is_sharding()).count(), 1);
    let mut load: BTreeMap<String, usize> = BTreeMap::new();
    for (label, _) in assignments(&server).await.into_values() {
        *load.entry(label.unwrap()).or_default() += 1;
    }
    for (shard, n) in &load {
        assert!((255..=345).contains(n), "{shard} has {n} of 900: {load:?}");
    }
    each_assigned_once(&server, &history, &members, 900).await;
    stop_all(replicas).await;
}

/// A fourth shard joins three live ones: the objects whose winner changed are not
/// relabelled but get the drain annotation naming `d` (and only they are patched);
/// nothing moves until their old shard acknowledges; each acknowledged object (its
/// label and annotation removed, as a shard does) is then labelled `d`, and only
/// those move (at most 30% of them).
#[tokio::test(start_paused = true)]
async fn a_joining_shard_drains_then_takes_only_the_objects_it_now_wins() {
    let (server, mut replicas, before, patched_before) = three_converged(600).await;

    let mut d = Replica::start(&server, "d");
    d.start_sharder(&server);
    replicas.push(d);
    let four = set(&["a", "b", "c", "d"]);
    let want = winners(&server, &four).await;
    let movers: BTreeSet<String> = before
        .iter()
        .filter(|(name, (label, _))| label.as_ref() != Some(&want[*name]))
        .map(|(name, _)| name.clone())
        .collect();
    let n = movers.len();
    assert!(n > 0 && n * 10 <= before.len() * 3, "moving {n}");
    let asked = Instant::now();
    loop {
        let drains = objects(&server)
            .await
            .iter()
            .filter(|cm| drain_of(cm).as_deref() == Some("d"))
            .count();
        if drains == n {
            break;
        }
        assert!(asked.elapsed() < SECS(30), "{drains} of {n} asked to drain");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Nobody acknowledges: every object keeps its label, only the movers changed.
    tokio::time::sleep(SECS(5)).await;
    for cm in objects(&server).await {
        let name = cm.metadata.name.clone().unwrap();
        assert_eq!(
            label_of(&cm),
            before[&name].0,
            "{name} moved before its drain ended"
        );
        assert_eq!(drain_of(&cm).is_some(), movers.contains(&name), "{name}");
    }

    // The old shards acknowledge: label and annotation go, in one patch.
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    for name in &movers {
        let cm = api.get(name).await.unwrap();
        let ack = json!({"metadata": {
            "resourceVersion": cm.metadata.resource_version,
            "labels": {LABEL: null},
            "annotations": {DRAIN: null},
        }});
        api.patch(name, &PatchParams::default(), &Patch::Merge(ack))
            .await
            .unwrap();
    }
    converge(&server, &four, SECS(30)).await;
    // Each mover: drain, acknowledgement, relabel (3 patches, 2 of them the
    // sharder's); every other object untouched.
    let mut since = patched(&server);
    for (name, count) in &patched_before {
        *since.get_mut(name).unwrap() -= count;
    }
    for (name, (label, rv)) in assignments(&server).await {
        if movers.contains(&name) {
            assert_eq!(label.as_deref(), Some("d"), "{name}");
            assert_eq!(since.get(&name).copied(), Some(3), "{name}");
        } else {
            assert_eq!(
                (&label, &rv),
                (&before[&name].0, &before[&name].1),
                "{name} should stay"
            );
            assert_eq!(
                since.get(&name).copied().unwrap_or(0),
                0,
                "{name} stayed but was patched"
            );
        }
    }
    assert!(
        objects(&server)
            .await
            .iter()
            .all(|cm| drain_of(cm).is_none())
    );
    stop_all(replicas).await;
}

/// Aborts one of three converged shards — the sharder itself if `the_sharder` —
/// and checks that nothing moves for 12 s (every lease is still valid), then that
/// exactly the dead shard's objects move to their winners among the survivors
/// within `limit` of the abort.
async fn a_shard_dies(the_sharder: bool, limit: Duration) {
    let (server, mut replicas, before, patched_before) = three_converged(450).await;
    let victim_at = replicas
        .iter()
        .position(|r| r.is_sharding() == the_sharder)
        .unwrap();
    let victim = replicas.remove(victim_at);
    let dead = victim.ring.shard().to_owned();
    victim.abort();
    let died = Instant::now();
    tokio::time::sleep(SECS(12)).await;
    assert_eq!(
        assignments(&server).await,
        before,
        "nothing moves while the lease is valid"
    );

    let rest: BTreeSet<String> = replicas.iter().map(|r| r.ring.shard().to_owned()).collect();
    converge(&server, &rest, limit).await;
    assert!(
        died.elapsed() <= limit,
        "moved {:?} after the abort",
        died.elapsed()
    );
    assert_eq!(replicas.iter().filter(|r| r.is_sharding()).count(), 1);
    let moved = assert_only_these_moved(&server, &before, &patched_before, &rest, |_, old| {
        old == Some(dead.as_str())
    })
    .await;
    assert!(!moved.is_empty());
    stop_all(replicas).await;
}

/// A shard that dies (aborted, its lease not released) keeps its objects until its
/// lease expires (15 s after its last renewal was seen, which is at most a retry
/// period old); then exactly its objects move, at once.
#[tokio::test(start_paused = true)]
async fn a_dead_shards_objects_move_when_its_lease_expires() {
    a_shard_dies(false, SECS(18)).await;
}

/// The replica that is the sharder dies: another replica takes the sharder lease
/// once it expires (lease duration + a jittered retry period, at most 2.2 × 2 s) and
/// moves the dead shard's objects, only those, to the survivors.
#[tokio::test(start_paused = true)]
async fn the_sharders_death_hands_sharding_to_another_replica() {
    a_shard_dies(true, SECS(22)).await;
}

/// Injected 409s and 500s on the sharder's patches: the faults are hit, assignment
/// still completes, and every object's label was written exactly once.
#[tokio::test(start_paused = true)]
async fn patch_conflicts_and_errors_delay_but_never_double_assign() {
    let server = server_with(300).await;
    let (_history_factory, history) = record_history(&server, label_of);
    let patches = || Matcher::verb(Verb::Patch).resource("configmaps");
    let conflicts = server.inject(patches().skip(5).times(40), Fault::Conflict);
    let errors = server.inject(patches().skip(60).times(40), Fault::InternalError);
    let replicas = start_ring(&server, &["a", "b", "c"]).await;
    let members = set(&["a", "b", "c"]);
    converge(&server, &members, SECS(120)).await;
    assert_eq!(server.fault_hits(conflicts), 40);
    assert_eq!(server.fault_hits(errors), 40);

    each_assigned_once(&server, &history, &members, 300).await;
    stop_all(replicas).await;
}

/// Every open watch (the sharder's metadata watch among them) is dropped five times
/// while the first 300 objects are being assigned and 150 more are created: the
/// informers re-watch or relist, assignment completes, and every object's label was
/// written exactly once (a relist's older view never leads to a second write).
#[tokio::test(start_paused = true)]
async fn dropped_sharder_watches_delay_but_never_double_assign() {
    let server = server_with(300).await;
    let (_history_factory, history) = record_history(&server, label_of);
    let replicas = start_ring(&server, &["a", "b", "c"]).await;
    let members = set(&["a", "b", "c"]);
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    let mut dropped = 0;
    for round in 0..5 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        dropped += server.faults().drop_watches();
        for i in 0..30 {
            let cm: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": format!("new-{round}-{i}"), "namespace": NS}
            }))
            .unwrap();
            api.create(&Default::default(), &cm).await.unwrap();
        }
    }
    assert!(dropped >= 5, "only {dropped} watches were open to drop");
    converge(&server, &members, SECS(120)).await;

    each_assigned_once(&server, &history, &members, 450).await;
    stop_all(replicas).await;
}

/// A sharder whose view is stale does not overwrite a newer assignment: its watch
/// delivers nothing after the first list (so its cache keeps every object
/// unassigned, at its first resourceVersion), someone else then labels an object
/// for shard `b`, and a second member joins. The sharder recomputes every object
/// from its stale cache and patches with the stale resourceVersions: the server
/// refuses each such patch (409) and the other writer's label stays. Without the
/// precondition the stale patch would win.
#[tokio::test(start_paused = true)]
async fn a_stale_sharder_cannot_overwrite_a_newer_assignment() {
    let server = server_with(40).await;
    server.inject(
        Matcher::verb(Verb::Watch).resource("configmaps"),
        Fault::LatencyBetweenEvents(SECS(3600)),
    );
    let mut replicas = start_ring(&server, &["a"]).await;
    converge(&server, &set(&["a"]), SECS(30)).await;
    let first_round = patched(&server);
    assert_eq!(first_round.len(), 40);

    // The object that `a` still wins once `b` joins, relabelled for `b` by another
    // writer (the sharder's watch will not show it).
    let both = set(&["a", "b"]);
    let target = winners(&server, &both)
        .await
        .into_iter()
        .find_map(|(name, w)| (w == "a").then_some(name))
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    let patch = kube::api::Patch::Merge(json!({"metadata": {"labels": {LABEL: "b"}}}));
    api.patch(&target, &Default::default(), &patch)
        .await
        .unwrap();
    let other_write = patched(&server);

    replicas.push(Replica::start(&server, "b"));
    until("the sharder sees b join", SECS(10), || {
        replicas[0].ring.members() == both
    })
    .await;
    tokio::time::sleep(SECS(10)).await;

    let refused = server
        .request_log()
        .into_iter()
        .filter(|e| {
            e.verb == Verb::Patch && e.status == 409 && e.path.ends_with(&format!("/{target}"))
        })
        .count();
    assert!(
        refused > 0,
        "the stale patch of {target} reached the server and was refused"
    );
    let label = label_of(&api.get(&target).await.unwrap());
    assert_eq!(
        label.as_deref(),
        Some("b"),
        "the newer label of {target} stays"
    );
    assert_eq!(patched(&server), other_write, "no stale patch succeeded");
    stop_all(replicas).await;
}
