//! [`Task`]: a plain function a manager runs beside its controllers — on the leader
//! only (by default), or on every replica.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// Makes one run of a task from its stop token.
pub(super) type TaskFn = Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;

/// A function a [`Manager`](super::Manager) runs beside its controllers, as
/// controller-runtime's `Runnable`: given a [`CancellationToken`], it works until
/// the token fires, then returns.
///
/// - **Leader-only** by default (controller-runtime's default too): under a
///   manager with a leader election, it starts each time the replica starts
///   leading; when the lease is lost its token fires and it is awaited until
///   another replica could take over, then aborted; it starts again at the next
///   term. Without an election it runs once, from the start.
/// - [`every_replica`](Self::every_replica): it runs on every replica, leader or
///   not, from the start until the manager shuts down.
///
/// A task starts once the manager's informers have synced, so it can read their
/// caches. On shutdown its token fires with the controllers' (stop taking work);
/// it gets the manager's graceful-shutdown timeout to return, then is aborted. A
/// task that returns before its token fires has ended for this term (or, on every
/// replica, for good); it is logged, not restarted. It returns nothing: log your
/// own errors.
///
/// # Example
/// ```no_run
/// use std::time::Duration;
/// use reflector::manager::{Manager, Task};
/// # fn f(mut manager: Manager) {
/// manager.add_task(Task::new("heartbeat", |stop| async move {
///     while !stop.is_cancelled() {
///         println!("leading");
///         tokio::select! {
///             () = stop.cancelled() => {}
///             () = tokio::time::sleep(Duration::from_secs(10)) => {}
///         }
///     }
/// }));
/// # }
/// ```
#[must_use]
pub struct Task {
    pub(super) name: String,
    pub(super) run: TaskFn,
    pub(super) leader_only: bool,
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("name", &self.name)
            .field("leader_only", &self.leader_only)
            .finish_non_exhaustive()
    }
}

impl Task {
    /// A leader-only task named `name` (for the logs) running `task(stop)`.
    pub fn new<F, Fut>(name: impl Into<String>, task: F) -> Self
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Task {
            name: name.into(),
            run: Arc::new(move |stop| Box::pin(task(stop))),
            leader_only: true,
        }
    }

    /// Runs on every replica, leader or not, from the start until the manager shuts
    /// down (controller-runtime's `NeedLeaderElection() == false`). Default: only
    /// while the replica leads.
    pub fn every_replica(mut self) -> Self {
        self.leader_only = false;
        self
    }
}
