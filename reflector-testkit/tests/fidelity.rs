//! kube-runtime (a client nobody here wrote) syncs a reflector store against the server:
//! the store must end up equal to the server's state (names and resourceVersions).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use serde_json::json;
use tokio::task::JoinHandle;

const NS: &str = "default";
const GUARD: Duration = Duration::from_secs(10);

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

/// Runs a reflector over `config`; the returned task is aborted by the caller.
fn run_reflector(
    server: &ApiServer,
    config: watcher::Config,
) -> (Store<ConfigMap>, JoinHandle<()>) {
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, config)).default_backoff();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    (reader, task)
}

fn store_versions(store: &Store<ConfigMap>) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = store
        .state()
        .iter()
        .map(|o| {
            (
                format!(
                    "{}/{}",
                    o.metadata.namespace.as_deref().unwrap_or_default(),
                    o.metadata.name.as_deref().unwrap_or_default()
                ),
                o.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Polls until the store equals the server's state (the timeout is only a hang guard).
async fn converge(server: &ApiServer, store: &Store<ConfigMap>) {
    let result = tokio::time::timeout(GUARD, async {
        loop {
            if store_versions(store) == server.versions::<ConfigMap>(Some(NS)).unwrap() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        result.is_ok(),
        "store never converged:\n store  {:?}\n server {:?}",
        store_versions(store),
        server.versions::<ConfigMap>(Some(NS)).unwrap()
    );
}

/// Polls until the reflector's watch is open (the store can be synced from the list
/// before the watch request arrives).
async fn wait_for_watch(server: &ApiServer) {
    tokio::time::timeout(GUARD, async {
        while server.open_watches() == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the watcher never opened a watch");
}

/// Polls until at least `n` watch requests have been answered (headers sent).
async fn wait_for_watches(server: &ApiServer, n: usize) {
    tokio::time::timeout(GUARD, async {
        while server
            .request_log()
            .iter()
            .filter(|e| e.verb == Verb::Watch)
            .count()
            < n
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    })
    .await
    .expect("the watcher never re-watched");
}

/// Creates, updates and deletes through the API.
async fn write_churn(server: &ApiServer, tag: &str) {
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    for i in 0..10 {
        api.create(&PostParams::default(), &cm(&format!("{tag}-{i}")))
            .await
            .unwrap();
    }
    for i in 0..10 {
        api.patch(
            &format!("{tag}-{i}"),
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"i": i.to_string()}})),
        )
        .await
        .unwrap();
    }
    for i in (0..10).step_by(3) {
        api.delete(&format!("{tag}-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn plain_list_watch_converges() {
    let server = ApiServer::start().await.unwrap();
    seed(&server, 20);
    let (store, task) = run_reflector(&server, watcher::Config::default());
    converge(&server, &store).await;
    write_churn(&server, "w").await;
    converge(&server, &store).await;
    task.abort();
}

#[tokio::test]
async fn paginated_initial_list_converges() {
    for page_size in [1u32, 7] {
        let server = ApiServer::start().await.unwrap();
        seed(&server, 50);
        let (store, task) = run_reflector(&server, watcher::Config::default().page_size(page_size));
        converge(&server, &store).await;
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
    let (store, task) = run_reflector(&server, config);
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
    let server = ApiServer::start().await.unwrap();
    seed(&server, 10);
    let (store, task) = run_reflector(&server, watcher::Config::default());
    converge(&server, &store).await;
    let lists_before = server
        .request_log()
        .iter()
        .filter(|e| e.verb == Verb::List)
        .count();

    wait_for_watch(&server).await;
    // Hold the re-watch back long enough for writes and a compaction to land first, so
    // the watcher resumes from a compacted RV and gets a 410.
    let delay = server.inject(
        Matcher::verb(Verb::Watch),
        Fault::LatencyBeforeHeaders(Duration::from_millis(300)),
    );
    assert_eq!(server.faults().drop_watches(), 1);
    let objects: Vec<ConfigMap> = (0..5).map(|i| cm(&format!("after-{i}"))).collect();
    server.insert_many(&objects).unwrap();
    server.remove::<ConfigMap>(Some(NS), "cm-000").unwrap();
    server.compact();

    converge(&server, &store).await;
    assert_eq!(server.fault_hits(delay), 1);
    let lists_after = server
        .request_log()
        .iter()
        .filter(|e| e.verb == Verb::List)
        .count();
    assert!(
        lists_after > lists_before,
        "the watcher relisted after the 410"
    );
    task.abort();
}

#[tokio::test]
async fn dropped_watches_converge() {
    let server = ApiServer::start().await.unwrap();
    seed(&server, 10);
    let (store, task) = run_reflector(&server, watcher::Config::default());
    converge(&server, &store).await;
    for round in 0..5 {
        wait_for_watches(&server, round + 1).await;
        assert!(server.faults().drop_watches() >= 1);
        write_churn(&server, &format!("d{round}")).await;
    }
    converge(&server, &store).await;
    let watches = server
        .request_log()
        .iter()
        .filter(|e| e.verb == Verb::Watch)
        .count();
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
    let api: Api<kube::core::PartialObjectMeta<ConfigMap>> = Api::namespaced(server.client(), NS);
    let (store, writer) = reflector::store::<kube::core::PartialObjectMeta<ConfigMap>>();
    let stream = reflector::reflector(
        writer,
        watcher(api, watcher::Config::default().page_size(4)),
    )
    .default_backoff();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    let versions = |store: &Store<kube::core::PartialObjectMeta<ConfigMap>>| {
        let mut v: Vec<(String, String)> = store
            .state()
            .iter()
            .map(|o| {
                (
                    format!("{NS}/{}", o.metadata.name.as_deref().unwrap_or_default()),
                    o.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect();
        v.sort();
        v
    };
    write_churn(&server, "m").await;
    tokio::time::timeout(GUARD, async {
        while versions(&store) != server.versions::<ConfigMap>(Some(NS)).unwrap() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("metadata store never converged");
    task.abort();
}
