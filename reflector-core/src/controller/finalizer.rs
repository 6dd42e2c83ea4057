//! [`Finalizer`]: cleanup that runs before an object disappears, as kube-runtime's
//! `finalizer` helper, on a controller's [`Request`].

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::{Action, RecordingApi, Request};
use crate::object::ObjectKey;

/// What a reconcile behind a [`Finalizer`] is asked to do (kube-runtime's
/// `finalizer::Event`).
#[doc(alias = "Event")]
#[derive(Debug)]
pub enum FinalizerStep<K> {
    /// The object lives (and carries the finalizer): make the world match it.
    Apply(Arc<K>),
    /// The object is being deleted: clean up what it owns outside the cluster's
    /// garbage collection. The finalizer is removed once this succeeds.
    Cleanup(Arc<K>),
}

/// Why a [`Finalizer`] step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalizerError<E> {
    /// The reconcile of a live object failed. Retryable as the error is.
    #[error("apply failed: {0}")]
    ApplyFailed(E),
    /// The cleanup failed; the finalizer stays, so it is retried. Retryable.
    #[error("cleanup failed: {0}")]
    CleanupFailed(E),
    /// Adding the finalizer failed (a conflict means the cache is behind: a newer
    /// event follows). Retryable.
    #[error("cannot add the finalizer")]
    AddFinalizer(#[source] kube::Error),
    /// Removing the finalizer after a successful cleanup failed. Retryable: the
    /// cleanup is not run again for the same deletion.
    #[error("cannot remove the finalizer")]
    RemoveFinalizer(#[source] kube::Error),
    /// The object has no name or uid (not one read from the API server). Not
    /// retryable.
    #[error("object has no name or uid")]
    UnnamedObject,
}

/// Runs a reconcile behind a finalizer, with kube-runtime's semantics:
///
/// - an object without the finalizer (and not being deleted) first gets it (a JSON
///   merge patch with the cached `resourceVersion` as precondition); the write
///   brings the next reconcile, which applies;
/// - a live object with the finalizer: `reconcile(FinalizerStep::Apply(obj))`;
/// - an object being deleted (`deletionTimestamp` set) that still has the
///   finalizer: `reconcile(FinalizerStep::Cleanup(obj))`, then the finalizer is
///   removed (with a `resourceVersion` precondition); an object already gone (404)
///   counts as removed;
/// - an object being deleted without the finalizer, or gone from the cache: nothing
///   (the finalizer is never added back to an object being deleted).
///
/// **A cleanup runs once per deletion** (within one process): a cleanup that
/// succeeded is remembered, with the object's uid, under its key until the cache
/// shows the object gone (a request with no object) or without the finalizer, not
/// merely until the removal patch returned — the cache may still show the object
/// with its finalizer after the removal succeeded, and a requeued key reconciled in
/// that window must not clean up again. A failed removal (a 409, a 500) is retried
/// without cleaning up again, and so is a removal replayed from a stale cache (it
/// then fails with 409 or finds the object gone). Keep one `Finalizer` per
/// controller, in its context: a new one (a restarted process) knows of no cleanup.
///
/// Its writes are recorded on the request, and so are a step's own writes through the
/// request's [`api`](Request::api) or [`recording`](Request::recording) (the step borrows
/// the request): with the controller's default
/// [`read_your_writes`](super::Controller::read_your_writes), the next reconcile of
/// the key waits until the cache has seen them.
///
/// # Example
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use kube::api::{DeleteParams, Patch, PatchParams};
/// use reflector::controller::{Action, Finalizer, FinalizerError, FinalizerStep, Request};
///
/// struct Ctx { client: kube::Client, finalizer: Finalizer }
///
/// async fn reconcile(req: Request<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, FinalizerError<kube::Error>> {
///     let api = kube::Api::<ConfigMap>::namespaced(ctx.client.clone(), req.key.namespace().unwrap_or_default());
///     // Recorded for this reconcile, in the request's namespace.
///     let secrets = req.api::<Secret>(&ctx.client);
///     ctx.finalizer
///         .reconcile(&api, &req, |step| async {
///             match step {
///                 FinalizerStep::Apply(cm) => {
///                     let secret = serde_json::json!({
///                         "apiVersion": "v1", "kind": "Secret",
///                         "metadata": { "name": cm.metadata.name },
///                     });
///                     let apply = PatchParams::apply("my-controller").force();
///                     secrets.patch(req.key.name(), &apply, &Patch::Apply(&secret)).await?;
///                 }
///                 FinalizerStep::Cleanup(_) => {
///                     secrets.delete(req.key.name(), &DeleteParams::default()).await?;
///                 }
///             }
///             Ok(Action::done())
///         })
///         .await
/// }
/// ```
#[derive(Debug)]
pub struct Finalizer {
    name: String,
    /// The uid whose cleanup succeeded, by key, until the cache shows that object
    /// gone or without the finalizer. Guarded by its own mutex, never held across an
    /// await.
    cleaned: Mutex<HashMap<ObjectKey, String>>,
}

impl Finalizer {
    /// A finalizer named `name` (a qualified name such as `example.com/cleanup`).
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Finalizer {
            name: name.into(),
            cleaned: Mutex::new(HashMap::new()),
        }
    }

    /// The finalizer's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    fn cleaned(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, String>> {
        self.cleaned.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reconciles `req` behind the finalizer (see the type's docs); `api` must reach
    /// the object (its namespace for a namespaced kind). The finalizer's own writes
    /// are recorded on `req`, as the step's through `req`'s
    /// [`api`](Request::api) and [`recording`](Request::recording).
    ///
    /// # Errors
    /// A [`FinalizerError`]: the reconcile's own error, or why the finalizer could
    /// not be written.
    ///
    /// # Cancel safety
    /// Not cancel-safe in the middle of a write: a dropped future may have added
    /// or removed the finalizer without returning; the next reconcile sees the
    /// result in the cache.
    pub async fn reconcile<K, E, F, Fut>(
        &self,
        api: &Api<K>,
        req: &Request<K>,
        reconcile: F,
    ) -> Result<Action, FinalizerError<E>>
    where
        K: Resource + Clone + DeserializeOwned + Debug + 'static,
        F: FnOnce(FinalizerStep<K>) -> Fut,
        Fut: Future<Output = Result<Action, E>>,
    {
        let key = req.key.key();
        let Some(obj) = req.object.clone() else {
            // Gone from the cache: its deletion is over.
            self.cleaned().remove(key);
            return Ok(Action::done());
        };
        let (Some(name), Some(uid)) = (obj.meta().name.clone(), obj.uid()) else {
            return Err(FinalizerError::UnnamedObject);
        };
        let has_finalizer = obj.finalizers().contains(&self.name);
        let deleting = obj.meta().deletion_timestamp.is_some();
        if !(deleting && has_finalizer) {
            // The cache shows this object without the finalizer (its removal is
            // seen), or another object under the key: what was remembered is over.
            self.forget(key, &uid, deleting);
        }
        match (deleting, has_finalizer) {
            (false, false) => {
                let mut finalizers = obj.finalizers().to_vec();
                finalizers.push(self.name.clone());
                write_finalizers(&req.recording(api.clone()), &name, &obj, finalizers)
                    .await
                    .map_err(FinalizerError::AddFinalizer)?;
                Ok(Action::done())
            }
            (false, true) => reconcile(FinalizerStep::Apply(obj))
                .await
                .map_err(FinalizerError::ApplyFailed),
            (true, true) => {
                let already = self.cleaned().get(key) == Some(&uid);
                let action = if already {
                    Action::done()
                } else {
                    let action = reconcile(FinalizerStep::Cleanup(Arc::clone(&obj)))
                        .await
                        .map_err(FinalizerError::CleanupFailed)?;
                    self.cleaned().insert(key.clone(), uid.clone());
                    action
                };
                let rest: Vec<String> = obj
                    .finalizers()
                    .iter()
                    .filter(|f| **f != self.name)
                    .cloned()
                    .collect();
                match write_finalizers(&req.recording(api.clone()), &name, &obj, rest).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => return Err(FinalizerError::RemoveFinalizer(e)),
                }
                // Still remembered: the cache may show the object with the
                // finalizer a while longer.
                Ok(action)
            }
            (true, false) => Ok(Action::done()),
        }
    }
}

impl Finalizer {
    /// Forgets the cleanup remembered under `key` once the cache shows its object
    /// `deleting` without the finalizer (same uid), or another object (a new uid).
    fn forget(&self, key: &ObjectKey, uid: &str, deleting: bool) {
        let mut cleaned = self.cleaned();
        if let Some(remembered) = cleaned.get(key)
            && (deleting || remembered != uid)
        {
            cleaned.remove(key);
        }
    }
}

/// Sets `metadata.finalizers` with a JSON merge patch that carries the cached
/// `resourceVersion`: a write based on a stale object fails with 409 instead of
/// dropping someone else's finalizer. Recorded through `api`.
async fn write_finalizers<K>(
    api: &RecordingApi<K>,
    name: &str,
    obj: &K,
    finalizers: Vec<String>,
) -> Result<K, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let patch = serde_json::json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": obj.resource_version(),
        }
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
}
