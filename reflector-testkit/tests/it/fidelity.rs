//! kube-runtime (a client nobody here wrote) syncs a reflector store against the server:
//! the store must end up equal to the server's state (names and resourceVersions).

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use reflector_testkit::{ApiServer, Verb};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::support::{PATIENCE, POLL, create, merge};

const NS: &str = "default";

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some(NS.to_owned());
    cm
}

fn seed(server: &ApiServer, n: usize) {
    let objects: Vec<ConfigMap> = (0..n).map(|i| cm(&format!("cm-{i:03}"))).collect();
    server.insert_many(&objects).unwrap();
}

/// Runs a reflector of `K`s in `NS` over `config`; the returned task is aborted by
/// the caller.
fn run_reflector<K>(server: &ApiServer, config: watcher::Config) -> (Store<K>, JoinHandle<()>)
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let api: Api<K> = Api::namespaced(server.client(), NS);
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, config)).default_backoff();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    (reader, task)
}

/// Each object's `namespace/name` and resourceVersion, sorted.
fn store_versions<K>(store: &Store<K>) -> Vec<(String, String)>
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let mut v: Vec<(String, String)> = store
        .state()
        .iter()
        .map(|o| {
            let meta = o.meta();
            let namespace = meta.namespace.as_deref().unwrap_or_default();
            let name = meta.name.as_deref().unwrap_or_default();
            let rv = meta.resource_version.clone().unwrap_or_default();
            (format!("{namespace}/{name}"), rv)
        })
        .collect();
    v.sort();
    v
}

/// Polls until the store equals the server's ConfigMaps (the timeout is only a hang
/// guard).
async fn converge<K>(server: &ApiServer, store: &Store<K>)
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let on_server = || server.versions::<ConfigMap>(Some(NS)).unwrap();
    let result = tokio::time::timeout(PATIENCE, async {
        while store_versions(store) != on_server() {
            tokio::time::sleep(POLL).await;
        }
    })
    .await;
    assert!(
        result.is_ok(),
        "store never converged:\n store  {:?}\n server {:?}",
        store_versions(store),
        on_server()
    );
}

/// A server seeded with `n` ConfigMaps and a reflector over `config` that has
/// converged to it; the returned task is aborted by the caller.
async fn synced(
    n: usize,
    config: watcher::Config,
) -> (ApiServer, Store<ConfigMap>, JoinHandle<()>) {
    let server = ApiServer::start().await.unwrap();
    seed(&server, n);
    let (store, task) = run_reflector::<ConfigMap>(&server, config);
    converge(&server, &store).await;
    (server, store, task)
}

/// How many `verb` requests the server answered.
fn requests(server: &ApiServer, verb: Verb) -> usize {
    server
        .request_log()
        .iter()
        .filter(|e| e.verb == verb)
        .count()
}

/// Polls every [`POLL`] until `done` holds; the timeout is only a hang guard.
async fn poll(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(POLL).await;
    }
}

/// Polls until the reflector's watch is open (the store can be synced from the list
/// before the watch request arrives).
async fn wait_for_watch(server: &ApiServer) {
    poll("the watcher never opened a watch", || {
        server.open_watches() > 0
    })
    .await;
}

/// Polls until at least `n` watch requests have been answered (headers sent).
async fn wait_for_watches(server: &ApiServer, n: usize) {
    poll("the watcher never re-watched", || {
        requests(server, Verb::Watch) >= n
    })
    .await;
}

