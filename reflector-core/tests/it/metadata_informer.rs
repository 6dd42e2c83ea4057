//! Metadata-only informers (`InformerFactory::informer::<PartialObjectMeta<K>>()`) on
//! the embedded API server: the server is asked for `PartialObjectMetadata`, and
//! the cache follows lists, watch events and relists like a full informer.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use reflector_core::informer::{InformerFactory, SharedIndexInformer};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use serde_json::json;

use crate::support::namespaces::create_namespaces;
use crate::support::patience::{PATIENCE, POLL};

const NS: &str = "meta";

async fn server_with(n: usize) -> ApiServer {
    let server = ApiServer::start().await.expect("server");
    create_namespaces(&server.client(), &[NS]).await;
    for i in 0..n {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("cm-{i}"), "namespace": NS, "labels": {"i": i.to_string()}},
            "data": {"payload": "x".repeat(256)}
        }))
        .unwrap();
        server.insert(&cm).unwrap();
    }
    server
}

/// name → resourceVersion of the cached objects.
fn cached(
    informer: &SharedIndexInformer<PartialObjectMeta<ConfigMap>>,
) -> BTreeMap<String, String> {
    informer
        .lister()
        .list()
        .iter()
        .map(|o| {
            (
                format!("{NS}/{}", o.metadata.name.as_deref().unwrap_or_default()),
                o.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

fn on_server(server: &ApiServer) -> BTreeMap<String, String> {
    server
        .versions::<ConfigMap>(Some(NS))
        .unwrap()
        .into_iter()
        .collect()
}

/// A started factory's metadata-only ConfigMap informer, once synced.
async fn synced_metadata_informer(
    server: &ApiServer,
) -> (
    InformerFactory,
    SharedIndexInformer<PartialObjectMeta<ConfigMap>>,
) {
    let factory = InformerFactory::new(server.client());
    let informer = factory.informer::<PartialObjectMeta<ConfigMap>>();
    factory.start();
    tokio::time::timeout(PATIENCE, factory.wait_synced())
        .await
        .expect("synced in time")
        .expect("synced");
    (factory, informer)
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(PATIENCE, async {
        while !done() {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

/// The first list asks for `PartialObjectMetadataList` (every cached object says it
/// is a `meta.k8s.io/v1` `PartialObjectMetadata`, which a full `ConfigMapList`'s
/// items are not), and watch events — decoded only when they are
/// `PartialObjectMetadata` — keep the cache in step with creates, label changes and
/// deletes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_informer_lists_and_watches_partial_object_metadata() {
    let server = server_with(20).await;
    let (_factory, informer) = synced_metadata_informer(&server).await;

    assert_eq!(cached(&informer), on_server(&server));
    for object in informer.lister().list() {
        let types = object.types.as_ref().expect("listed with its type");
        assert_eq!(
            (types.api_version.as_str(), types.kind.as_str()),
            ("meta.k8s.io/v1", "PartialObjectMetadata")
        );
        assert!(
            object
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("i")),
            "labels are kept"
        );
    }

    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    let created = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "new", "namespace": NS}, "data": {"k": "v"}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    api.patch(
        "cm-3",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"changed": "yes"}}})),
    )
    .await
    .unwrap();
    api.delete("cm-4", &DeleteParams::default()).await.unwrap();
    let last = server.current_resource_version().to_string();
    tokio::time::timeout(PATIENCE, informer.wait_for_resource_version(&last))
        .await
        .expect("caught up in time")
        .expect("caught up");

    assert_eq!(cached(&informer), on_server(&server));
    let lister = informer.lister();
    let new = lister.get(Some(NS), "new").expect("the created object");
    assert_eq!(new.metadata.uid, created.metadata.uid);
    let changed = lister.get(Some(NS), "cm-3").expect("the patched object");
    assert_eq!(
        changed
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("changed"))
            .map(String::as_str),
        Some("yes")
    );
    assert!(
        lister.get(Some(NS), "cm-4").is_none(),
        "the deleted object is gone"
    );
    let stats = informer.reflector_stats();
    assert_eq!(
        stats.unexpected_kind_events, 0,
        "every event was PartialObjectMetadata"
    );
    assert_eq!(stats.errors_decode, 0);
    assert!(stats.events >= 3, "{stats:?}");
}

/// A watch that ends with 410 Gone makes the metadata informer relist (again as
/// `PartialObjectMetadata`); what changed meanwhile — a delete included — is in the
/// cache afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_informer_relists_after_an_expired_watch() {
    let server = server_with(10).await;
    let (_factory, informer) = synced_metadata_informer(&server).await;
    wait_until("the watch", || server.open_watches() == 1).await;

    // Writes the informer will only learn of by relisting: its next watch is
    // answered with an expired resourceVersion, and the list at that version 410s.
    server.inject(Matcher::verb(Verb::Watch), Fault::WatchGone);
    server.inject(Matcher::verb(Verb::List), Fault::Gone);
    server.remove::<ConfigMap>(Some(NS), "cm-0").unwrap();
    server
        .insert(
            &serde_json::from_value::<ConfigMap>(
                json!({"metadata": {"name": "late", "namespace": NS}}),
            )
            .unwrap(),
        )
        .unwrap();
    server.faults().drop_watches();

    wait_until("the relist", || informer.reflector_stats().relists >= 1).await;
    wait_until("the cache to match the server", || {
        cached(&informer) == on_server(&server)
    })
    .await;
    let lister = informer.lister();
    assert!(
        lister.get(Some(NS), "cm-0").is_none(),
        "deleted while not watching"
    );
    let late = lister
        .get(Some(NS), "late")
        .expect("created while not watching");
    assert_eq!(
        late.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata"),
        "the relist asked for metadata too"
    );
}

/// `informer::<PartialObjectMeta<K>>()` and `informer::<K>()` are different informers (one caches
/// `PartialObjectMeta<K>`, the other `K`); asking twice for either gives the same one.
#[tokio::test]
async fn metadata_and_full_informers_of_one_kind_are_distinct_and_shared() {
    let server = ApiServer::start().await.unwrap();
    let factory = InformerFactory::new(server.client());
    let a = factory.informer::<PartialObjectMeta<ConfigMap>>();
    let b = factory.informer::<PartialObjectMeta<ConfigMap>>();
    let full = factory.informer::<ConfigMap>();
    let again = factory.informer::<ConfigMap>();
    // A handler added through one handle is registered on the other: same informer.
    let on_a = a.add_event_fn(|_| {}).unwrap();
    assert!(b.is_registered(&on_a), "one shared metadata informer");
    let on_full = full.add_event_fn(|_| {}).unwrap();
    assert!(again.is_registered(&on_full), "one shared full informer");
    assert!(!full.is_registered(&on_a) && !a.is_registered(&on_full));
}
