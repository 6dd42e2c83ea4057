//! [`ErrorPolicy`]: what a controller does with a key whose reconcile failed.

use std::sync::Arc;

use super::{Action, Request};

/// Decides what happens to a key after its reconcile returned an error, as the
/// `error_policy` of kube-runtime. Implemented by every
/// `Fn(&Request<K>, &E, Arc<Ctx>) -> Action` closure or function, and by [`Action`]
/// itself (a fixed answer; the default is [`Action::requeue_rate_limited`]); set one
/// with [`Controller::error_policy`](super::Controller::error_policy).
///
/// The policy gets what the failed reconcile saw: the [`Request`], with the typed key
/// always and the cached object when there was one (`None` for a deleted object), so
/// it can record a Warning Event about the object with
/// [`events::Recorder::publish`](crate::events::Recorder::publish), no reference to
/// build (first example).
///
/// The answer means: [`Action::requeue_rate_limited`] — retry after the key's
/// exponential backoff; [`Action::requeue_after`] — retry after a fixed delay,
/// keeping the backoff count; [`Action::done`] — a terminal error, not retried
/// (controller-runtime's `TerminalError`).
///
/// # Examples
/// A Warning Event about the object whose reconcile failed:
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::controller::{Action, Controller, Request};
/// use reflector::events::{Event, Recorder};
///
/// struct Ctx {
///     recorder: Recorder,
/// }
///
/// async fn reconcile(_: Request<ConfigMap>, _: Arc<Ctx>) -> Result<Action, kube::Error> {
///     Ok(Action::done())
/// }
///
/// fn on_error(req: &Request<ConfigMap>, err: &kube::Error, ctx: Arc<Ctx>) -> Action {
///     if let Some(cm) = &req.object {
///         let warning = Event::warning("ReconcileFailed", "Reconcile").note(err.to_string());
///         if let Err(e) = ctx.recorder.publish(cm.as_ref(), warning) {
///             eprintln!("{}: cannot record the failure: {e}", req.key);
///         }
///     }
///     Action::requeue_rate_limited()
/// }
///
/// # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let ctx = Arc::new(Ctx { recorder: Recorder::new(client.clone(), "configmap-controller")? });
/// Controller::<ConfigMap>::for_kind(client)
///     .error_policy(on_error)
///     .run(reconcile, ctx)
///     .await?;
/// # Ok(()) }
/// ```
///
/// A policy by the kind of error:
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::controller::{Action, ErrorPolicy, Request};
/// use reflector::object::ObjectRef;
///
/// #[derive(Debug, thiserror::Error)]
/// enum Error {
///     #[error("invalid spec")]
///     Invalid,
///     #[error("API unavailable")]
///     Unavailable,
/// }
///
/// fn policy(_req: &Request<ConfigMap>, err: &Error, _ctx: Arc<()>) -> Action {
///     match err {
///         Error::Invalid => Action::done(), // retrying will not help
///         Error::Unavailable => Action::requeue_after(Duration::from_secs(10)),
///     }
/// }
/// let req = Request::new(ObjectRef::new(Some("demo"), "web"), Some(Arc::new(ConfigMap::default())));
/// assert_eq!(policy.on_error(&req, &Error::Invalid, &Arc::new(())), Action::done());
/// ```
pub trait ErrorPolicy<K, E, Ctx>: Send + Sync + 'static {
    /// What to do with `request`'s key after its reconcile failed with `error`.
    fn on_error(&self, request: &Request<K>, error: &E, ctx: &Arc<Ctx>) -> Action;
}

impl<K, E, Ctx, F> ErrorPolicy<K, E, Ctx> for F
where
    F: Fn(&Request<K>, &E, Arc<Ctx>) -> Action + Send + Sync + 'static,
{
    fn on_error(&self, request: &Request<K>, error: &E, ctx: &Arc<Ctx>) -> Action {
        self(request, error, Arc::clone(ctx))
    }
}

/// A fixed answer: every failed key gets this `Action`. The controller's default
/// is [`Action::requeue_rate_limited`]: retry a failed key after its per-key
/// backoff from the controller's rate limiter (5 ms doubling to 1000 s by default),
/// as controller-runtime does for every non-terminal error; a later success resets
/// the backoff.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::controller::{Action, ErrorPolicy, Request};
/// use reflector::object::ObjectRef;
///
/// let gone = Request::<ConfigMap>::new(ObjectRef::new(None, "a"), None);
/// let boom = std::io::Error::other("boom");
/// let policy = Action::requeue_rate_limited();
/// assert_eq!(policy.on_error(&gone, &boom, &Arc::new(())), Action::requeue_rate_limited());
/// let every_minute = Action::requeue_after(Duration::from_secs(60));
/// assert_eq!(every_minute.on_error(&gone, &boom, &Arc::new(())), every_minute);
/// ```
impl<K, E, Ctx> ErrorPolicy<K, E, Ctx> for Action {
    fn on_error(&self, _request: &Request<K>, _error: &E, _ctx: &Arc<Ctx>) -> Action {
        *self
    }
}
