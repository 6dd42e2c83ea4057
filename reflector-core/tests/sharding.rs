//! Sharding on the embedded API server, each replica with its own `kube::Client`, on
//! tokio's paused clock: membership leases appear, expire and are released; the
//! sharder spreads objects evenly over three shards, writing each object once; a
//! fourth shard takes only the objects it now wins; a dead shard's objects move
//! once its lease expires; injected 409s and 500s on the sharder's patches delay
//! assignment but never assign an object twice.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use reflector_core::informer::{Event, InformerFactory};
use reflector_core::leader_election::LeaderElectionConfig;
use reflector_core::sharding::{Ring, Sharder, ShardingError, shard_key, winner};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const RING: &str = "cms";
const LEASE_NS: &str = "ops";
const NS: &str = "work";
const LABEL: &str = "shard.reflector.rs/cms";
const SECS: fn(u64) -> Duration = Duration::from_secs;

async fn server_with(n: usize) -> ApiServer {
    let server = ApiServer::start().await.expect("server");
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

/// Sleeps on the paused clock until `cond` holds, up to `limit`.
async fn until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "not reached within {limit:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// name → (assignment label, resourceVersion), as the server has them.
async fn assignments(server: &ApiServer) -> BTreeMap<String, (Option<String>, String)> {
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|cm| {
            let label = cm
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL))
                .cloned();
            (
                cm.metadata.name.clone().unwrap(),
                (label, cm.metadata.resource_version.clone().unwrap()),
            )
        })
        .collect()
}

/// name → the shard rendezvous hashing picks among `members`.
async fn winners(server: &ApiServer, members: &BTreeSet<String>) -> BTreeMap<String, String> {
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|cm| {
            let key = shard_key(&cm.metadata).unwrap();
            (
                cm.metadata.name.clone().unwrap(),
                winner(key.as_str(), members).unwrap().clone(),
            )
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

/// Every value the assignment label of each object took, in order, as a separate
/// informer saw it (a change of label is one entry).
type History = Arc<Mutex<BTreeMap<String, Vec<Option<String>>>>>;

fn record_history(server: &ApiServer) -> (InformerFactory, History) {
    let factory = InformerFactory::new(server.client());
    let informer = factory.namespaced::<ConfigMap>(NS);
    let history = History::default();
    let h = Arc::clone(&history);
    informer
        .add_event_fn(move |ev: Event<ConfigMap>| {
            let obj = match ev {
                Event::Added { obj, .. } | Event::Updated { new: obj, .. } => obj,
                Event::Deleted(_) => return,
            };
            let label = obj
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL))
                .cloned();
            let mut h = h.lock().unwrap();
            let seen = h.entry(obj.metadata.name.clone().unwrap()).or_default();
            if seen.last() != Some(&label) {
                seen.push(label);
            }
        })
        .unwrap();
    factory.start();
    (factory, history)
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
    assert_eq!(lease.spec.unwrap().holder_identity, None, "released");
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
    let (_history_factory, history) = record_history(&server);
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
    let want = winners(&server, &members).await;
    until("the history informer saw every write", SECS(5), || {
        history.lock().unwrap().values().all(|h| h.len() == 2)
    })
    .await;
    for (name, h) in history.lock().unwrap().iter() {
        assert_eq!(h, &[None, Some(want[name].clone())], "{name}");
    }
    let patched = patched(&server);
    assert_eq!(patched.len(), 900);
    assert!(
        patched.values().all(|n| *n == 1),
        "an object was patched twice"
    );
    for r in replicas {
        r.stop().await;
    }
}