/// Creates, updates and deletes through the API.
async fn write_churn(server: &ApiServer, tag: &str) {
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    for i in 0..10 {
        create(&api, &cm(&format!("{tag}-{i}"))).await;
    }
    for i in 0..10 {
        let data = json!({"data": {"i": i.to_string()}});
        merge(&api, &format!("{tag}-{i}"), data).await.unwrap();
    }
    for i in (0..10).step_by(3) {
        api.delete(&format!("{tag}-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn plain_list_watch_converges() {
    let (server, store, task) = synced(20, watcher::Config::default()).await;
    write_churn(&server, "w").await;
    converge(&server, &store).await;
    task.abort();
}

#[tokio::test]
async fn paginated_initial_list_converges() {
    for page_size in [1u32, 7] {
        let (server, store, task) =
            synced(50, watcher::Config::default().page_size(page_size)).await;
        let lists = server
            .request_log()
            .into_iter()
            .filter(|e| e.verb == Verb::List)
            .collect::<Vec<_>>();
        let pages = 50usize.div_ceil(page_size as usize);
        assert_eq!(
            lists.len(),
            pages,
            "page size {page_size}: one request per page"
        );
        assert!(
            lists[1..].iter().all(|e| e.param("continue").is_some()),
            "later pages continue the first"
        );
        assert!(
            lists
                .iter()
                .all(|e| e.param("limit") == Some(&page_size.to_string()[..]))
        );
        write_churn(&server, "p").await;
        converge(&server, &store).await;
        task.abort();
    }
}

#[tokio::test]
async fn streaming_list_converges() {
    let server = ApiServer::start().await.unwrap();
    seed(&server, 30);
    let config = watcher::Config::default().streaming_lists();
    let (store, task) = run_reflector::<ConfigMap>(&server, config);
    converge(&server, &store).await;
    let log = server.request_log();
    assert!(
        log.iter().all(|e| e.verb != Verb::List),
        "no LIST with streaming lists"
    );
    assert!(
        log.iter()
            .any(|e| e.verb == Verb::Watch && e.param("sendInitialEvents") == Some("true"))
    );
    write_churn(&server, "s").await;
    converge(&server, &store).await;
    task.abort();
}

#[tokio::test]
async fn compaction_during_watch_forces_relist() {
    let (server, store, task) = synced(10, watcher::Config::default()).await;
    let lists_before = requests(&server, Verb::List);

    wait_for_watch(&server).await;
    // The writes and the compaction land before the watcher can re-watch: this test's
    // runtime has one thread, shared by the server and the watcher, and nothing below
    // yields to them until `converge`. So the watcher resumes from a compacted RV and
    // gets a 410.
    let watches_before = requests(&server, Verb::Watch);
    assert_eq!(server.faults().drop_watches(), 1);
    let objects: Vec<ConfigMap> = (0..5).map(|i| cm(&format!("after-{i}"))).collect();
    server.insert_many(&objects).unwrap();
    server.remove::<ConfigMap>(Some(NS), "cm-000").unwrap();
    server.compact();
    assert_eq!(
        requests(&server, Verb::Watch),
        watches_before,
        "no re-watch before the compaction"
    );

    converge(&server, &store).await;
    let lists_after = requests(&server, Verb::List);
    assert!(
        lists_after > lists_before,
        "the watcher relisted after the 410"
    );
    task.abort();
}

#[tokio::test]
async fn dropped_watches_converge() {
    let (server, store, task) = synced(10, watcher::Config::default()).await;
    for round in 0..5 {
        wait_for_watches(&server, round + 1).await;
        assert!(server.faults().drop_watches() >= 1);
        write_churn(&server, &format!("d{round}")).await;
    }
    converge(&server, &store).await;
    let watches = requests(&server, Verb::Watch);
    assert!(
        watches >= 6,
        "the watcher re-watched after every drop ({watches} watches)"
    );
    task.abort();
}

#[tokio::test]
async fn metadata_watcher_converges() {
    let server = ApiServer::start().await.unwrap();
    seed(&server, 15);
    // `Api<PartialObjectMeta<K>>` makes kube send metadata-only (PartialObjectMetadata) requests.
    let config = watcher::Config::default().page_size(4);
    let (store, task) = run_reflector::<PartialObjectMeta<ConfigMap>>(&server, config);
    write_churn(&server, "m").await;
    converge(&server, &store).await;
    task.abort();
}
