//! A CRD update that adds a schema default, on the embedded API server, as a real
//! apiextensions-apiserver handles it: the server closes the watches of the kind, a
//! watch from before the update is `410`, and every read answers the default at the
//! object's unchanged resourceVersion. A running informer relists, and its cache must
//! hold what the server answered, in both queues and with watch-list. Handlers are told
//! as client-go tells them: an update at an unchanged resourceVersion is a resync, which
//! a handler without a resync period never gets.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResource;
use kube::api::{Api, PostParams};
use reflector::ReflectorOptions;
use reflector::fifo::QueueMode;
use reflector::informer::{Change, InformerFactory};
use reflector_testkit::ApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::mpsc;

use crate::support::namespaces::create_namespaces;
use crate::support::patience::PATIENCE;

/// A kind whose `priority` gets a schema default in the CRD's next revision.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Gizmo", namespaced)]
pub struct GizmoSpec {
    size: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    priority: Option<i64>,
}

const NS: &str = "gizmos";
const OBJECTS: usize = 40;

fn gizmo(name: &str) -> Gizmo {
    Gizmo::new(
        name,
        GizmoSpec {
            size: "small".into(),
            priority: None,
        },
    )
}

/// Adds `default: 5` to `spec.priority` in the stored CRD, through the API.
async fn add_priority_default(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = crds.get("gizmos.example.com").await.expect("the CRD");
    let mut value = serde_json::to_value(&crd).expect("a CRD serializes");
    value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["priority"]["default"] = json!(5);
    crd = serde_json::from_value(value).expect("still a CRD");
    crds.replace("gizmos.example.com", &PostParams::default(), &crd)
        .await
        .expect("the CRD update");
}

/// Syncs an informer of `OBJECTS` gizmos with `queue` (and watch-list if asked), adds
/// the default, then creates one more gizmo: the old watch ends at the update, so that
/// gizmo reaches the informer only after the relist (in list order, after the others,
/// or from the new watch). Once the handler is told of it, every relisted gizmo must be
/// cached with the default at its old resourceVersion, and the handler (no resync
/// period) must have been told nothing else.
async fn relist_shows_the_new_default(queue: QueueMode, watch_list: bool) {
    let server = ApiServer::start().await.expect("server");
    server.register::<Gizmo>();
    let client = server.client();
    create_namespaces(&client, &[NS]).await;
    let api: Api<Gizmo> = Api::namespaced(client.clone(), NS);
    for i in 0..OBJECTS {
        api.create(&PostParams::default(), &gizmo(&format!("g-{i:03}")))
            .await
            .expect("create");
    }

    let factory = InformerFactory::new(client.clone())
        .queue(queue)
        .reflector_options(ReflectorOptions::default().use_watch_list(watch_list));
    let informer = factory.informer::<Gizmo>();
    let (tx, mut told) = mpsc::unbounded_channel();
    informer
        .add_event_fn(move |change: Change<Gizmo>| {
            let _ = tx.send(change);
        })
        .expect("a running informer");
    factory.start();
    tokio::time::timeout(PATIENCE, factory.wait_synced())
        .await
        .expect("synced in time")
        .expect("synced");
    let before: BTreeMap<String, Arc<Gizmo>> = informer
        .lister()
        .list()
        .into_iter()
        .map(|g| (g.metadata.name.clone().unwrap_or_default(), g))
        .collect();
    assert_eq!(before.len(), OBJECTS);
    assert!(before.values().all(|g| g.spec.priority.is_none()));
    let relists = informer.reflector_stats().relists;

    add_priority_default(&client).await;
    api.create(&PostParams::default(), &gizmo("zz-after-update"))
        .await
        .expect("create");

    let mut other = Vec::new();
    tokio::time::timeout(PATIENCE, async {
        loop {
            match told.recv().await.expect("the informer runs") {
                Change::Added { obj, .. }
                    if obj.metadata.name.as_deref() == Some("zz-after-update") =>
                {
                    break;
                }
                Change::Added { obj, .. }
                    if before.contains_key(obj.metadata.name.as_deref().unwrap_or_default()) => {}
                change => other.push(format!("{change:?}")),
            }
        }
    })
    .await
    .expect("the gizmo created after the update reaches the informer");

    assert!(
        informer.reflector_stats().relists > relists,
        "the informer relisted"
    );
    for (name, old) in &before {
        let key = format!("{NS}/{name}").parse().expect("a key");
        let cached = informer.indexer().get(&key).expect("still cached");
        assert_eq!(
            cached.spec.priority,
            Some(5),
            "{name}: the cache holds what the server answered"
        );
        assert_eq!(
            cached.metadata.resource_version, old.metadata.resource_version,
            "{name}: at its unchanged resourceVersion"
        );
    }
    assert!(
        other.is_empty(),
        "a handler without a resync period is told of no update at an unchanged resourceVersion: {other:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relist_after_crd_update_shows_the_new_default_in_order() {
    relist_shows_the_new_default(QueueMode::InOrder, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relist_after_crd_update_shows_the_new_default_delta_fifo() {
    relist_shows_the_new_default(QueueMode::PerKey, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relist_after_crd_update_shows_the_new_default_watch_list() {
    relist_shows_the_new_default(QueueMode::InOrder, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relist_after_crd_update_shows_the_new_default_watch_list_delta_fifo() {
    relist_shows_the_new_default(QueueMode::PerKey, true).await;
}
