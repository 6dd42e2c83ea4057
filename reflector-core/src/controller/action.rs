//! [`Action`]: what a reconcile asks the controller to do with its key next.

use std::time::Duration;

/// What happens to a key after a reconcile, as controller-runtime's
/// `reconcile.Result` (and kube-runtime's `Action`).
///
/// | returned by `reconcile` | the controller | `result` label |
/// |---|---|---|
/// | `Ok(Action::done())` | forgets the key's backoff | `success` |
/// | `Ok(Action::requeue_after(d))` | forgets the backoff, re-adds the key after `d` | `requeue_after` |
/// | `Ok(Action::requeue_rate_limited())` | re-adds the key after its per-key backoff | `requeue` |
/// | `Err(e)` | asks the error policy, which answers an `Action` (see below) | `error` |
///
/// For an error, the policy's answer means: `requeue_rate_limited()` — retry after
/// the key's exponential backoff (controller-runtime's behaviour for every
/// non-terminal error); `requeue_after(d)` — retry after `d`, keeping the backoff
/// count; `done()` — a terminal error, not retried (controller-runtime's
/// `TerminalError`).
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::controller::Action;
///
/// assert_eq!(Action::requeue_after(Duration::from_secs(5)).requeue_delay(), Some(Duration::from_secs(5)));
/// assert!(Action::done().requeue_delay().is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub struct Action {
    kind: ActionKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ActionKind {
    Done,
    RequeueAfter(Duration),
    RequeueRateLimited,
}

impl Action {
    /// Nothing more to do until the key is enqueued again by an event.
    pub fn done() -> Self {
        Action {
            kind: ActionKind::Done,
        }
    }

    /// Reconcile the key again after `delay` (controller-runtime's
    /// `Result{RequeueAfter: d}`). A zero delay re-adds the key at once.
    pub fn requeue_after(delay: Duration) -> Self {
        Action {
            kind: ActionKind::RequeueAfter(delay),
        }
    }

    /// Reconcile the key again after its per-key backoff from the controller's rate
    /// limiter (controller-runtime's `Result{Requeue: true}`).
    pub fn requeue_rate_limited() -> Self {
        Action {
            kind: ActionKind::RequeueRateLimited,
        }
    }

    /// The fixed delay, for [`Action::requeue_after`].
    #[must_use]
    pub fn requeue_delay(&self) -> Option<Duration> {
        match self.kind {
            ActionKind::RequeueAfter(d) => Some(d),
            ActionKind::Done | ActionKind::RequeueRateLimited => None,
        }
    }

    /// Whether this is [`Action::requeue_rate_limited`].
    #[must_use]
    pub fn is_rate_limited(&self) -> bool {
        matches!(self.kind, ActionKind::RequeueRateLimited)
    }

    pub(crate) fn kind(&self) -> ActionKind {
        self.kind
    }
}
