//! `Controller::for_kind_with` over real HTTP on the embedded API server: the
//! informer options shape the controller's primary informer (its scope decides what
//! is cached and reconciled; its indexers, transform and page size are the cache's
//! and the list's), and a sharded controller keeps them, adding the shard's label
//! selector to the options' own.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use reflector_core::ReflectorOptions;
use reflector_core::controller::{Action, Controller, ControllerError, Request};
use reflector_core::informer::{InformerOptions, InformerScope};
use reflector_core::leader_election::LeaderElectionConfig;
use reflector_core::lister::Lister;
use reflector_core::object::ObjectKey;
use reflector_core::sharding::Ring;
use reflector_core::store::Indexers;
use reflector_testkit::{ApiServer, RequestLogEntry, Verb};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::paused::until;
use crate::support::namespaces::create_namespaces;
use crate::support::patience::PATIENCE;

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

/// The namespace the controllers watch.
const NS: &str = "opts";
/// The annotation the options' transform adds.
const TRANSFORMED: &str = "test.reflector.rs/transformed";
/// The options' index: a ConfigMap's `app` label.
const BY_APP: &str = "by-app";
/// The options' page size (the reflector's default is 500).
const PAGE_SIZE: u32 = 7;

/// ConfigMap `namespace/name` carrying `labels`.
fn cm(namespace: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some(namespace.to_owned());
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    );
    cm
}

/// Options selecting the `app=web` ConfigMaps of `NS`, with an index by `app`, a
/// transform marking every cached object, and a page size of `PAGE_SIZE`.
fn web_options() -> InformerOptions<ConfigMap> {
    InformerOptions::default()
        .scope(InformerScope::default().namespace(NS).labels("app=web"))
        .reflector_options(ReflectorOptions::default().page_size(PAGE_SIZE))
        .indexers(Indexers::new().with(BY_APP, |cm: &ConfigMap| {
            cm.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .into_iter()
                .cloned()
                .collect()
        }))
        .transform(|cm: Arc<ConfigMap>| {
            let mut cm = (*cm).clone();
            cm.metadata
                .annotations
                .get_or_insert_default()
                .insert(TRANSFORMED.to_owned(), "yes".to_owned());
            Arc::new(cm)
        })
}

/// What a reconcile saw: the key, and whether its cached object was transformed.
type Seen = (ObjectKey, bool);

fn transformed(cm: &ConfigMap) -> bool {
    cm.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(TRANSFORMED))
}

async fn report(
    req: Request<ConfigMap>,
    seen: Arc<mpsc::UnboundedSender<Seen>>,
) -> Result<Action, Never> {
    let was_transformed = req.object.as_deref().is_some_and(transformed);
    let _ = seen.send((req.key.key().clone(), was_transformed));
    Ok(Action::done())
}

/// A controller running on its own task, reporting what its reconciles saw.
struct Running {
    /// The controller's primary cache.
    lister: Lister<ConfigMap>,
    seen: mpsc::UnboundedReceiver<Seen>,
    stop: CancellationToken,
    run: JoinHandle<Result<(), ControllerError>>,
}

impl Running {
    fn start(controller: Controller<ConfigMap>) -> Self {
        let lister = controller.lister();
        let (tx, seen) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let run = tokio::spawn(
            controller
                .graceful_shutdown_on(stop.clone().cancelled_owned())
                .run(report, Arc::new(tx)),
        );
        Running {
            lister,
            seen,
            stop,
            run,
        }
    }

    /// The next reconcile's key and whether its object was transformed.
    async fn next(&mut self) -> Seen {
        tokio::time::timeout(PATIENCE, self.seen.recv())
            .await
            .expect("a reconcile in time")
            .expect("controller running")
    }

    /// Stops the controller gracefully (it must end without error), then `server`.
    async fn stop(self, server: ApiServer) {
        self.stop.cancel();
        self.run.await.unwrap().unwrap();
        server.shutdown().await;
    }
}

fn key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Some(namespace), name)
}

/// The names of the ConfigMaps `lister` caches.
fn cached(lister: &Lister<ConfigMap>) -> BTreeSet<String> {
    lister
        .list()
        .iter()
        .map(|cm| cm.metadata.name.clone().unwrap())
        .collect()
}

/// The names `lister`'s `BY_APP` index holds for `app`.
fn indexed(lister: &Lister<ConfigMap>, app: &str) -> BTreeSet<String> {
    lister
        .by_index(BY_APP, app)
        .expect("the options' index is on the primary informer")
        .iter()
        .map(|cm| cm.metadata.name.clone().unwrap())
        .collect()
}

/// Asserts that the server answered ConfigMap lists of namespace `NS`, each asking
/// for `param=value`.
fn assert_lists_ask(server: &ApiServer, param: &str, value: &str) {
    let path = format!("/api/v1/namespaces/{NS}/configmaps");
    let lists: Vec<RequestLogEntry> = server
        .request_log()
        .into_iter()
        .filter(|e| e.verb == Verb::List && e.path == path)
        .collect();
    assert!(!lists.is_empty(), "the primary informer listed {NS}");
    for list in &lists {
        assert_eq!(list.param(param), Some(value), "{list:?}");
    }
}

/// Creates `cm` through the API, as a user would.
async fn create(server: &ApiServer, cm: &ConfigMap) {
    let ns = cm.metadata.namespace.as_deref().unwrap();
    Api::<ConfigMap>::namespaced(server.client(), ns)
        .create(&PostParams::default(), cm)
        .await
        .expect("create");
}

