//! Names and reads shared by the sharding tests: one ring `cms` of ConfigMaps in
//! namespace `work`, its leases in `ops`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use reflector_core::informer::{Change, InformerFactory};
use reflector_testkit::ApiServer;
use tokio::time::Instant;

pub const RING: &str = "cms";
pub const LEASE_NS: &str = "ops";
pub const NS: &str = "work";
pub const LABEL: &str = "shard.reflector.rs/cms";
pub const DRAIN: &str = "shard.reflector.rs/cms-drain";
pub const SECS: fn(u64) -> Duration = Duration::from_secs;

pub fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// The ConfigMaps on the server.
pub async fn objects(server: &ApiServer) -> Vec<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    api.list(&ListParams::default()).await.unwrap().items
}

/// The assignment label of `cm`.
pub fn label_of(cm: &ConfigMap) -> Option<String> {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL))
        .cloned()
}

/// The drain annotation of `cm`.
pub fn drain_of(cm: &ConfigMap) -> Option<String> {
    cm.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DRAIN))
        .cloned()
}

/// Every distinct `state` each ConfigMap (by name) went through, in order, with the
/// instant a separate informer saw it.
pub type History<T> = Arc<Mutex<BTreeMap<String, Vec<(Instant, T)>>>>;

/// Starts an informer of the ConfigMaps that records their `state` history; keep
/// the factory alive while recording.
pub fn record_history<T>(
    server: &ApiServer,
    state: fn(&ConfigMap) -> T,
) -> (InformerFactory, History<T>)
where
    T: PartialEq + Send + 'static,
{
    let factory = InformerFactory::new(server.client());
    let informer = factory.namespaced::<ConfigMap>(NS);
    let history = History::default();
    let h = Arc::clone(&history);
    informer
        .add_event_fn(move |ev: Change<ConfigMap>| {
            let obj = match ev {
                Change::Added { obj, .. } | Change::Updated { new: obj, .. } => obj,
                Change::Deleted(_) => return,
            };
            let now = state(&obj);
            let mut h = h.lock().unwrap();
            let seen = h.entry(obj.metadata.name.clone().unwrap()).or_default();
            if seen.last().is_none_or(|(_, last)| *last != now) {
                seen.push((Instant::now(), now));
            }
        })
        .unwrap();
    factory.start();
    (factory, history)
}
