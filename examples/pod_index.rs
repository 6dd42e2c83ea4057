//! One shared informer for Pods, a by-node index built with the runtime API, and two
//! handlers sharing the one watch.
//!
//! By default it starts the embedded API server (reflector-testkit), schedules a few
//! pods onto nodes, schedules one more through the `binding` subresource (as a scheduler
//! does), deletes one, and prints pods per node from the index.
//! With `--cluster` it uses the current kubeconfig instead and runs until Ctrl+C.
//!
//! ```sh
//! cargo run --example pod_index
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::api::{Api, DeleteParams, PostParams};
use reflector::informer::{Change, InformerOptions, SharedIndexInformer};
use reflector::listwatch::ApiListerWatcher;
use reflector::store::{Indexers, StoreError};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

const BY_NODE: &str = "by_node";

fn node_of(p: &Pod) -> Vec<String> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

fn pod(name: &str, node: Option<&str>) -> Pod {
    let mut p = Pod {
        spec: Some(PodSpec {
            node_name: node.map(str::to_owned),
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    p.metadata.name = Some(name.to_owned());
    p
}

/// Prints the pods of each node, from the index (an error if the informer lacks it).
fn print_nodes(informer: &SharedIndexInformer<Pod>, nodes: &[&str]) -> Result<(), StoreError> {
    for node in nodes {
        let mut pods: Vec<String> = informer
            .lister()
            .by_index(BY_NODE, node)?
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        pods.sort();
        println!("  {node:<8} {}", pods.join(", "));
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init(); // logs, reconcile errors too
    let cluster = std::env::args().any(|a| a == "--cluster");
    // Keeps the embedded server alive for the whole run.
    let mut server = None;
    let client = if cluster {
        kube::Client::try_default().await?
    } else {
        let s = reflector_testkit::ApiServer::start().await?;
        println!("embedded API server at {}", s.url());
        let c = s.client();
        server = Some(s);
        c
    };

    let informer = SharedIndexInformer::with_options(
        ApiListerWatcher::new(Api::<Pod>::all(client.clone())),
        InformerOptions::default().indexers(Indexers::new().with(BY_NODE, node_of)),
    );
    // Two handlers, one watch: a logger and a counter.
    informer.add_event_fn(|ev: Change<Pod>| match ev {
        Change::Added {
            obj,
            is_in_initial_list,
        } => {
            let tag = if is_in_initial_list {
                " (initial list)"
            } else {
                ""
            };
            println!(
                "+ {} on {:?}{tag}",
                obj.metadata.name.as_deref().unwrap_or("?"),
                node_of(&obj)
            );
        }
        Change::Updated { old, new } => {
            if node_of(&old) != node_of(&new) {
                println!(
                    "~ {} node {:?} -> {:?}",
                    new.metadata.name.as_deref().unwrap_or("?"),
                    node_of(&old),
                    node_of(&new)
                );
            }
        }
        Change::Deleted(d) => println!("- {}", d.object().metadata.name.as_deref().unwrap_or("?")),
    })?;
    let events = Arc::new(AtomicUsize::new(0));
    let counter = events.clone();
    informer.add_event_fn(move |ev: Change<Pod>| {
        if let Change::Added { .. } = ev {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    })?;

    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    informer.wait_synced().await?;

    if cluster {
        println!("watching pods; Ctrl+C to stop");
        tokio::signal::ctrl_c().await?;
        let nodes: Vec<String> = informer.indexer().index_values(BY_NODE);
        let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
        print_nodes(&informer, &nodes)?;
    } else {
        let pods = Api::<Pod>::namespaced(client, "default");
        let nodes = ["node-a", "node-b", "node-c"];
        for i in 0..9 {
            pods.create(
                &PostParams::default(),
                &pod(&format!("web-{i}"), Some(nodes[i % 3])),
            )
            .await?;
        }
        // A pod's node is set once, by a binding (what a scheduler posts); the
        // index follows the update from no node to node-c.
        pods.create(&PostParams::default(), &pod("web-9", None))
            .await?;
        let binding = serde_json::json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": { "name": "web-9" },
            "target": { "apiVersion": "v1", "kind": "Node", "name": "node-c" },
        });
        let _: serde_json::Value = pods
            .create_subresource("binding", "web-9", &PostParams::default(), &binding)
            .await?;
        pods.delete("web-4", &DeleteParams::default()).await?;

        let want: BTreeMap<&str, usize> = [("node-a", 3), ("node-b", 2), ("node-c", 4)].into();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let got = nodes
                .iter()
                .map(|n| Ok((*n, informer.lister().by_index(BY_NODE, n)?.len())))
                .collect::<Result<BTreeMap<&str, usize>, StoreError>>()?;
            if got == want {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("index did not converge: {got:?}").into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!("\npods per node (from the by_node index):");
        print_nodes(&informer, &nodes)?;
        println!(
            "\n{} adds seen by the counting handler, one watch: {} list(s), {} watch(es)",
            events.load(Ordering::Relaxed),
            informer.reflector_stats().lists,
            informer.reflector_stats().watches
        );
    }

    cancel.cancel();
    run.await?;
    if let Some(s) = server.take() {
        s.shutdown().await;
    }
    Ok(())
}
