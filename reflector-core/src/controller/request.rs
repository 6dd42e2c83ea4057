//! [`Request`]: what one reconcile is asked to make right.

use std::fmt;
use std::sync::Arc;

use kube::core::NamespaceResourceScope;
use kube::{Api, Client, Resource};

use super::consistency::{ConsistencyStore, WriteLog};
use super::kind_key::KindKey;
use super::recording_api::RecordingApi;
use crate::object::{ObjectKey, ObjectRef};

/// One reconcile's input: the typed key of the object to make right and its state
/// in the primary informer's cache when a worker took the key (`None`: the object
/// is gone, so clean up), as controller-runtime's `reconcile.Request` plus the
/// cached object kube-runtime hands its reconciler.
///
/// The object is read at dequeue time, so a key queued many times is reconciled
/// against the latest cached state; a reconcile never needs the primary's lister.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::controller::{Action, Request};
/// use reflector::object::ObjectRef;
///
/// async fn reconcile(req: Request<ConfigMap>, _ctx: Arc<()>) -> Result<Action, kube::Error> {
///     let Some(cm) = req.object else {
///         println!("{} was deleted", req.key);
///         return Ok(Action::done());
///     };
///     println!("{} has {} keys", req.key, cm.data.as_ref().map_or(0, |d| d.len()));
///     Ok(Action::done())
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let gone = Request::new(ObjectRef::<ConfigMap>::new(Some("demo"), "web"), None);
/// assert_eq!(reconcile(gone, Arc::new(())).await.unwrap(), Action::done());
/// # }
/// ```
#[non_exhaustive]
pub struct Request<K> {
    /// The key of the object to reconcile.
    pub key: ObjectRef<K>,
    /// The object as cached when the key was taken; `None` once it was deleted.
    pub object: Option<Arc<K>>,
    /// Where this request's writes are recorded; `None` for a request made by hand
    /// or a controller that does not wait for its writes.
    writes: Option<Arc<ConsistencyStore>>,
}

impl<K> Request<K> {
    /// A request for `key` with its cached state (for calling a reconcile function
    /// in a test): writes through its [`api`](Self::api) and
    /// [`recording`](Self::recording) are made but recorded nowhere.
    #[must_use]
    pub fn new(key: ObjectRef<K>, object: Option<Arc<K>>) -> Self {
        Request {
            key,
            object,
            writes: None,
        }
    }

    /// A worker's request, whose writes are recorded in `writes`.
    pub(super) fn recorded(
        key: ObjectKey,
        object: Option<Arc<K>>,
        writes: Option<Arc<ConsistencyStore>>,
    ) -> Self {
        Request {
            key: ObjectRef::from_key(key),
            object,
            writes,
        }
    }
}

impl<K: Resource> Request<K> {
    /// Where this request's writes are recorded: `None` for a request made by hand,
    /// one with no object (a deletion) or without a uid, and a controller that does
    /// not wait for its writes.
    fn write_log(&self) -> Option<WriteLog> {
        let (Some(store), Some(object)) = (&self.writes, &self.object) else {
            return None;
        };
        let uid = object.meta().uid.clone()?;
        Some(WriteLog::new(
            Arc::clone(store),
            self.key.key().clone(),
            uid,
        ))
    }

    /// A [`kube::Api`] of the namespaced kind `C` in this request's namespace (the
    /// client's default namespace for a cluster-scoped primary) whose writes are
    /// recorded for this reconcile: the key's next reconcile waits until the
    /// controller's cache of `C` has them. See [`RecordingApi`].
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::{Patch, PatchParams};
    /// use reflector::controller::{Action, Request};
    ///
    /// async fn reconcile(req: Request<ConfigMap>, client: Arc<kube::Client>) -> Result<Action, kube::Error> {
    ///     if req.object.is_none() {
    ///         return Ok(Action::done());
    ///     }
    ///     let patch = serde_json::json!({ "data": { "seen": "yes" } });
    ///     req.api::<ConfigMap>(&client)
    ///         .patch(req.key.name(), &PatchParams::default(), &Patch::Merge(&patch))
    ///         .await?;
    ///     Ok(Action::done())
    /// }
    /// ```
    #[must_use]
    pub fn api<C>(&self, client: &Client) -> RecordingApi<C>
    where
        C: Resource<Scope = NamespaceResourceScope> + 'static,
        C::DynamicType: Default,
    {
        let api = match self.key.namespace() {
            Some(namespace) => Api::namespaced(client.clone(), namespace),
            None => Api::default_namespaced(client.clone()),
        };
        self.recording(api)
    }

