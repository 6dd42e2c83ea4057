//! `InformerFactory` on the embedded API server: one informer per (type,
//! namespace, selectors), start-once, per-informer sync report, a shutdown that
//! waits for every task, and managedFields dropped by default.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use reflector::informer::{EventHandlerFns, InformerFactory};
use reflector_testkit::{ApiServer, Verb};
use tokio_util::sync::CancellationToken;

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

async fn server() -> ApiServer {
    let s = ApiServer::start().await.expect("server");
    let objs = [cm("a", "one"), cm("a", "two"), cm("b", "three")];
    s.insert_many(objs.iter()).expect("insert");
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_informer_per_type_namespace_and_selectors() {
    let s = server().await;
    let factory = InformerFactory::new(s.client());
    let all = factory.informer::<ConfigMap>();
    let again = factory.informer::<ConfigMap>();
    let in_a = factory.namespaced::<ConfigMap>("a");
    let labelled = factory.informer_for::<ConfigMap>(None, Some("app=one"), None);
    let pods = factory.informer::<Pod>();

    // A handler added through one handle is registered on the other: same informer.
    let reg = all.add_event_handler(EventHandlerFns::new()).unwrap();
    assert!(again.is_registered(&reg));
    assert!(!in_a.is_registered(&reg));
    assert!(!labelled.is_registered(&reg));

    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.start(&cancel); // starting again starts nothing new
    let synced = tokio::time::timeout(
        Duration::from_secs(10),
        factory.wait_for_cache_sync(&cancel),
    )
    .await
    .expect("synced in time");
    assert_eq!(
        synced.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "ConfigMap",
            "ConfigMap in a",
            "ConfigMap labels app=one",
            "Pod"
        ]
    );
    assert!(synced.values().all(|v| *v), "{synced:?}");
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
    // The client dropped every watch connection before shutdown returned; the
    // server notices each closed connection on its next poll.
    tokio::time::timeout(Duration::from_secs(5), async {
        while s.open_watches() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the server saw every watch closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_fields_are_dropped_by_default_and_kept_on_request() {
    let s = server().await;
    let lean = InformerFactory::new(s.client());
    let full = InformerFactory::new(s.client()).keep_managed_fields();
    let lean_cms = lean.informer::<ConfigMap>();
    let full_cms = full.informer::<ConfigMap>();
    let cancel = CancellationToken::new();
    lean.start(&cancel);
    full.start(&cancel);
    lean.wait_for_cache_sync(&cancel).await;
    full.wait_for_cache_sync(&cancel).await;
    let one = lean_cms.lister().get(Some("a"), "one").expect("cached");
    assert!(one.metadata.managed_fields.is_none());
    assert_eq!(one.metadata.labels.as_ref().unwrap()["app"], "one");
    let one = full_cms.lister().get(Some("a"), "one").expect("cached");
    assert_eq!(one.metadata.managed_fields.as_ref().map(Vec::len), Some(1));
    cancel.cancel();
    lean.shutdown().await;
    full.shutdown().await;
}
