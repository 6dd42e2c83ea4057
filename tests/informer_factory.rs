//! `InformerFactory` on the embedded API server: one informer per type and scope,
//! start-once, a sync wait woken by the informers, a shutdown that waits for every
//! task, a dropped factory that stops its informers, and managedFields dropped by
//! default.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use reflector::informer::{InformerFactory, InformerScope};
use reflector_testkit::{ApiServer, Verb};

fn cm(ns: &str, name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some(ns.into());
    c.metadata.labels = Some([("app".to_owned(), name.to_owned())].into());
    c.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
        manager: Some("kubectl".into()),
        operation: Some("Update".into()),
        ..ManagedFieldsEntry::default()
    }]);
    c
}

/// A server holding three ConfigMaps (two in `a`, one in `b`), and a factory over
/// it.
async fn seeded_factory() -> (ApiServer, InformerFactory) {
    let s = server().await;
    let factory = InformerFactory::new(s.client());
    (s, factory)
}

async fn server() -> ApiServer {
    let s = ApiServer::start().await.expect("server");
    let objs = [cm("a", "one"), cm("a", "two"), cm("b", "three")];
    s.insert_many(objs.iter()).expect("insert");
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_informer_per_type_namespace_and_selectors() {
    let (s, factory) = seeded_factory().await;
    let all = factory.informer::<ConfigMap>();
    let again = factory.informer::<ConfigMap>();
    let in_a = factory.namespaced::<ConfigMap>("a");
    let labelled = factory.scoped::<ConfigMap>(&InformerScope::default().labels("app=one"));
    let pods = factory.informer::<Pod>();

    // A handler added through one handle is registered on the other: same informer.
    let reg = all.add_event_fn(|_| {}).unwrap();
    assert!(again.is_registered(&reg));
    assert!(!in_a.is_registered(&reg));
    assert!(!labelled.is_registered(&reg));

    factory.start();
    factory.start(); // starting again starts nothing new
    tokio::time::timeout(Duration::from_secs(10), factory.wait_synced())
        .await
        .expect("synced in time")
        .expect("no informer stopped");
    for (name, synced) in [
        ("ConfigMap", all.has_synced()),
        ("ConfigMap in a", in_a.has_synced()),
        ("ConfigMap labels app=one", labelled.has_synced()),
        ("Pod", pods.has_synced()),
    ] {
        assert!(synced, "{name} not synced when the factory's wait returned");
    }
    assert_eq!(all.indexer().len(), 3);
    assert_eq!(in_a.indexer().len(), 2);
    assert_eq!(labelled.indexer().len(), 1);
    assert_eq!(pods.indexer().len(), 0);

    // Four informers, one list each: starting twice did not double them.
    let lists = s
        .request_log()
        .iter()
        .filter(|e| e.verb == Verb::List)
        .count();
    assert_eq!(lists, 4);

    factory.shutdown().await;
    assert!(all.is_stopped() && in_a.is_stopped() && labelled.is_stopped() && pods.is_stopped());
    // The client dropped every watch connection before shutdown returned.
    no_open_watches(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_fields_are_dropped_by_default_and_kept_on_request() {
    let s = server().await;
    let lean = InformerFactory::new(s.client());
    let full = InformerFactory::new(s.client()).keep_managed_fields();
    let lean_cms = lean.informer::<ConfigMap>();
    let full_cms = full.informer::<ConfigMap>();
    lean.start();
    full.start();
    lean.wait_synced().await.unwrap();
    full.wait_synced().await.unwrap();
    let one = lean_cms.lister().get(Some("a"), "one").expect("cached");
    assert!(one.metadata.managed_fields.is_none());
    assert_eq!(one.metadata.labels.as_ref().unwrap()["app"], "one");
    let one = full_cms.lister().get(Some("a"), "one").expect("cached");
    assert_eq!(one.metadata.managed_fields.as_ref().map(Vec::len), Some(1));
    lean.shutdown().await;
    full.shutdown().await;
}

/// Waits until the server sees no open watch (it notices a closed connection on its
/// next poll).
async fn no_open_watches(s: &ApiServer) {
    tokio::time::timeout(Duration::from_secs(5), async {
        while s.open_watches() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the server saw every watch closed");
}

/// The factory owns what it started: dropping it (no `shutdown`) ends every watch
/// it opened and stops its informers' tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_factory_ends_its_watches_and_tasks() {
    let (s, factory) = seeded_factory().await;
    let cms = factory.informer::<ConfigMap>();
    let pods = factory.informer::<Pod>();
    factory.start();
    factory.wait_synced().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        while s.open_watches() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("both informers watch");

    drop(factory);
    no_open_watches(&s).await;
    // The informers' tasks ended: each run returned and marked its informer stopped.
    tokio::time::timeout(Duration::from_secs(5), async {
        while !(cms.is_stopped() && pods.is_stopped()) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("every informer task ended");
    // The handles outlive the factory: their caches are still readable.
    assert_eq!(cms.indexer().len(), 3);
}
