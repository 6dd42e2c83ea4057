//! The requests a reflector sends, checked on the wire against the embedded API
//! server's request log: client-go's list-then-watch parameters, watch-list
//! streaming, relisting from "" after a 410, and a clean stop.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use reflector::ReflectorOptions;
use reflector::informer::{InformerOptions, SharedIndexInformer};
use reflector::listwatch::ApiListerWatcher;
use reflector_testkit::{ApiServer, Fault, Matcher, RequestLogEntry, Verb, bench_objects};

use crate::support::namespaces::create_namespaces;
use crate::support::patience::{PATIENCE, POLL};
use crate::support::running::Running;

/// client-go's very-short-watch rule (the reflector's too): a watch that ends within 1 s
/// of its start with no event is a failure, answered with a relist.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

async fn server_with(n: usize) -> ApiServer {
    let server = ApiServer::builder()
        .paginate_rv0(true)
        .start()
        .await
        .expect("server starts");
    create_namespaces(&server.client(), &[bench_objects::NAMESPACE]).await;
    let objs = bench_objects::config_maps(n);
    server.insert_many(objs.iter()).expect("insert");
    server
}

fn informer(server: &ApiServer, opts: ReflectorOptions) -> SharedIndexInformer<ConfigMap> {
    let lw = ApiListerWatcher::new(Api::<ConfigMap>::all(server.client_without_retries()));
    SharedIndexInformer::with_options(lw, InformerOptions::default().reflector_options(opts))
}

async fn synced(i: &SharedIndexInformer<ConfigMap>) -> Running {
    Running::until_synced(i, PATIENCE)
        .await
        .expect("synced in time")
}

/// An informer over `server`'s ConfigMaps, run until synced.
async fn running_informer(
    server: &ApiServer,
    options: ReflectorOptions,
) -> (SharedIndexInformer<ConfigMap>, Running) {
    let i = informer(server, options);
    let running = synced(&i).await;
    (i, running)
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    tokio::time::timeout(PATIENCE, async {
        while !cond() {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

fn of(log: &[RequestLogEntry], verb: Verb) -> Vec<RequestLogEntry> {
    log.iter().filter(|e| e.verb == verb).cloned().collect()
}

/// client-go's sequence: the first list at resourceVersion=0 with limit=500, pages
/// followed by continue tokens without a resourceVersion, then one watch from the
/// list's resource version with bookmarks and a timeout in [300, 600] s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_then_watch_parameters_on_the_wire() {
    let server = server_with(1_200).await;
    let list_rv = server.current_resource_version().to_string();
    let (i, running) = running_informer(&server, ReflectorOptions::default()).await;
    wait_for("the watch", || {
        !of(&server.request_log(), Verb::Watch).is_empty()
    })
    .await;
    let log = server.request_log();

    let lists = of(&log, Verb::List);
    assert_eq!(lists.len(), 3, "1,200 objects in pages of 500: {lists:#?}");
    assert_eq!(lists[0].param("resourceVersion"), Some("0"));
    assert_eq!(lists[0].param("limit"), Some("500"));
    for page in &lists[1..] {
        assert!(page.param("continue").is_some());
        assert_eq!(page.param("resourceVersion").unwrap_or(""), "");
        assert_eq!(page.param("limit"), Some("500"));
    }
    // Pages are read ahead while the previous one decodes; each is still requested
    // exactly once.
    let tokens: Vec<&str> = lists[1..]
        .iter()
        .filter_map(|p| p.param("continue"))
        .collect();
    assert_ne!(
        tokens[0], tokens[1],
        "each continue token requested once: {tokens:?}"
    );
    let watches = of(&log, Verb::Watch);
    assert_eq!(watches[0].param("resourceVersion"), Some(list_rv.as_str()));
    assert_eq!(watches[0].param("allowWatchBookmarks"), Some("true"));
    let timeout: u64 = watches[0]
        .param("timeoutSeconds")
        .expect("timeout set")
        .parse()
        .expect("a number");
    assert!((300..=600).contains(&timeout), "timeout {timeout}");
    assert_eq!(i.indexer().len(), 1_200);

    running.stop().await.expect("run ends");
    wait_for("the watch to close", || server.open_watches() == 0).await;
}

/// Watch-list mode streams the initial state (sendInitialEvents=true,
/// resourceVersionMatch=NotOlderThan), syncs at the initial-events-end bookmark
/// with no list at all, and keeps using the same watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_list_streams_without_a_list() {
    let server = server_with(300).await;
    let (i, running) =
        running_informer(&server, ReflectorOptions::default().use_watch_list(true)).await;
    assert_eq!(i.indexer().len(), 300);
    let log = server.request_log();
    assert!(
        of(&log, Verb::List).is_empty(),
        "no list in watch-list mode"
    );
    let watches = of(&log, Verb::Watch);
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].param("sendInitialEvents"), Some("true"));
    assert_eq!(
        watches[0].param("resourceVersionMatch"),
        Some("NotOlderThan")
    );
    assert_eq!(watches[0].param("allowWatchBookmarks"), Some("true"));

    // The same watch goes on delivering after the sync.
    let api = Api::<ConfigMap>::namespaced(server.client(), bench_objects::NAMESPACE);
    let mut extra = ConfigMap::default();
    extra.metadata.name = Some("after-sync".into());
    api.create(&Default::default(), &extra)
        .await
        .expect("create");
    wait_for("the new object", || i.indexer().len() == 301).await;
    assert_eq!(of(&server.request_log(), Verb::Watch).len(), 1);

    running.stop().await.expect("run ends");
}

