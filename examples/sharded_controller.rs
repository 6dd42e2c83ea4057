//! Three replicas split 30 ConfigMaps between them through a sharding ring: each
//! holds its membership Lease, one is elected sharder and labels every object with
//! its shard (rendezvous hashing), and each replica's informer selects only its
//! share. Then one replica is killed (its lease not released): once the lease
//! expires, its objects move to the other two — and only its objects.
//!
//! ```sh
//! cargo run --example sharded_controller
//! ```
//!
//! The timings are short so the demo ends in a few seconds: lease 2 s, renew
//! deadline 1.5 s, retry period 500 ms (the defaults, as client-go's, are 15 s,
//! 10 s and 2 s — keep those in production). Not yet shown: drain hand-over and
//! `Controller::sharded` (the shard side), which are still to come.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use reflector::informer::InformerScope;
use reflector::prelude::*;
use reflector::sharding::{Ring, Sharder};
use reflector_testkit::ApiServer;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const OBJECTS: usize = 30;

/// One replica: its ring membership, its sharder candidate, and the informer of its
/// share, all on one task it owns.
struct Replica {
    ring: Ring,
    sharder: std::sync::Arc<Sharder<ConfigMap>>,
    mine: SharedIndexInformer<ConfigMap>,
    stop: CancellationToken,
    run: JoinHandle<()>,
}

fn start(server: &ApiServer, shard: &str) -> Result<Replica, Box<dyn std::error::Error>> {
    let client = server.client(); // each replica its own client
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
    let sharder = std::sync::Arc::new(Sharder::<ConfigMap>::new(&ring, &factory)?);
    let mine = factory.scoped::<ConfigMap>(&InformerScope::default().labels(ring.selector()));
    factory.start();
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (ring, sharder, stop) = (ring.clone(), sharder.clone(), stop.clone());
        async move {
            let _factory = factory; // the informers live as long as the replica
            if let Err(e) = tokio::try_join!(ring.run(stop.clone()), sharder.run(stop)) {
                eprintln!("replica stopped: {e}");
            }
        }
    });
    Ok(Replica {
        ring,
        sharder,
        mine,
        stop,
        run,
    })
}

/// Each replica's share, as its own (label-selected) informer holds it.
fn shares(replicas: &[Replica]) -> BTreeMap<String, usize> {
    replicas
        .iter()
        .map(|r| (r.ring.shard().to_owned(), r.mine.lister().list().len()))
        .collect()
}

/// Waits until the replicas' shares add up to every object.
async fn all_assigned(replicas: &[Replica]) -> Result<(), tokio::time::error::Elapsed> {
    tokio::time::timeout(Duration::from_secs(30), async {
        while shares(replicas).values().sum::<usize>() != OBJECTS {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = ApiServer::start().await?;
    for i in 0..OBJECTS {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i:02}"));
        cm.metadata.namespace = Some("default".into());
        server.insert(&cm)?;
    }
    let mut replicas = Vec::new();
    for shard in ["replica-a", "replica-b", "replica-c"] {
        replicas.push(start(&server, shard)?);
    }

    all_assigned(&replicas).await?;
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
    let gone = replicas.remove(victim);
    println!("killing {} (its lease will expire)", gone.ring.shard());
    let killed = Instant::now();
    gone.run.abort();
    let _ = gone.run.await;

    all_assigned(&replicas).await?;
    println!(
        "reassigned {:?} after the kill: shares {:?}, members {:?}",
        killed.elapsed(),
        shares(&replicas),
        replicas[0].ring.members()
    );

    for r in replicas {
        r.stop.cancel();
        r.run.await?;
    }
    println!("done");
    Ok(())
}
