//! [`Request`]: what one reconcile is asked to make right.

use std::any::TypeId;
use std::fmt;
use std::sync::Arc;

use kube::Resource;

use super::consistency::ConsistencyStore;
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
    /// Where [`wrote`](Self::wrote) records; `None` for a request made by hand or
    /// a controller that does not wait for its writes.
    writes: Option<Arc<ConsistencyStore>>,
}

impl<K> Request<K> {
    /// A request for `key` with its cached state (for calling a reconcile function
    /// in a test; its [`wrote`](Self::wrote) records nothing).
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
    /// Records that this reconcile wrote `written` (the object the API server
    /// answered a create, update or patch with): the next reconcile of this key
    /// waits until the controller's cache of that kind has reached the write, so it
    /// never sees the object older than this write. Call it for every write made
    /// through your own [`kube::Api`]; the library's helpers (the
    /// [`Finalizer`](super::Finalizer)) record theirs.
    ///
    /// Recorded against this request's object (by its uid); `written` is the
    /// object itself or a child of a kind the controller
    /// [`owns`](super::Controller::owns). Nothing is recorded for a kind the
    /// controller has no informer for, a write answered without an integer
    /// resource version, a request with no object (a deletion), a request made by
    /// hand, or a controller with
    /// [`read_your_writes(false)`](super::Controller::read_your_writes).
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
    pub fn wrote<C: Resource + 'static>(&self, written: &C) {
        let (Some(writes), Some(object)) = (&self.writes, &self.object) else {
            return;
        };
        let (Some(uid), Some(rv)) = (
            object.meta().uid.as_deref(),
            written.meta().resource_version.as_deref(),
        ) else {
            return;
        };
        writes.wrote_at(self.key.key(), uid, TypeId::of::<C>(), rv);
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
