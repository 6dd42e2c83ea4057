//! Fake stores: one that records every call, and a fixed list of known objects.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};

use super::objects::{Obj, names_and_rvs};
use crate::object::ObjectKey;
use crate::store::{KeyListerGetter, SinkError, Store, StoreError, StoreSink, WatchAction};

/// A store that records every call, as client-go tests inspect their stores.
#[derive(Default)]
pub(crate) struct RecordingStore {
    pub(crate) items: Mutex<BTreeMap<String, Arc<Pod>>>,
    pub(crate) ops: Mutex<Vec<String>>,
    pub(crate) resource_versions: Mutex<Vec<String>>,
    pub(crate) resyncs: AtomicUsize,
    pub(crate) fail_resync: bool,
}

impl RecordingStore {
    /// The stored `(name, resourceVersion)` pairs, sorted.
    pub(crate) fn names_and_rvs(&self) -> Vec<(String, String)> {
        names_and_rvs(self.items.lock().unwrap().values().map(|p| &**p))
    }

    pub(crate) fn len(&self) -> usize {
        self.items.lock().unwrap().len()
    }

    /// Every call so far, as `"add name@rv"`, `"replace N @rv"`, ….
    pub(crate) fn ops(&self) -> Vec<String> {
        self.ops.lock().unwrap().clone()
    }

    fn record(&self, op: &str, p: &Pod) -> String {
        let name = p.metadata.name.clone().unwrap_or_default();
        let rv = p.metadata.resource_version.clone().unwrap_or_default();
        self.ops.lock().unwrap().push(format!("{op} {name}@{rv}"));
        name
    }
}

impl Store<Pod> for RecordingStore {
    fn add(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let name = self.record("add", &obj);
        self.items.lock().unwrap().insert(name, obj);
        Ok(())
    }
    fn update(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let name = self.record("update", &obj);
        self.items.lock().unwrap().insert(name, obj);
        Ok(())
    }
    fn delete(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let name = self.record("delete", &obj);
        self.items.lock().unwrap().remove(&name);
        Ok(())
    }
    fn list(&self) -> Vec<Arc<Pod>> {
        self.items.lock().unwrap().values().cloned().collect()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.items
            .lock()
            .unwrap()
            .keys()
            .map(|k| ObjectKey::new(None, k))
            .collect()
    }
    fn get_object(&self, obj: &Pod) -> Result<Option<Arc<Pod>>, StoreError> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        Ok(self.items.lock().unwrap().get(&name).cloned())
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<Pod>> {
        self.items.lock().unwrap().get(key.name()).cloned()
    }
    fn replace(&self, items: Vec<Arc<Pod>>, resource_version: &str) -> Result<(), StoreError> {
        self.ops
            .lock()
            .unwrap()
            .push(format!("replace {} @{resource_version}", items.len()));
        let mut map = self.items.lock().unwrap();
        map.clear();
        for p in items {
            map.insert(p.metadata.name.clone().unwrap_or_default(), p);
        }
        Ok(())
    }
    fn resync(&self) -> Result<(), StoreError> {
        self.resyncs.fetch_add(1, Ordering::SeqCst);
        if self.fail_resync {
            Err(StoreError::UnknownIndex("a failing resync".into()))
        } else {
            Ok(())
        }
    }
}

/// The verbs as a plain store's, and every resource version recorded.
impl StoreSink<Pod> for RecordingStore {
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<Pod>)>,
        failed: &mut dyn FnMut(WatchAction, SinkError),
    ) {
        for (action, obj) in run.drain(..) {
            let result = match action {
                WatchAction::Add => self.add(obj),
                WatchAction::Update => self.update(obj),
                WatchAction::Delete => self.delete(obj),
            };
            if let Err(e) = result {
                failed(action, e.into());
            }
        }
    }

    fn resync(&self) -> Result<(), SinkError> {
        Ok(Store::resync(self)?)
    }

    fn replace_listed(
        &self,
        items: Vec<Arc<Pod>>,
        resource_version: &str,
    ) -> Result<(), SinkError> {
        Ok(Store::replace(self, items, resource_version)?)
    }

    fn update_resource_version(&self, resource_version: &str) {
        self.resource_versions
            .lock()
            .unwrap()
            .push(resource_version.to_owned());
    }
}

/// As client-go's `literalListerGetter`: a fixed list of known objects.
pub(crate) struct Literal(pub(crate) Vec<Obj>);

impl KeyListerGetter<ConfigMap> for Literal {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0
            .iter()
            .map(|o| ObjectKey::new(None, o.metadata.name.as_deref().unwrap_or_default()))
            .collect()
    }

    fn get(&self, key: &ObjectKey) -> Option<Obj> {
        self.0
            .iter()
            .find(|o| o.metadata.name.as_deref() == Some(key.as_str()))
            .cloned()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
