//! A relist stores what the server answered. A real API server changes what a read
//! returns without a new resourceVersion when a CRD update adds a schema default (or
//! prunes a field), then ends the watches of the kind, so the informer relists: the
//! cache must hold the relisted objects, and handlers are told as client-go tells
//! them (an update whose resourceVersion did not change is a resync).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::mpsc;

use crate::fifo::QueueMode;
use crate::informer::*;
use crate::listwatch::FakeSource;
use crate::object::MaybeTombstone;

use crate::test_support::*;

/// Sends `(name, old priority, new priority)` for every update it is told of.
struct Updates(mpsc::UnboundedSender<(String, String, String)>);

fn priority(pod: &Pod) -> String {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("priority"))
        .cloned()
        .unwrap_or_default()
}

impl EventHandler<Pod> for Updates {
    fn on_add(&self, _: &Arc<Pod>, _: bool) {}
    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        let name = new.metadata.name.clone().unwrap_or_default();
        let _ = self.0.send((name, priority(old), priority(new)));
    }
    fn on_delete(&self, _: &MaybeTombstone<Pod>) {}
}

each_queue!(
    #[tokio::test(start_paused = true)]
    relist_stores_what_the_server_answered_at_an_unchanged_resource_version
);

/// Two of three objects get a default (`priority: 5`) at their unchanged
/// resourceVersions, the watch ends and resuming it is `410`: after the relist, both
/// are cached with the default, at the same resourceVersion as before, as new copies;
/// the third, listed exactly as cached, keeps its cached copy. A handler resyncing
/// every second (so due for a resync at every check) is told of each new state as an
/// update from the old one; a handler without a resync period is told nothing
/// (client-go delivers an update at an unchanged resourceVersion only to handlers due
/// for a resync).
async fn relist_stores_what_the_server_answered_at_an_unchanged_resource_version(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    for name in ["a", "b", "c"] {
        source.add(ns_pod(name));
    }
    let informer = SharedIndexInformer::with_options(
        source.clone(),
        InformerOptions::default()
            .queue(queue)
            .resync(Duration::from_secs(1)),
    );
    let (resyncing_tx, mut resyncing) = mpsc::unbounded_channel();
    informer.add_event_handler(Updates(resyncing_tx)).unwrap();
    let (plain_tx, mut plain) = mpsc::unbounded_channel();
    informer
        .add_event_handler_with_resync(Updates(plain_tx), Duration::ZERO)
        .unwrap();
    let running = start(&informer);
    informer.wait_synced().await.expect("synced");
    // Once a resync round has begun, the resyncing handler is due at every check.
    let (_, old, new) = resyncing.recv().await.expect("a resync");
    assert_eq!(
        (old.as_str(), new.as_str()),
        ("", ""),
        "a resync: nothing changed"
    );
    let before: Vec<Arc<Pod>> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            informer
                .indexer()
                .get(&format!("ns/{n}").parse().unwrap())
                .unwrap()
        })
        .collect();

    source.rewrite_stored(|pod| {
        if pod.metadata.name.as_deref() != Some("a") {
            pod.metadata
                .labels
                .get_or_insert_default()
                .insert("priority".into(), "5".into());
        }
    });
    // A change the watch misses, and a history that no longer reaches back to it: the
    // watch resumed after the break is `410`, so the informer relists.
    source.add_drop_watch(ns_pod("d"));
    source.compact_history();
    source.break_watches();

    // The resyncing handler is told of each object's relisted state (periodic resyncs,
    // old and new alike, may come in between).
    let mut told = std::collections::BTreeSet::new();
    let relisted = async {
        while told.len() < 2 {
            let (name, old, new) = resyncing.recv().await.expect("the informer runs");
            if new == "5" {
                assert_eq!(old, "", "{name}: told the change from the cached state");
                told.insert(name);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), relisted)
        .await
        .expect("the resyncing handler is told of the relisted states");
    let cached_a = informer.indexer().get(&"ns/a".parse().unwrap()).unwrap();
    assert!(
        Arc::ptr_eq(&cached_a, &before[0]),
        "ns/a: unchanged, the cached copy"
    );
    for old in &before[1..] {
        let key = format!("ns/{}", old.metadata.name.as_deref().unwrap());
        let cached = informer.indexer().get(&key.parse().unwrap()).unwrap();
        assert_eq!(
            priority(&cached),
            "5",
            "{key}: the server's answer is cached"
        );
        assert_eq!(
            cached.metadata.resource_version, old.metadata.resource_version,
            "{key}: at the same resourceVersion"
        );
        assert!(!Arc::ptr_eq(&cached, old), "{key}: not the old copy");
    }
    assert!(informer.reflector_stats().relists >= 1, "a relist happened");
    settle().await;
    assert!(
        plain.try_recv().is_err(),
        "a handler without a resync period is not told of an update at an unchanged resourceVersion"
    );
    running.stop().await;
}
