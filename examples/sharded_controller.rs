//! One controller sharded over three replicas on the embedded API server: 30
//! ConfigMaps, each the controller owner of a Secret. Every replica runs
//!
//! - a `Controller::sharded(&ring)`, whose informers select only its shard's
//!   ConfigMaps and Secrets, which holds the replica's membership Lease and reconciles
//!   only while it is a member;
//! - a `Sharder` of the ConfigMaps and a `Sharder::owned` of the Secrets (the ring
//!   elects one replica to write): each object is labelled with its shard by
//!   rendezvous hashing, a Secret with its owner's.
//!
//! Then one replica is killed (its lease not released): once the lease expires,
//! its objects — and only its — move to the other two, which reconcile them.
//!
//! ```sh
//! cargo run --example sharded_controller
//! ```
//!
//! Sharding is behind the `sharding` feature (`reflector = { version = "0.2",
//! features = ["sharding"] }` in a user's crate; this repository's examples have it).
//!
//! The timings are short so the demo ends in a few seconds: lease 2 s, renew
//! deadline 1.5 s, retry period 500 ms (the defaults, as client-go's, are 15 s,
//! 10 s and 2 s — keep those in production).

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use reflector::informer::InformerScope;
use reflector::prelude::*;
use reflector::sharding::{Ring, Sharder};
use reflector_testkit::ApiServer;
use serde_json::json;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing_subscriber::EnvFilter;

const OBJECTS: usize = 30;

/// Who reconciled what last: ConfigMap name → replica.
type Reconciled = Arc<Mutex<BTreeMap<String, String>>>;

struct Ctx {
    shard: String,
    reconciled: Reconciled,
}

async fn reconcile(req: Request<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Infallible> {
    ctx.reconciled
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(req.key.name().to_owned(), ctx.shard.clone());
    Ok(Action::done())
}

/// One replica: a sharded controller and the two sharders, on tasks it owns.
struct Replica {
    ring: Ring,
    mine: SharedIndexInformer<ConfigMap>,
    sharder: Arc<Sharder<ConfigMap>>,
    stop: CancellationToken,
    tasks: JoinSet<()>,
}

fn start(
    server: &ApiServer,
    shard: &str,
    reconciled: &Reconciled,
) -> Result<Replica, Box<dyn std::error::Error>> {
    let client = server.client_with_user_agent(shard)?; // each replica its own client
    let config = LeaderElectionConfig::default()
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_millis(1500))
        .retry_period(Duration::from_millis(500));
    let ring = Ring::new(
        Api::<Lease>::default_namespaced(client.clone()),
        "config-maps",
        shard,
        config,
    )?;
    let factory = InformerFactory::new(client);
    let sharder = Arc::new(Sharder::<ConfigMap>::new(&ring, &factory)?);
    let children = Sharder::<Secret>::owned(&ring, &factory)?;
    let scope = InformerScope::default().labels(ring.selector());
    let mine = factory.scoped::<ConfigMap>(&scope);
    let stop = CancellationToken::new();
    let controller = Controller::new(mine.clone())
        .owns(factory.scoped::<Secret>(&scope))
        .sharded(&ring) // runs the ring's membership too
        .start_informers(false)
        .graceful_shutdown_on(stop.clone().cancelled_owned());
    factory.start();
    let ctx = Arc::new(Ctx {
        shard: shard.to_owned(),
        reconciled: Arc::clone(reconciled),
    });
    let mut tasks = JoinSet::new();
    let name = shard.to_owned();
    tasks.spawn(async move {
        let _factory = factory; // the informers live as long as the controller
        if let Err(e) = controller.run(reconcile, ctx).await {
            eprintln!("{name}: controller stopped: {e}");
        }
    });
    let (primaries, until) = (Arc::clone(&sharder), stop.clone());
    tasks.spawn(async move {
        if let Err(e) = primaries.run(until).await {
            eprintln!("the ConfigMap sharder stopped: {e}");
        }
    });
    let until = stop.clone();
    tasks.spawn(async move {
        if let Err(e) = children.run(until).await {
            eprintln!("the Secret sharder stopped: {e}");
        }
    });
    Ok(Replica {
        ring,
        mine,
        sharder,
        stop,
        tasks,
    })
}

/// Each replica's share, as its own (label-selected) informer holds it.
fn shares(replicas: &[Replica]) -> BTreeMap<String, usize> {
    replicas
        .iter()
        .map(|r| (r.ring.shard().to_owned(), r.mine.lister().list().len()))
        .collect()
}

/// Waits until the replicas' shares add up to every object and each object was
/// last reconciled by the replica that holds it.
async fn settled(
    replicas: &[Replica],
    reconciled: &Reconciled,
) -> Result<(), tokio::time::error::Elapsed> {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let by = reconciled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let placed = replicas.iter().all(|r| {
                r.mine.lister().list().iter().all(|cm| {
                    by.get(cm.metadata.name.as_deref().unwrap_or_default())
                        == Some(&r.ring.shard().to_owned())
                })
            });
            if placed && shares(replicas).values().sum::<usize>() == OBJECTS {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init(); // logs, reconcile errors too
    let server = ApiServer::start().await?;
    for i in 0..OBJECTS {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("cm-{i:02}"), "namespace": "default", "uid": format!("uid-{i}")},
        }))?;
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {
                "name": format!("cm-{i:02}-secret"), "namespace": "default",
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                    "name": format!("cm-{i:02}"), "uid": format!("uid-{i}"), "controller": true}],
            },
        }))?;
        server.insert(&cm)?;
        server.insert(&secret)?;
    }
    let reconciled = Reconciled::default();
    let mut replicas = Vec::new();
    for shard in ["replica-a", "replica-b", "replica-c"] {
        replicas.push(start(&server, shard, &reconciled)?);
    }

    settled(&replicas, &reconciled).await?;
    let sharder = replicas
        .iter()
        .find(|r| r.sharder.election().is_leader())
        .map_or("nobody", |r| r.ring.shard());
    println!("ring members: {:?}", replicas[0].ring.members());
    println!("{sharder} is the sharder");
    println!("shares: {:?}", shares(&replicas));

    // Kill a replica that is not the sharder, without releasing its lease.
    let victim = replicas
        .iter()
        .position(|r| !r.sharder.election().is_leader())
        .unwrap_or(0);
    let mut gone = replicas.remove(victim);
    let dead = gone.ring.shard().to_owned();
    let its: BTreeSet<String> = gone
        .mine
        .lister()
        .list()
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect();
    println!("killing {dead} (its lease will expire), which held {its:?}");
    let killed = Instant::now();
    gone.tasks.shutdown().await; // aborts: nothing is released

    settled(&replicas, &reconciled).await?;
    let by = reconciled
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let moved: BTreeMap<&String, &String> =
        its.iter().filter_map(|n| Some((n, by.get(n)?))).collect();
    println!(
        "reassigned after {:?}: shares {:?}, members {:?}",
        killed.elapsed(),
        shares(&replicas),
        replicas[0].ring.members()
    );
    println!("{dead}'s objects now reconciled by: {moved:?}");

    for mut r in replicas {
        r.stop.cancel(); // graceful: reconciles end, then the lease is released
        while r.tasks.join_next().await.is_some() {}
    }
    println!("done");
    Ok(())
}
