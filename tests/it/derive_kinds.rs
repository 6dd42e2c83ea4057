//! `#[derive(Reflect)]` beyond the namespaced CRD: a cluster-scoped CRD, a struct that
//! implements `kube::Resource` itself, `crate = ".."`, the generated constructors,
//! `InformerFactory::reflected` (its informer filled by the embedded server) and typed
//! events through `add_event_fn`; everything else without HTTP.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use kube::core::NamespaceResourceScope;
use reflector::Reflect;
use reflector::informer::{Change, InformerFactory, InformerOptions, SharedIndexInformer};
use reflector::listwatch::FakeSource;
use reflector::object::ObjectRef;
use reflector::store::{Indexers, StoreError, Writer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::support::patience::PATIENCE;

/// A cluster-scoped kind.
#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Rack")]
pub struct RackSpec {
    #[reflect(index)]
    region: String,
    #[reflect(index)]
    slots: HashSet<u8>,
}

/// A kind whose `Resource` impl is written by hand: fields are indexed on the struct.
#[derive(Reflect, Serialize, Deserialize, Clone, Debug)]
#[reflect(index(name = "by_app", label = "app"))]
pub struct Gadget {
    metadata: ObjectMeta,
    #[reflect(index)]
    color: String,
    #[reflect(index(name = "by_port"))]
    ports: [u16; 2],
}

impl kube::Resource for Gadget {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Gadget".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "example.com".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "gadgets".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Through the core crate directly.
#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Sprocket", namespaced)]
#[reflect(crate = "reflector_core")]
pub struct SprocketSpec {
    #[reflect(index)]
    teeth: i64,
}

fn rack(name: &str, region: &str, slots: &[u8]) -> Arc<Rack> {
    Arc::new(Rack::new(
        name,
        RackSpec {
            region: region.into(),
            slots: slots.iter().copied().collect(),
        },
    ))
}

fn gadget(name: &str, color: &str, ports: [u16; 2], app: &str) -> Arc<Gadget> {
    let mut metadata = ObjectMeta {
        name: Some(name.into()),
        namespace: Some("ns".into()),
        ..ObjectMeta::default()
    };
    metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
    Arc::new(Gadget {
        metadata,
        color: color.into(),
        ports,
    })
}

/// The names of a query's answer, sorted; the query must succeed.
fn names<K: kube::Resource>(v: Result<Vec<Arc<K>>, StoreError>) -> Vec<String> {
    let v = v.expect("the index is registered");
    let mut n: Vec<String> = v.iter().filter_map(|o| o.meta().name.clone()).collect();
    n.sort();
    n
}

fn client() -> kube::Client {
    let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
    kube::Client::try_from(config).expect("a client without I/O")
}

#[test]
fn cluster_scoped_rack_is_indexed_by_region_and_slot() {
    let mut indexer = Writer::new(Rack::indexers());
    indexer.add(rack("r1", "eu", &[1, 2])).unwrap();
    indexer.add(rack("r2", "us", &[2])).unwrap();
    assert_eq!(names(indexer.by_region("eu")), ["r1"]);
    assert_eq!(names(indexer.by_slots(2)), ["r1", "r2"]);
    assert_eq!(
        indexer.by_slots_keys(1).unwrap(),
        [ObjectRef::<Rack>::new(None, "r1")]
    );
    indexer.update(rack("r1", "us", &[3])).unwrap();
    assert_eq!(names(indexer.by_region("us")), ["r1", "r2"]);
    assert_eq!(names(indexer.by_slots(2)), ["r2"]);
}

#[test]
fn manual_resource_gadget_is_indexed_on_its_own_fields() {
    assert_eq!(Gadget::INDEX_NAMES, ["by_app", "by_color", "by_port"]);
    let mut indexer = Writer::new(Gadget::indexers());
    indexer.add(gadget("a", "red", [80, 443], "web")).unwrap();
    indexer.add(gadget("b", "blue", [80, 8080], "db")).unwrap();
    assert_eq!(names(indexer.by_color("red")), ["a"]);
    assert_eq!(names(indexer.by_port(80)), ["a", "b"]);
    assert_eq!(names(indexer.by_port(8080)), ["b"]);
    assert_eq!(names(indexer.by_app("db")), ["b"]);
    indexer
        .delete(gadget("b", "blue", [80, 8080], "db"))
        .unwrap();
    assert_eq!(names(indexer.by_port(80)), ["a"]);
    assert!(names(indexer.by_app("db")).is_empty());
}

#[test]
fn crate_path_reflector_core_works() {
    let mut indexer = reflector_core::store::Writer::new(
        <Sprocket as reflector_core::reflect::Reflect>::indexers(),
    );
    indexer
        .add(Arc::new(Sprocket::new("s", SprocketSpec { teeth: -3 })))
        .unwrap();
    assert_eq!(names(indexer.by_teeth(-3)), ["s"]);
}

#[tokio::test]
async fn lister_watcher_lists_every_namespace_and_narrows() {
    let c = client();
    assert_eq!(
        Widget::lister_watcher(c.clone()).url(),
        "/apis/example.com/v1/widgets"
    );
    assert_eq!(
        Widget::lister_watcher(c.clone())
            .namespace("ns")
            .labels("app=web")
            .url(),
        "/apis/example.com/v1/namespaces/ns/widgets"
    );
    assert_eq!(
        Rack::lister_watcher(c.clone()).url(),
        "/apis/example.com/v1/racks"
    );
    assert_eq!(
        Gadget::lister_watcher(c).url(),
        "/apis/example.com/v1/gadgets"
    );
}

fn sorted_index_names<K: reflector::object::Object>(i: &SharedIndexInformer<K>) -> Vec<String> {
    let mut n: Vec<String> = i.indexer().indexers().names().map(str::to_owned).collect();
    n.sort();
    n
}

#[tokio::test]
async fn informer_registers_every_declared_index() {
    let informer = Gadget::informer(client());
    assert_eq!(
        sorted_index_names(&informer),
        ["by_app", "by_color", "by_port", "namespace"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn factory_reflected_adds_indexes_once_and_keeps_existing_ones() {
    let server = reflector_testkit::ApiServer::start().await.expect("server");
    server.register::<Rack>();
    let racks = kube::Api::<Rack>::all(server.client());
    let params = kube::api::PostParams::default();
    racks
        .create(&params, &*rack("r1", "eu", &[]))
        .await
        .expect("create");
    let factory = InformerFactory::new(server.client());
    let plain = factory.informer::<Rack>();
    plain
        .add_indexers(Indexers::new().with("by_region", |_: &Rack| vec!["mine".to_owned()]))
        .unwrap();
    let reflected = factory.reflected::<Rack>();
    let again = factory.reflected::<Rack>();
    assert_eq!(
        sorted_index_names(&again),
        ["by_region", "by_slots", "namespace"]
    );
    // Same informer, and the pre-existing `by_region` was kept, not replaced.
    factory.start();
    tokio::time::timeout(PATIENCE, reflected.wait_synced())
        .await
        .expect("synced in time")
        .expect("not stopped");
    assert_eq!(names(plain.by_region("mine")), ["r1"]);
    assert!(names(again.by_region("eu")).is_empty());
    factory.shutdown().await;
}

/// Waits, in paused virtual time, until `cond` holds (at most one virtual minute).
async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..600 {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cond()
}

#[tokio::test(start_paused = true)]
async fn add_event_fn_delivers_typed_events_and_queries_follow_the_informer() {
    let source = FakeSource::<Gadget>::new();
    source.add((*gadget("a", "red", [1, 2], "web")).clone());
    let informer = SharedIndexInformer::with_options(
        source.clone(),
        InformerOptions::default().indexers(Gadget::indexers()),
    );
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let reg = informer
        .add_event_fn({
            let seen = Arc::clone(&seen);
            move |ev: Change<Gadget>| {
                let s = match ev {
                    Change::Added {
                        obj,
                        is_in_initial_list,
                    } => {
                        format!("added {} {is_in_initial_list}", obj.color)
                    }
                    Change::Updated { old, new } => {
                        format!("updated {} -> {}", old.color, new.color)
                    }
                    Change::Deleted(d) => format!("deleted {}", d.object().color),
                };
                seen.lock().unwrap().push(s);
            }
        })
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let informer = informer.clone();
        let cancel = cancel.clone();
        async move { informer.run(cancel).await }
    });
    informer.wait_synced().await.unwrap();
    assert_eq!(names(informer.by_color("red")), ["a"]);

    let mut a = (*gadget("a", "blue", [1, 2], "web")).clone();
    a.metadata.resource_version = None;
    source.modify(a.clone());
    assert!(eventually(|| names(informer.by_color("blue")).len() == 1).await);
    assert!(names(informer.by_color("red")).is_empty());
    source.delete(a);
    assert!(eventually(|| names(informer.by_app("web")).is_empty()).await);
    assert!(eventually(|| seen.lock().unwrap().len() == 3).await);
    assert!(reg.has_synced());
    assert_eq!(
        *seen.lock().unwrap(),
        ["added red true", "updated red -> blue", "deleted blue"]
    );
    cancel.cancel();
    run.await.unwrap();
}

/// The user story's kind, repeated here for the constructor tests.
#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[reflect(index(name = "by_app", label = "app"))]
pub struct WidgetSpec {
    #[reflect(index)]
    owner: String,
}
