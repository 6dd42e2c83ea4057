//! The informer's first list, streamed from the embedded API server over real HTTP:
//! the body (one page of every object at `resourceVersion=0`, as a real API server
//! answers it, or pages of 500 when the server pages such lists) is decoded item by item
//! as it arrives, and the cache ends up holding exactly the server's objects — strings
//! with escapes, multi-byte characters and brackets, objects far larger than a read
//! chunk — with `managedFields` skipped or kept as the factory says. A forced relist
//! streams too and converges.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use reflector_core::informer::{InformerFactory, SharedIndexInformer};
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use serde_json::json;

use crate::support::patience::{PATIENCE, POLL};

const NS: &str = "stream";
/// client-go's very-short-watch rule (the reflector's too): a watch that ends within 1 s
/// of its start with no event is a failure, answered with a relist.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);
const OBJECTS: usize = 1_200;

/// A ConfigMap whose data tests the scanner: escapes, multi-byte characters, brackets
/// and quotes in strings; every 100th one carries 200 KB, more than any read chunk.
fn config_map(i: usize, rev: usize) -> ConfigMap {
    let mut data = json!({
        "text": format!("é€😀 \"quoted\" back\\slash ]}}[{{ tab\t newline\n #{i}"),
        "rev": rev.to_string(),
    });
    if i.is_multiple_of(100) {
        data["big"] = json!("\\\"x😀".repeat(40_000));
    }
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("cm-{i}"),
            "namespace": NS,
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:text": {}}}}],
        },
        "data": data,
    }))
    .unwrap()
}

async fn server(paged: bool) -> ApiServer {
    let server = ApiServer::builder()
        .paginate_rv0(paged)
        .start()
        .await
        .expect("server");
    let objects: Vec<ConfigMap> = (0..OBJECTS).map(|i| config_map(i, 0)).collect();
    server.insert_many(&objects).unwrap();
    server
}

/// name → (resourceVersion, data, has managedFields).
type Summary = BTreeMap<String, (String, BTreeMap<String, String>, bool)>;

fn summary<'a>(objects: impl IntoIterator<Item = &'a ConfigMap>) -> Summary {
    objects
        .into_iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap_or_default(),
                (
                    cm.metadata.resource_version.clone().unwrap_or_default(),
                    cm.data.clone().unwrap_or_default(),
                    cm.metadata.managed_fields.is_some(),
                ),
            )
        })
        .collect()
}

/// The server's objects, listed whole by kube's own `Api::list`; with `managed` false,
/// as a cache that skips `managedFields` holds them.
async fn on_server(server: &ApiServer, managed: bool) -> Summary {
    let list = Api::<ConfigMap>::namespaced(server.client(), NS)
        .list(&ListParams::default())
        .await
        .unwrap();
    let mut s = summary(&list.items);
    for entry in s.values_mut() {
        entry.2 &= managed;
    }
    s
}

fn cached(informer: &SharedIndexInformer<ConfigMap>) -> Summary {
    summary(informer.lister().list().iter().map(AsRef::as_ref))
}

async fn synced(factory: &InformerFactory) -> SharedIndexInformer<ConfigMap> {
    let informer = factory.informer::<ConfigMap>();
    factory.start();
    tokio::time::timeout(PATIENCE, factory.wait_synced())
        .await
        .expect("synced in time")
        .expect("synced");
    informer
}

/// The ConfigMap list requests: (limit, resourceVersion, continue) of each.
fn list_requests(server: &ApiServer) -> Vec<(String, String, String)> {
    server
        .request_log()
        .iter()
        .filter(|e| e.verb == Verb::List && e.resource.as_deref() == Some("configmaps"))
        .map(|e| {
            let p = |k| e.param(k).unwrap_or_default().to_owned();
            (p("limit"), p("resourceVersion"), p("continue"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_page_first_list_streams_every_object_intact() {
    let server = server(false).await;
    let lean = synced(&InformerFactory::new(server.client())).await;
    assert_eq!(
        list_requests(&server),
        [("500".to_owned(), "0".to_owned(), String::new())],
        "one request, answered in one page"
    );
    assert_eq!(cached(&lean), on_server(&server, false).await);
    let full = synced(&InformerFactory::new(server.client()).keep_managed_fields()).await;
    let expected = on_server(&server, true).await;
    assert!(expected.values().all(|e| e.2));
    assert_eq!(cached(&full), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paged_first_list_streams_each_page() {
    let server = server(true).await;
    let informer = synced(&InformerFactory::new(server.client())).await;
    let requests = list_requests(&server);
    assert_eq!(cached(&informer), on_server(&server, false).await);
    assert_eq!(requests.len(), OBJECTS.div_ceil(500), "{requests:?}");
    assert!(
        requests[1..].iter().all(|r| !r.2.is_empty()),
        "{requests:?}"
    );
}

/// After a 410 on the watch the informer relists (a streamed body, gathered and
/// applied as one `replace`) and holds the server's new state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_relist_streams_and_converges() {
    let server = server(false).await;
    let factory = InformerFactory::new(server.client());
    let informer = synced(&factory).await;
    let changed: Vec<ConfigMap> = (0..OBJECTS).step_by(7).map(|i| config_map(i, 1)).collect();
    // The watch ends and the next one is answered 410: the informer lists again. The
    // watch first outlives the very-short-watch rule, counted from when it is seen open
    // (the reflector started timing it earlier), plus the poll period of that wait.
    tokio::time::timeout(PATIENCE, async {
        while server.open_watches() == 0 {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .expect("the informer watches");
    tokio::time::sleep(VERY_SHORT_WATCH + POLL).await;
    server.inject(Matcher::verb(Verb::Watch), Fault::WatchGone);
    server.faults().drop_watches();
    server.insert_many(&changed).unwrap();
    let expected = on_server(&server, false).await;
    tokio::time::timeout(PATIENCE, async {
        while cached(&informer) != expected {
            tokio::time::sleep(POLL).await;
        }
    })
    .await
    .expect("the cache converges on the server's state");
    // The informer's first list, this test's own list, and the informer's relist.
    assert!(list_requests(&server).len() >= 3, "relisted");
    drop(factory);
}