/// With a namespace and a label selector in the options, the controller caches and
/// reconciles only the objects of that namespace matching it: `web` is reconciled,
/// `db` (another label) and `web` of another namespace never are. `late`, created
/// after the first reconcile, is reconciled after every key the initial list queued
/// (the queue is first in, first out, one worker), so the reconciles up to it are
/// all those of the initial list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_objects_the_options_select_are_reconciled() {
    let server = ApiServer::start().await.expect("server");
    create_namespaces(&server.client(), &[NS, "elsewhere"]).await;
    for cm in [
        cm(NS, "web", &[("app", "web")]),
        cm(NS, "db", &[("app", "db")]),
        cm("elsewhere", "web", &[("app", "web")]),
    ] {
        server.insert(&cm).expect("insert");
    }
    let controller = Controller::<ConfigMap>::for_kind_with(
        server.client(),
        InformerOptions::default().scope(InformerScope::default().namespace(NS).labels("app=web")),
    );
    let mut running = Running::start(controller);

    let mut reconciled = vec![running.next().await.0];
    create(&server, &cm(NS, "late", &[("app", "web")])).await;
    loop {
        let (key, _) = running.next().await;
        let done = key.name() == "late";
        reconciled.push(key);
        if done {
            break;
        }
    }
    assert_eq!(reconciled, [key(NS, "web"), key(NS, "late")]);
    assert_eq!(
        cached(&running.lister),
        BTreeSet::from(["late".into(), "web".into()])
    );
    assert_lists_ask(&server, "labelSelector", "app=web");
    running.stop(server).await;
}

/// The options' settings other than the scope reach the primary informer: its
/// cache has the options' index (queried through `Controller::lister`), a reconcile
/// reads the object as the options' transform made it, and the informer lists in
/// pages of the options' size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_options_index_transform_and_page_size_are_the_primary_informers() {
    let server = ApiServer::start().await.expect("server");
    create_namespaces(&server.client(), &[NS]).await;
    for name in ["web-1", "web-2"] {
        server
            .insert(&cm(NS, name, &[("app", "web")]))
            .expect("insert");
    }
    let controller = Controller::<ConfigMap>::for_kind_with(server.client(), web_options());
    let mut running = Running::start(controller);

    let mut seen = BTreeMap::new();
    while seen.len() < 2 {
        let (key, was_transformed) = running.next().await;
        seen.insert(key.name().to_owned(), was_transformed);
    }
    assert_eq!(
        seen,
        BTreeMap::from([("web-1".into(), true), ("web-2".into(), true)]),
        "every reconcile read a transformed object"
    );
    assert_eq!(
        indexed(&running.lister, "web"),
        BTreeSet::from(["web-1".into(), "web-2".into()])
    );
    assert_lists_ask(&server, "limit", &PAGE_SIZE.to_string());
    running.stop(server).await;
}

/// The ring's namespace for its leases.
const LEASE_NS: &str = "ops";
/// The assignment label of the ring `cms`.
const SHARD_LABEL: &str = "shard.reflector.rs/cms";

/// A controller made by `for_kind_with` and sharded over a ring (one shard, `a`;
/// the objects carry their assignment already) selects by both the options' label
/// selector and the shard's: `web-a` is reconciled, `db-a` (the shard's, not the
/// options') and `web-b` (the options', another shard's) never are; `late` (both)
/// created after the first reconcile comes after every key of the initial list. The
/// rescoped informer keeps the options' index and page size, and asks the server
/// for the two selectors comma-joined.
#[tokio::test(start_paused = true)]
async fn a_sharded_controller_keeps_the_options_selector_and_adds_the_shards() {
    let server = ApiServer::start().await.expect("server");
    create_namespaces(&server.client(), &[NS, LEASE_NS]).await;
    for cm in [
        cm(NS, "web-a", &[("app", "web"), (SHARD_LABEL, "a")]),
        cm(NS, "db-a", &[("app", "db"), (SHARD_LABEL, "a")]),
        cm(NS, "web-b", &[("app", "web"), (SHARD_LABEL, "b")]),
    ] {
        server.insert(&cm).expect("insert");
    }
    let ring = Ring::new(
        Api::<Lease>::namespaced(server.client(), LEASE_NS),
        "cms",
        "a",
        LeaderElectionConfig::default(),
    )
    .unwrap();
    let stop = CancellationToken::new();
    let controller = Controller::<ConfigMap>::for_kind_with(server.client(), web_options())
        .sharded(&ring)
        .graceful_shutdown_on(stop.clone().cancelled_owned());
    let lister = controller.lister();
    let reconciled: Arc<Mutex<Vec<ObjectKey>>> = Arc::default();
    let log = Arc::clone(&reconciled);
    let run = tokio::spawn(controller.run(
        move |req: Request<ConfigMap>, _: Arc<()>| {
            log.lock().unwrap().push(req.key.key().clone());
            async { Ok::<_, Never>(Action::done()) }
        },
        Arc::new(()),
    ));
    let has = |name: &'static str| {
        let reconciled = Arc::clone(&reconciled);
        move || reconciled.lock().unwrap().iter().any(|k| k.name() == name)
    };

    until("web-a reconciled", PATIENCE, has("web-a")).await;
    create(
        &server,
        &cm(NS, "late", &[("app", "web"), (SHARD_LABEL, "a")]),
    )
    .await;
    until("late reconciled", PATIENCE, has("late")).await;
    assert_eq!(
        *reconciled.lock().unwrap(),
        [key(NS, "web-a"), key(NS, "late")]
    );
    assert_eq!(
        indexed(&lister, "web"),
        BTreeSet::from(["late".into(), "web-a".into()])
    );
    let both = format!("app=web,{}", ring.selector());
    assert_lists_ask(&server, "labelSelector", &both);
    assert_lists_ask(&server, "limit", &PAGE_SIZE.to_string());
    stop.cancel();
    run.await.unwrap().unwrap();
    server.shutdown().await;
}
