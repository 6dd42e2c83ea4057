//! The objects the suites cache, and what they read back from them.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kube::api::{ObjectList, TypeMeta};

// ---------- ConfigMaps (the FIFO's suite) ----------

/// A shared ConfigMap, what the FIFO's suite queues.
pub(crate) type Obj = Arc<ConfigMap>;

/// As client-go's `mkFifoObj`: an object keyed by `name` carrying `val`.
pub(crate) fn mk(name: &str, val: impl ToString) -> Obj {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some(BTreeMap::from([("val".to_owned(), val.to_string())]));
    Arc::new(cm)
}

/// The value of `obj`'s data `field` (empty when unset).
pub(crate) fn data(obj: &ConfigMap, field: &str) -> String {
    obj.data
        .as_ref()
        .and_then(|d| d.get(field))
        .cloned()
        .unwrap_or_default()
}

/// ConfigMap `ns/cm-{k}` at resource version `version`.
pub(crate) fn cm(k: u8, version: u64) -> Obj {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(format!("cm-{k}"));
    c.metadata.namespace = Some("ns".into());
    c.metadata.resource_version = Some(version.to_string());
    Arc::new(c)
}

// ---------- pods (the reflector's and the informer's suites) ----------

/// A pod named `name`, nothing else set.
fn named_pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

/// A pod without namespace, named `name` at `rv`.
pub(crate) fn pod(name: &str, rv: &str) -> Pod {
    let mut p = named_pod(name);
    p.metadata.resource_version = Some(rv.into());
    p
}

/// A pod `ns/name` without resource version.
pub(crate) fn ns_pod(name: &str) -> Pod {
    let mut p = named_pod(name);
    p.metadata.namespace = Some("ns".into());
    p
}

/// The pod `ns/name` labelled `key=value`.
pub(crate) fn labelled(name: &str, key: &str, value: &str) -> Pod {
    let mut p = ns_pod(name);
    p.metadata.labels = Some([(key.to_owned(), value.to_owned())].into());
    p
}

/// `pod-0@0` … `pod-{n-1}@{n-1}`.
pub(crate) fn pods(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| pod(&format!("pod-{i}"), &i.to_string()))
        .collect()
}

/// A pod list at `rv`, continued by `cont`.
pub(crate) fn pod_list(rv: &str, cont: Option<&str>, items: Vec<Pod>) -> ObjectList<Pod> {
    ObjectList {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "PodList".into(),
        },
        metadata: ListMeta {
            resource_version: Some(rv.into()),
            continue_: cont.map(Into::into),
            ..ListMeta::default()
        },
        items,
    }
}

/// The `(name, resourceVersion)` of each pod, sorted.
pub(crate) fn names_and_rvs<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Vec<(String, String)> {
    let mut got: Vec<(String, String)> = pods
        .into_iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect();
    got.sort();
    got
}

/// `[(name, rv)]` as owned strings, sorted, to compare with [`names_and_rvs`].
pub(crate) fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut want: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    want.sort();
    want
}

/// The cached `Arc` of every key of `indexer`, by name.
pub(crate) fn cached(indexer: &crate::store::Indexer<Pod>) -> BTreeMap<String, Arc<Pod>> {
    indexer
        .list()
        .into_iter()
        .map(|p| (p.metadata.name.clone().unwrap(), p))
        .collect()
}