/// A fourth shard joins three: only the objects whose winner changed move (all to
/// the new shard, at most 30% of them), and only they are patched.
#[tokio::test(start_paused = true)]
async fn a_joining_shard_takes_only_the_objects_it_now_wins() {
    let server = server_with(600).await;
    let mut replicas = start_ring(&server, &["a", "b", "c"]).await;
    converge(&server, &set(&["a", "b", "c"]), SECS(60)).await;
    let before = assignments(&server).await;
    let patched_before = patched(&server);

    let mut d = Replica::start(&server, "d");
    d.start_sharder(&server);
    replicas.push(d);
    let four = set(&["a", "b", "c", "d"]);
    converge(&server, &four, SECS(30)).await;
    let after = assignments(&server).await;
    let want = winners(&server, &four).await;

    let mut moved = BTreeSet::new();
    for (name, (label, rv)) in &after {
        let (old_label, old_rv) = &before[name];
        if old_label.as_ref() == Some(&want[name]) {
            assert_eq!(rv, old_rv, "{name} kept its shard but was written");
        } else {
            assert_eq!(label.as_deref(), Some("d"), "{name} moved elsewhere than d");
            moved.insert(name.clone());
        }
    }
    let n = moved.len();
    assert!(n > 0 && n * 10 <= after.len() * 3, "moved {n}");
    let mut patched_during = patched(&server);
    for (name, count) in patched_before {
        *patched_during.get_mut(&name).unwrap() -= count;
    }
    patched_during.retain(|_, n| *n > 0);
    assert_eq!(
        patched_during.keys().cloned().collect::<BTreeSet<_>>(),
        moved,
        "exactly the moved objects were patched"
    );
    for r in replicas {
        r.stop().await;
    }
}

/// A shard that dies (aborted, its lease not released) keeps its objects until its
/// lease expires; then exactly its objects move to their winners among the others,
/// at once, and the others' objects are not written.
#[tokio::test(start_paused = true)]
async fn a_dead_shards_objects_move_when_its_lease_expires() {
    let server = server_with(600).await;
    let mut replicas = start_ring(&server, &["a", "b", "c"]).await;
    converge(&server, &set(&["a", "b", "c"]), SECS(60)).await;
    until("a sharder leads", SECS(10), || {
        replicas.iter().any(Replica::is_sharding)
    })
    .await;
    let before = assignments(&server).await;

    // Kill a shard that is not the sharder.
    let victim_at = replicas.iter().position(|r| !r.is_sharding()).unwrap();
    let victim = replicas.remove(victim_at);
    let dead = victim.ring.shard().to_owned();
    victim.abort();
    let died = Instant::now();
    tokio::time::sleep(SECS(12)).await;
    let during = assignments(&server).await;
    assert_eq!(during, before, "nothing moves while the lease is valid");

    let rest: BTreeSet<String> = set(&["a", "b", "c"])
        .into_iter()
        .filter(|s| *s != dead)
        .collect();
    converge(&server, &rest, SECS(6)).await;
    assert!(
        died.elapsed() <= SECS(18),
        "moved {:?} after the abort",
        died.elapsed()
    );
    for (name, (label, rv)) in assignments(&server).await {
        let (old_label, old_rv) = &before[&name];
        if old_label.as_deref() == Some(dead.as_str()) {
            assert_ne!(label.as_deref(), Some(dead.as_str()));
        } else {
            assert_eq!(
                (&label, &rv),
                (old_label, old_rv),
                "{name} was not the dead shard's"
            );
        }
    }
    for r in replicas {
        r.stop().await;
    }
}

/// Injected 409s and 500s on the sharder's patches: the faults are hit, assignment
/// still completes, and every object's label was written exactly once.
#[tokio::test(start_paused = true)]
async fn patch_conflicts_and_errors_delay_but_never_double_assign() {
    let server = server_with(300).await;
    let (_history_factory, history) = record_history(&server);
    let patches = || Matcher::verb(Verb::Patch).resource("configmaps");
    let conflicts = server.inject(patches().skip(5).times(40), Fault::Conflict);
    let errors = server.inject(patches().skip(60).times(40), Fault::InternalError);
    let replicas = start_ring(&server, &["a", "b", "c"]).await;
    let members = set(&["a", "b", "c"]);
    converge(&server, &members, SECS(120)).await;
    assert_eq!(server.fault_hits(conflicts), 40);
    assert_eq!(server.fault_hits(errors), 40);

    let want = winners(&server, &members).await;
    until("the history informer saw every write", SECS(5), || {
        let h = history.lock().unwrap();
        h.len() == 300 && h.values().all(|h| h.len() == 2)
    })
    .await;
    for (name, h) in history.lock().unwrap().iter() {
        assert_eq!(h, &[None, Some(want[name].clone())], "{name}");
    }
    let patched = patched(&server);
    assert_eq!(patched.len(), 300);
    assert!(
        patched.values().all(|n| *n == 1),
        "an object was patched twice"
    );
    for r in replicas {
        r.stop().await;
    }
}
