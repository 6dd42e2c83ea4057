//! [`Request`]: what one reconcile is asked to make right.

use std::fmt;
use std::sync::Arc;

use crate::object::ObjectRef;

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
/// use reflector_core::controller::{Action, Request};
/// use reflector_core::object::ObjectRef;
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
}

impl<K> Request<K> {
    /// A request for `key` with its cached state (for calling a reconcile function
    /// in a test).
    #[must_use]
    pub fn new(key: ObjectRef<K>, object: Option<Arc<K>>) -> Self {
        Request { key, object }
    }
}

impl<K> Clone for Request<K> {
    fn clone(&self) -> Self {
        Request {
            key: self.key.clone(),
            object: self.object.clone(),
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for Request<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("key", &self.key)
            .field("object", &self.object)
            .finish()
    }
}