    /// `api` with its writes recorded for this reconcile, as [`api`](Self::api)
    /// does: for another namespace, a cluster-scoped kind, or a `DynamicObject`.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::Namespace;
    /// use kube::api::{Api, Patch, PatchParams};
    /// use reflector::controller::{Action, Request};
    ///
    /// async fn reconcile(req: Request<Namespace>, client: Arc<kube::Client>) -> Result<Action, kube::Error> {
    ///     if req.object.is_none() {
    ///         return Ok(Action::done());
    ///     }
    ///     let namespaces = req.recording(Api::<Namespace>::all((*client).clone()));
    ///     let patch = serde_json::json!({ "metadata": { "labels": { "seen": "yes" } } });
    ///     namespaces
    ///         .patch(req.key.name(), &PatchParams::default(), &Patch::Merge(&patch))
    ///         .await?;
    ///     Ok(Action::done())
    /// }
    /// ```
    #[must_use]
    pub fn recording<C: Resource + 'static>(&self, api: Api<C>) -> RecordingApi<C> {
        RecordingApi::new(api, self.write_log())
    }

    /// Records that this reconcile wrote `written` (the object the API server
    /// answered a create, update or patch with) through a client other than
    /// [`api`](Self::api) and [`recording`](Self::recording), which record their own: the
    /// next reconcile of this key waits until the controller's cache of that kind
    /// has reached the write, so it never sees the object older than this write.
    ///
    /// Recorded against this request's object (by its uid), and against every cache
    /// of the controller holding the written kind (its group and resource, whatever
    /// type the cache decodes it into), the primary's or an
    /// [`owns`](super::Controller::owns) informer's. Nothing is recorded for a kind
    /// the controller has no informer for, a write answered without an integer
    /// resource version, a request with no object (a deletion), a request made by
    /// hand, or a controller with
    /// [`read_your_writes(false)`](super::Controller::read_your_writes). For a type
    /// described at run time (`DynamicObject`), see [`wrote_with`](Self::wrote_with).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::{Api, Patch, PatchParams};
    /// use reflector::controller::{Action, Request};
    ///
    /// async fn reconcile(req: Request<ConfigMap>, client: Arc<kube::Client>) -> Result<Action, kube::Error> {
    ///     if req.object.is_none() {
    ///         return Ok(Action::done());
    ///     }
    ///     // A plain `Api` records nothing by itself.
    ///     let api = Api::<ConfigMap>::namespaced((*client).clone(), req.key.namespace().unwrap_or_default());
    ///     let patch = serde_json::json!({ "data": { "seen": "yes" } });
    ///     let written = api
    ///         .patch(req.key.name(), &PatchParams::default(), &Patch::Merge(&patch))
    ///         .await?;
    ///     req.wrote(&written);
    ///     Ok(Action::done())
    /// }
    /// ```
    #[doc(alias = "WroteAt")]
    pub fn wrote<C>(&self, written: &C)
    where
        C: Resource + 'static,
        C::DynamicType: Default,
    {
        self.wrote_with(written, &C::DynamicType::default());
    }

    /// As [`wrote`](Self::wrote), for an object of a type described at run time
    /// (`DynamicObject` and its `ApiResource`).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::api::{ApiResource, DynamicObject};
    /// use reflector::controller::Request;
    /// use reflector::object::ObjectRef;
    ///
    /// let resource = ApiResource::erase::<ConfigMap>(&());
    /// let written = DynamicObject::new("web", &resource).within("demo");
    /// // A request made by hand records nothing.
    /// let req = Request::new(ObjectRef::<ConfigMap>::new(Some("demo"), "web"), None);
    /// req.wrote_with(&written, &resource);
    /// ```
    #[doc(alias = "WroteAt")]
    pub fn wrote_with<C: Resource + 'static>(&self, written: &C, dyntype: &C::DynamicType) {
        let (Some(store), Some(object)) = (&self.writes, &self.object) else {
            return;
        };
        let (Some(uid), Some(rv)) = (
            object.meta().uid.as_deref(),
            written.meta().resource_version.as_deref(),
        ) else {
            return;
        };
        let kind = KindKey::of_object(written, dyntype);
        store.wrote_at(self.key.key(), uid, &kind, rv);
    }
}

impl<K> Clone for Request<K> {
    fn clone(&self) -> Self {
        Request {
            key: self.key.clone(),
            object: self.object.clone(),
            writes: self.writes.clone(),
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for Request<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("key", &self.key)
            .field("object", &self.object)
            .field("records_writes", &self.writes.is_some())
            .finish()
    }
}
