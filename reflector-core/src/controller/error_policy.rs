//! [`backoff_on_error`]: the usual error policy.

use std::sync::Arc;

use crate::object::ObjectKey;

use super::Action;

/// Retries a failed key after its per-key backoff from the controller's rate limiter
/// (5 ms doubling to 1000 s by default), as controller-runtime does for every
/// non-terminal error; a later success resets the backoff. Pass it as `run`'s
/// `error_policy`.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use reflector_core::controller::{backoff_on_error, Action};
/// use reflector_core::object::ObjectKey;
///
/// let err = std::io::Error::other("boom");
/// let action = backoff_on_error(&ObjectKey::new(None, "a"), &err, Arc::new(()));
/// assert_eq!(action, Action::requeue_rate_limited());
/// ```
pub fn backoff_on_error<E, Ctx>(_key: &ObjectKey, _error: &E, _ctx: Arc<Ctx>) -> Action {
    Action::requeue_rate_limited()
}
