//! Two replicas of one ConfigMap controller, each with its own client, elect a
//! leader through a `coordination.k8s.io/v1` Lease: both sync their caches, only
//! the leader reconciles. Stopping the leader releases the lease and the other
//! replica takes over.
//!
//! ```sh
//! cargo run --example leader_election                # on the embedded API server
//! cargo run --example leader_election -- --cluster   # on your kubeconfig's namespace
//! ```
//!
//! The timings are short so the demo ends in a few seconds: lease 2 s, renew
//! deadline 1.5 s, retry period 500 ms (the defaults, as client-go's, are 15 s,
//! 10 s and 2 s — keep those in production).

use std::sync::Arc;
use std::time::Duration;

use futures::future::select_all;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use reflector::controller::ControllerError;
use reflector::prelude::*;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing_subscriber::EnvFilter;

async fn reconcile(req: Request<ConfigMap>, replica: Arc<String>) -> Result<Action, kube::Error> {
    println!("  {replica} reconciles {}", req.key);
    Ok(Action::done())
}

/// One replica: its election, its stop token, and its running controller.
struct Replica {
    election: LeaderElection,
    stop: CancellationToken,
    run: JoinHandle<Result<(), ControllerError>>,
}

fn start(client: kube::Client, id: &str) -> Result<Replica, Box<dyn std::error::Error>> {
    let config = LeaderElectionConfig::default()
        .identity(id)
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_millis(1500))
        .retry_period(Duration::from_millis(500))
        .release_on_cancel(true);
    let leases = Api::<Lease>::default_namespaced(client.clone());
    let election = LeaderElection::new(leases, "configmap-controller", config)?;
    let stop = CancellationToken::new();
    let run = tokio::spawn(
        Controller::for_api(Api::<ConfigMap>::default_namespaced(client))
            .leader_elected(election.clone())
            .graceful_shutdown_on(stop.clone().cancelled_owned())
            .run(reconcile, Arc::new(id.to_owned())),
    );
    Ok(Replica {
        election,
        stop,
        run,
    })
}

/// The index of the first replica to lead.
async fn first_leader(replicas: &[Replica]) -> usize {
    let leading = replicas.iter().map(|r| Box::pin(r.election.leading()));
    select_all(leading).await.1
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init(); // logs, reconcile errors too
    let (clients, _server) = embedded::clients_unless_cluster().await?;
    let mut replicas = Vec::new();
    for (i, client) in clients.into_iter().enumerate() {
        replicas.push(start(client, &format!("replica-{i}"))?);
    }

    let leader = first_leader(&replicas).await;
    let follower = 1 - leader;
    println!("{} leads", replicas[leader].election.identity());
    tokio::time::sleep(Duration::from_secs(1)).await;
    println!(
        "{} is {}",
        replicas[follower].election.identity(),
        replicas[follower].election.state()
    );

    let gone = replicas.remove(leader);
    println!(
        "stopping {} (it releases the lease)",
        gone.election.identity()
    );
    let stopped = Instant::now();
    gone.stop.cancel();
    gone.run.await??;
    let next = &replicas[0];
    tokio::time::timeout(Duration::from_secs(10), next.election.leading()).await?;
    println!(
        "hand-over: {} leads, {:?} after the stop",
        next.election.identity(),
        stopped.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(500)).await;

    next.stop.cancel();
    for r in replicas {
        r.run.await??;
    }
    println!("done");
    Ok(())
}

/// Not part of the controller: two clients of the embedded API server (with two
/// ConfigMaps to reconcile), or two clients of your cluster with `--cluster`.
mod embedded {
    use k8s_openapi::api::core::v1::ConfigMap;
    use reflector_testkit::ApiServer;

    type Clients = (Vec<kube::Client>, Option<ApiServer>);

    pub async fn clients_unless_cluster() -> Result<Clients, Box<dyn std::error::Error>> {
        if std::env::args().any(|a| a == "--cluster") {
            let clients = vec![
                kube::Client::try_default().await?,
                kube::Client::try_default().await?,
            ];
            return Ok((clients, None));
        }
        let server = ApiServer::start().await?;
        for name in ["web", "db"] {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some(name.into());
            cm.metadata.namespace = Some("default".into());
            server.insert(&cm)?;
        }
        Ok((vec![server.client(), server.client()], Some(server)))
    }
}