/// A server that refuses watch-list makes the reflector fall back to list+watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_list_refused_falls_back_to_list() {
    let server = server_with(10).await;
    server.inject(Matcher::verb(Verb::Watch), Fault::Gone);
    let i = informer(&server, ReflectorOptions::default().use_watch_list(true));
    // 410 on the watch-list marks the RV unavailable and retries; refuse with 500
    // instead to force the fallback.
    let running = synced(&i).await;
    assert_eq!(i.indexer().len(), 10);
    running.stop().await.expect("run ends");

    let server = server_with(10).await;
    server.inject(Matcher::verb(Verb::Watch), Fault::InternalError);
    let (i, running) =
        running_informer(&server, ReflectorOptions::default().use_watch_list(true)).await;
    let log = server.request_log();
    assert_eq!(of(&log, Verb::List).len(), 1, "fell back to a list");
    assert_eq!(of(&log, Verb::List)[0].param("resourceVersion"), Some("0"));
    assert_eq!(i.indexer().len(), 10);
    running.stop().await.expect("run ends");
}

/// After the watch is answered 410, the next list asks for the last RV seen; when
/// that list is answered 410 too, the relist asks for "" (a consistent read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_resource_version_relists_from_empty() {
    let server = server_with(20).await;
    let (i, running) = running_informer(&server, ReflectorOptions::default()).await;
    wait_for("the watch", || server.open_watches() > 0).await;
    // Let the watch outlive client-go's "very short watch" rule, or dropping it would
    // count as a failure and relist before re-watching: the rule's threshold from when
    // the watch was seen open (the reflector started timing it earlier), plus one poll
    // period for the wait that saw it.
    tokio::time::sleep(VERY_SHORT_WATCH + POLL).await;
    let rv = i.reflector_resource_version().unwrap_or_default();
    server.clear_request_log();

    let watch = server.inject(Matcher::verb(Verb::Watch), Fault::WatchGone);
    let list = server.inject(Matcher::verb(Verb::List), Fault::Gone);
    server.faults().drop_watches();
    wait_for("the relist", || {
        of(&server.request_log(), Verb::List)
            .iter()
            .any(|e| e.status == 200)
    })
    .await;
    assert_eq!((server.fault_hits(watch), server.fault_hits(list)), (1, 1));
    let lists = of(&server.request_log(), Verb::List);
    assert_eq!(lists[0].param("resourceVersion"), Some(rv.as_str()));
    assert_eq!(lists[0].status, 410);
    assert_eq!(lists[1].param("resourceVersion").unwrap_or(""), "");
    assert_eq!(lists[1].status, 200);
    running.stop().await.expect("run ends");
}

/// Cancelling the informer closes its watch on the server and leaves no task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_closes_the_watch() {
    let server = server_with(5).await;
    let (i, running) = running_informer(&server, ReflectorOptions::default()).await;
    wait_for("the watch", || server.open_watches() == 1).await;
    tokio::time::timeout(PATIENCE, running.stop())
        .await
        .expect("run returns promptly")
        .expect("no panic");
    wait_for("the server to see the watch closed", || {
        server.open_watches() == 0
    })
    .await;
    assert!(i.is_stopped());
}

/// client-go's FullListIfExpired on the wire: a continue page answered 410 (here
/// the page read ahead) makes the pager list everything at once, without a limit,
/// at the first page's resource version; the cache ends complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_continue_page_lists_everything_at_once() {
    let server = server_with(1_200).await;
    server.inject(Matcher::verb(Verb::List), Fault::ContinueExpired);
    let (i, running) = running_informer(&server, ReflectorOptions::default()).await;
    assert_eq!(i.indexer().len(), 1_200);
    let lists = of(&server.request_log(), Verb::List);
    assert_eq!(lists.len(), 3, "{lists:#?}");
    assert_eq!(lists[0].param("limit"), Some("500"));
    assert!(lists[1].param("continue").is_some());
    assert_eq!(lists[2].param("continue"), None);
    assert_eq!(lists[2].param("limit"), None);
    assert_eq!(lists[2].param("resourceVersion"), Some("0"));
    running.stop().await.expect("run ends");
}
