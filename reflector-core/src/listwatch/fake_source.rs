//! [`FakeSource`]: an in-memory lister-watcher for tests, as client-go's
//! `FakeControllerSource`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, ObjectList, TypeMeta, WatchEvent, WatchParams};

use super::{ListWatchError, ListerWatcher, WatchStream};
use crate::object::{Object, ObjectKey, meta_namespace_key};

type Sender<K> = mpsc::UnboundedSender<Result<WatchEvent<K>, ListWatchError>>;

/// Guarded by `FakeSource::state`.
struct FakeState<K> {
    items: BTreeMap<ObjectKey, K>,
    resource_version: u64,
    /// Every change, with its resource version, for watches that resume.
    history: Vec<(u64, WatchEvent<K>)>,
    /// Watches from a resource version below this get a 410 `ERROR` event.
    compacted_to: u64,
    watchers: Vec<Sender<K>>,
}

/// An in-memory collection that lists and watches like an API server: every change
/// gets the next resource version and goes to every open watch; watches resume from
/// any resource version it has seen. For unit tests of informers and controllers
/// without HTTP; for protocol-level tests use `reflector-testkit`.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::ListParams;
/// use reflector::listwatch::{FakeSource, ListerWatcher};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let source = FakeSource::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// source.add(cm);
/// let list = source.list(&ListParams::default()).await.unwrap();
/// assert_eq!(list.items.len(), 1);
/// assert_eq!(list.metadata.resource_version.as_deref(), Some("1"));
/// # }
/// ```
pub struct FakeSource<K> {
    state: Arc<Mutex<FakeState<K>>>,
    lists: Arc<AtomicUsize>,
    watches: Arc<AtomicUsize>,
    list_error: Arc<Mutex<Option<ListWatchError>>>,
}

impl<K> Clone for FakeSource<K> {
    fn clone(&self) -> Self {
        FakeSource {
            state: Arc::clone(&self.state),
            lists: Arc::clone(&self.lists),
            watches: Arc::clone(&self.watches),
            list_error: Arc::clone(&self.list_error),
        }
    }
}

impl<K> std::fmt::Debug for FakeSource<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeSource").finish_non_exhaustive()
    }
}

