//! `InformerFactory` on the embedded API server: one informer per type and scope,
//! start-once, a sync wait woken by the informers, a shutdown that waits for every
//! task, a dropped factory that stops its informers, managedFields dropped by
//! default, and one informer's own settings without a second factory.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::ResourceExt;
use reflector::ReflectorOptions;
use reflector::informer::{Change, InformerFactory, InformerOptions, InformerScope};
use reflector_testkit::{ApiServer, Verb};
use tokio::sync::Notify;

use crate::support::patience::{PATIENCE, POLL};

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
    tokio::time::timeout(PATIENCE, factory.wait_synced())
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
    tokio::time::timeout(PATIENCE, async {
        while s.open_watches() > 0 {
            tokio::time::sleep(POLL).await;
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
    tokio::time::timeout(PATIENCE, async {
        while s.open_watches() < 2 {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .expect("both informers watch");

    drop(factory);
    no_open_watches(&s).await;
    // The informers' tasks ended: each run returned and marked its informer stopped.
    tokio::time::timeout(PATIENCE, async {
        while !(cms.is_stopped() && pods.is_stopped()) {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .expect("every informer task ended");
    // The handles outlive the factory: their caches are still readable.
    assert_eq!(cms.indexer().len(), 3);
}

/// The `limit` of every list request to `path`, in request order.
fn list_limits(s: &ApiServer, path: &str) -> Vec<Option<String>> {
    s.request_log()
        .iter()
        .filter(|e| e.verb == Verb::List && e.path == path)
        .map(|e| e.param("limit").map(str::to_owned))
        .collect()
}

/// One factory, three informers: ConfigMaps in `a` and Pods with their own page
/// sizes, ConfigMaps in `a` with their own resync, ConfigMaps in `b` with the
/// factory's page size and resync. No second factory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_informer_page_size_and_resync_without_a_second_factory() {
    let (s, factory) = seeded_factory().await;
    let factory = factory
        .default_resync(Duration::from_secs(3600))
        .reflector_options(ReflectorOptions::default().page_size(7));
    let in_a = factory.scoped::<ConfigMap>(
        InformerOptions::default()
            .scope(InformerScope::default().namespace("a"))
            .reflector_options(ReflectorOptions::default().page_size(1))
            .resync(Duration::from_secs(1)),
    );
    let in_b = factory.namespaced::<ConfigMap>("b");
    let pods = factory.scoped::<Pod>(
        InformerOptions::default().reflector_options(ReflectorOptions::default().page_size(2)),
    );
    // Asking again by scope alone is the same informer, with the settings it was made with.
    let again = factory.namespaced::<ConfigMap>("a");

    // Resyncs re-deliver an unchanged object: an update whose versions are equal.
    let resyncs = |notify: Arc<Notify>, count: Arc<AtomicUsize>| {
        move |change: Change<ConfigMap>| {
            if let Change::Updated { old, new } = change
                && old.resource_version() == new.resource_version()
            {
                count.fetch_add(1, Ordering::SeqCst);
                notify.notify_one();
            }
        }
    };
    let (a_resynced, a_resyncs) = (Arc::new(Notify::new()), Arc::new(AtomicUsize::new(0)));
    let b_resyncs = Arc::new(AtomicUsize::new(0));
    let reg = in_a
        .add_event_fn(resyncs(Arc::clone(&a_resynced), Arc::clone(&a_resyncs)))
        .unwrap();
    assert!(again.is_registered(&reg), "one informer per kind and scope");
    in_b.add_event_fn(resyncs(Arc::new(Notify::new()), Arc::clone(&b_resyncs)))
        .unwrap();

    factory.start();
    tokio::time::timeout(PATIENCE, factory.wait_synced())
        .await
        .expect("synced in time")
        .expect("no informer stopped");
    assert_eq!((in_a.indexer().len(), in_b.indexer().len()), (2, 1));

    // Each informer's lists carried its own page size (the API server serves a
    // resourceVersion=0 list in one page whatever the limit; the limit is still sent).
    let one = Some("1".to_owned());
    let seven = Some("7".to_owned());
    let two = Some("2".to_owned());
    assert_eq!(list_limits(&s, "/api/v1/namespaces/a/configmaps"), [one]);
    assert_eq!(list_limits(&s, "/api/v1/namespaces/b/configmaps"), [seven]);
    assert_eq!(list_limits(&s, "/api/v1/pods"), [two]);

    // The informer in `a` resyncs every second; the one in `b` has the factory's hour.
    tokio::time::timeout(PATIENCE, a_resynced.notified())
        .await
        .expect("the informer in a resynced (its period is 1 s)");
    assert!(a_resyncs.load(Ordering::SeqCst) >= 1);
    assert!(in_a.reflector_stats().resyncs >= 1);
    assert_eq!(b_resyncs.load(Ordering::SeqCst), 0);
    assert_eq!(in_b.reflector_stats().resyncs, 0);
    assert_eq!(pods.reflector_stats().resyncs, 0);

    factory.shutdown().await;
}
