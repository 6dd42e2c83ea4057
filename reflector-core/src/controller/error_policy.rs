//! [`ErrorPolicy`]: what a controller does with a key whose reconcile failed.

use std::sync::Arc;

use crate::object::ObjectRef;

use super::Action;

/// Decides what happens to a key after its reconcile returned an error, as the
/// `error_policy` of kube-runtime. Implemented by every
/// `Fn(&ObjectRef<K>, &E, Arc<Ctx>) -> Action` closure or function, and by
/// [`Action`] itself (a fixed answer; the default is
/// [`Action::requeue_rate_limited`]); set one with
/// [`Controller::error_policy`](super::Controller::error_policy).
///
/// The answer means: [`Action::requeue_rate_limited`] — retry after the key's
/// exponential backoff; [`Action::requeue_after`] — retry after a fixed delay,
/// keeping the backoff count; [`Action::done`] — a terminal error, not retried
/// (controller-runtime's `TerminalError`).
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::controller::{Action, ErrorPolicy};
/// use reflector_core::object::ObjectRef;
///
/// #[derive(Debug, thiserror::Error)]
/// enum Error {
///     #[error("invalid spec")]
///     Invalid,
///     #[error("API unavailable")]
///     Unavailable,
/// }
///
/// fn policy(_key: &ObjectRef<ConfigMap>, err: &Error, _ctx: Arc<()>) -> Action {
///     match err {
///         Error::Invalid => Action::done(), // retrying will not help
///         Error::Unavailable => Action::requeue_after(Duration::from_secs(10)),
///     }
/// }
/// let key = ObjectRef::new(Some("demo"), "web");
/// assert_eq!(policy.on_error(&key, &Error::Invalid, &Arc::new(())), Action::done());
/// ```
pub trait ErrorPolicy<K, E, Ctx>: Send + Sync + 'static {
    /// What to do with `key` after its reconcile failed with `error`.
    fn on_error(&self, key: &ObjectRef<K>, error: &E, ctx: &Arc<Ctx>) -> Action;
}

impl<K, E, Ctx, F> ErrorPolicy<K, E, Ctx> for F
where
    F: Fn(&ObjectRef<K>, &E, Arc<Ctx>) -> Action + Send + Sync + 'static,
{
    fn on_error(&self, key: &ObjectRef<K>, error: &E, ctx: &Arc<Ctx>) -> Action {
        self(key, error, Arc::clone(ctx))
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
/// use reflector_core::controller::{Action, ErrorPolicy};
/// use reflector_core::object::ObjectRef;
///
/// let key = ObjectRef::<ConfigMap>::new(None, "a");
/// let boom = std::io::Error::other("boom");
/// let policy = Action::requeue_rate_limited();
/// assert_eq!(policy.on_error(&key, &boom, &Arc::new(())), Action::requeue_rate_limited());
/// let every_minute = Action::requeue_after(Duration::from_secs(60));
/// assert_eq!(every_minute.on_error(&key, &boom, &Arc::new(())), every_minute);
/// ```
impl<K, E, Ctx> ErrorPolicy<K, E, Ctx> for Action {
    fn on_error(&self, _key: &ObjectRef<K>, _error: &E, _ctx: &Arc<Ctx>) -> Action {
        *self
    }
}