impl<K: Object> Default for FakeSource<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Object> FakeSource<K> {
    /// An empty source at resource version 0.
    #[must_use]
    pub fn new() -> Self {
        FakeSource {
            state: Arc::new(Mutex::new(FakeState {
                items: BTreeMap::new(),
                resource_version: 0,
                history: Vec::new(),
                compacted_to: 0,
                watchers: Vec::new(),
            })),
            lists: Arc::new(AtomicUsize::new(0)),
            watches: Arc::new(AtomicUsize::new(0)),
            list_error: Arc::new(Mutex::new(None)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn change(&self, obj: K, make: fn(K) -> WatchEvent<K>, delete: bool) -> K {
        self.change_notifying(obj, make, delete, true)
    }

    fn change_notifying(
        &self,
        obj: K,
        make: fn(K) -> WatchEvent<K>,
        delete: bool,
        notify: bool,
    ) -> K {
        let mut st = self.lock();
        st.resource_version += 1;
        let rv = st.resource_version;
        let mut obj = obj;
        obj.meta_mut().resource_version = Some(rv.to_string());
        match meta_namespace_key(&obj) {
            Ok(key) => {
                if delete {
                    st.items.remove(&key);
                } else {
                    st.items.insert(key, obj.clone());
                }
            }
            Err(e) => tracing::error!(error = %e, "FakeSource: object has no key"),
        }
        st.history.push((rv, make(obj.clone())));
        if notify {
            st.watchers
                .retain(|w| w.unbounded_send(Ok(make(obj.clone()))).is_ok());
        }
        obj
    }

    /// Adds an object; returns it with its new resource version.
    pub fn add(&self, obj: K) -> K {
        self.change(obj, WatchEvent::Added, false)
    }

    /// Modifies an object; returns it with its new resource version.
    pub fn modify(&self, obj: K) -> K {
        self.change(obj, WatchEvent::Modified, false)
    }

    /// Deletes an object; returns its final state with the delete's resource version.
    pub fn delete(&self, obj: K) -> K {
        self.change(obj, WatchEvent::Deleted, true)
    }

    /// Adds an object without telling open watches (a missed event); watches that
    /// resume from an earlier resource version replay it.
    pub fn add_drop_watch(&self, obj: K) -> K {
        self.change_notifying(obj, WatchEvent::Added, false, false)
    }

    /// Modifies an object without telling open watches.
    pub fn modify_drop_watch(&self, obj: K) -> K {
        self.change_notifying(obj, WatchEvent::Modified, false, false)
    }

    /// Deletes an object without telling open watches.
    pub fn delete_drop_watch(&self, obj: K) -> K {
        self.change_notifying(obj, WatchEvent::Deleted, true, false)
    }

    /// Rewrites every stored object with `f`, keeping its resource version and telling
    /// no watch: what a real API server's reads return after a CRD update adds a schema
    /// default or prunes a field (the stored object is not written again, so its
    /// resource version stays). The server also ends every watch of the kind and
    /// answers `410` to a watch from before the update; follow with
    /// [`compact_history`](Self::compact_history) and
    /// [`break_watches`](Self::break_watches) to play that part.
    ///
    /// # Example
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::listwatch::FakeSource;
    /// let source = FakeSource::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// source.add(cm);
    /// source.rewrite_stored(|cm| {
    ///     cm.data.get_or_insert_default().insert("priority".into(), "5".into());
    /// });
    /// let stored = &source.items()[0];
    /// assert_eq!(stored.metadata.resource_version.as_deref(), Some("1"));
    /// assert_eq!(stored.data.as_ref().unwrap()["priority"], "5");
    /// ```
    pub fn rewrite_stored(&self, mut f: impl FnMut(&mut K)) {
        for obj in self.lock().items.values_mut() {
            f(obj);
        }
    }

    /// Forgets the change history: watches resuming from an older resource version
    /// get a `410 Expired` `ERROR` event, which makes a reflector relist.
    pub fn compact_history(&self) {
        let mut st = self.lock();
        st.history.clear();
        st.compacted_to = st.resource_version;
    }

    /// Ends every open watch cleanly (as a server dropping connections).
    pub fn break_watches(&self) {
        self.lock().watchers.clear();
    }

    /// Makes every later list fail with `err` until [`FakeSource::clear_list_error`].
    pub fn fail_lists(&self, err: ListWatchError) {
        *self
            .list_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(err);
    }

    /// Lets lists succeed again.
    pub fn clear_list_error(&self) {
        *self
            .list_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The current objects.
    #[must_use]
    pub fn items(&self) -> Vec<K> {
        self.lock().items.values().cloned().collect()
    }

    /// How many list calls were made.
    #[must_use]
    pub fn list_calls(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
    }

    /// How many watch calls were made.
    #[must_use]
    pub fn watch_calls(&self) -> usize {
        self.watches.load(Ordering::SeqCst)
    }

    /// The number of open watches.
    #[must_use]
    pub fn open_watches(&self) -> usize {
        let mut st = self.lock();
        st.watchers.retain(|w| !w.is_closed());
        st.watchers.len()
    }
}

impl<K: Object> ListerWatcher<K> for FakeSource<K> {
    async fn list(&self, _params: &ListParams) -> Result<ObjectList<K>, ListWatchError> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        if let Some(e) = self
            .list_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            return Err(match e.status() {
                Some(s) => ListWatchError::Api(Box::new(s.clone())),
                None => ListWatchError::Api(Box::new(kube::core::Status::failure(
                    &e.to_string(),
                    "InternalError",
                ))),
            });
        }
        let st = self.lock();
        Ok(ObjectList {
            types: TypeMeta {
                api_version: "v1".into(),
                kind: "List".into(),
            },
            metadata: ListMeta {
                resource_version: Some(st.resource_version.to_string()),
                ..ListMeta::default()
            },
            items: st.items.values().cloned().collect(),
        })
    }

    async fn watch(
        &self,
        _params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError> {
        self.watches.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::unbounded();
        let mut st = self.lock();
        let from: u64 = resource_version.parse().unwrap_or(0);
        if resource_version.is_empty() || resource_version == "0" {
            for obj in st.items.values() {
                let _ = tx.unbounded_send(Ok(WatchEvent::Added(obj.clone())));
            }
        } else if from < st.compacted_to {
            let mut status = kube::core::Status::failure(
                &format!("too old resource version: {from} ({})", st.compacted_to),
                "Expired",
            )
            .with_code(410);
            status.reason = "Expired".into();
            let _ = tx.unbounded_send(Ok(WatchEvent::Error(Box::new(status))));
            return Ok(rx.boxed());
        } else {
            for (rv, ev) in &st.history {
                if *rv > from {
                    let _ = tx.unbounded_send(Ok(ev.clone()));
                }
            }
        }
        st.watchers.push(tx);
        Ok(rx.boxed())
    }
}
