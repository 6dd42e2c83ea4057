//! [`Manager::run`]: prepare every controller, start the informers, the server, the
//! election, the controllers and the tasks; then shut down in order.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::controller::{ControllerError, Managed, PreparedController, Shutdown};
use crate::leader_election::LeaderElection;

use super::tasks::Tasks;
use super::{Manager, ManagerError};

/// A controller's run: the controller (for what follows the drain) and how its
/// reconciling ended.
type Ran = (Box<dyn PreparedController>, Result<(), ControllerError>);

impl Manager {
    /// Runs everything until SIGTERM or SIGINT, or the
    /// [`graceful_shutdown_on`](Self::graceful_shutdown_on) trigger, then shuts down
    /// in order; or until a controller fails, then shuts the rest down the same
    /// way and returns its error.
    ///
    /// Starting: claims the election, registers every controller's handlers,
    /// starts the informers, the server and the election (informers sync while
    /// the replica follows), and the controllers, which reconcile once their
    /// informers synced and, if leader-only, while the replica leads; the tasks
    /// start once the informers synced.
    ///
    /// Shutting down, in order: controllers and tasks stop taking work →
    /// reconciles and tasks in flight finish within the graceful-shutdown timeout
    /// (stragglers are aborted) → recorders are flushed → the lease is given up
    /// (with `release_on_cancel`; a sharded controller's membership too) → handlers
    /// are removed and informers stop → the webhook server (feature `webhooks`)
    /// answers its requests in flight and stops → the metrics server stops.
    ///
    /// # Errors
    /// - [`ManagerError::Signal`] if the signal listeners cannot be installed;
    /// - [`ManagerError::LeaderElection`] if the election is already running;
    /// - [`ManagerError::Controller`] with the first controller that could not
    ///   start or failed: an informer stopped, its caches did not sync within its
    ///   cache-sync timeout, reconciles had to be aborted at shutdown, a sharded
    ///   controller wired wrong;
    /// - `ManagerError::Metrics` (feature `metrics-server`) if serving failed;
    /// - `ManagerError::Webhooks` (feature `webhooks`) if the webhook server could
    ///   not start or failed.
    ///
    /// # Cancel safety
    /// The signals and the trigger are the clean stop. Dropping the future aborts
    /// every worker, task, informer and the election at once (the lease is not
    /// given up: it expires).
    pub async fn run(self) -> Result<(), ManagerError> {
        let Manager {
            factory,
            registry,
            metrics,
            health,
            election,
            controllers,
            tasks,
            recorders,
            graceful_shutdown_timeout: timeout,
            shutdown,
            #[cfg(feature = "metrics-server")]
            listener,
            #[cfg(feature = "webhooks")]
            webhooks,
            ..
        } = self;
        let shutdown = Shutdown::install(shutdown, true).map_err(|e| match e {
            ControllerError::Signal(e) => ManagerError::Signal(e),
            other => ManagerError::Signal(Arc::new(std::io::Error::other(other.to_string()))),
        })?;
        let claim = election
            .as_ref()
            .map(LeaderElection::claim)
            .transpose()
            .map_err(ManagerError::LeaderElection)?;
        // Every handler is registered before any informer runs: no event is lost,
        // and each controller's terms subscribe before the election runs.
        let mut prepared = Vec::with_capacity(controllers.len());
        for controller in controllers {
            let name = controller.name().to_owned();
            let managed = Managed {
                election: election.clone(),
                metrics: metrics.clone(),
                graceful_shutdown_timeout: timeout,
            };
            let ready = controller
                .prepare(managed)
                .map_err(|source| ManagerError::Controller {
                    controller: name,
                    source,
                })?;
            prepared.push(ready);
        }
        let tasks = Tasks::new(tasks, election.as_ref());
        #[cfg(feature = "metrics-server")]
        let serving = super::serving::Serving::start(listener, registry, health)?;
        #[cfg(not(feature = "metrics-server"))]
        drop((registry, health));

        factory.start();
        let stop_election = CancellationToken::new();
        let mut electing = JoinSet::new();
        if let Some(guard) = claim {
            electing.spawn(LeaderElection::run_claimed(guard, stop_election.clone()));
        }
        let graceful = CancellationToken::new();
        #[cfg(feature = "webhooks")]
        let webhooks = super::webhooks::Webhooks::start(webhooks, &graceful);
        let mut running: JoinSet<Ran> = JoinSet::new();
        for mut controller in prepared {
            controller.start();
            let graceful = graceful.clone();
            running.spawn(async move {
                let result = controller.reconcile(&graceful).await;
                (controller, result)
            });
        }

        let work = async {
            let (ran, ()) = tokio::join!(
                drain(&mut running, &graceful),
                tasks.run(&factory, &graceful, timeout),
            );
            graceful.cancelled().await;
            ran
        };
        let (mut stopped, error) = shutdown.drive(work, &graceful).await;
        tracing::info!("no reconcile runs any more; flushing events");
        flush(&recorders, timeout).await;
        // The lease is given up only now that no reconcile runs.
        stop_election.cancel();
        while let Some(joined) = electing.join_next().await {
            if let Err(e) = joined {
                tracing::error!(error = %e, "the leader election's task failed");
            }
        }
        for controller in &mut stopped {
            controller.release().await;
        }
        tracing::info!("lease released; stopping the informers");
        for controller in stopped {
            controller.stop().await;
        }
        factory.shutdown().await;
        #[cfg(feature = "webhooks")]
        let error = {
            let served = webhooks.stop().await;
            error.or(served.err())
        };
        #[cfg(feature = "metrics-server")]
        let error = {
            let served = serving.stop().await;
            error.or(served.err())
        };
        tracing::info!("manager stopped");
        error.map_or(Ok(()), Err)
    }
}

/// Waits for every controller's reconciling to end (each ends on `graceful`, or on
/// an error, which fires `graceful` for the others): the controllers, and the
/// first error.
async fn drain(
    running: &mut JoinSet<Ran>,
    graceful: &CancellationToken,
) -> (Vec<Box<dyn PreparedController>>, Option<ManagerError>) {
    let mut stopped = Vec::new();
    let mut error = None;
    while let Some(joined) = running.join_next().await {
        match joined {
            Ok((controller, Ok(()))) => stopped.push(controller),
            Ok((controller, Err(source))) => {
                tracing::error!(controller = %controller.name(), error = %source, "controller failed; shutting down");
                graceful.cancel();
                error.get_or_insert(ManagerError::Controller {
                    controller: controller.name().to_owned(),
                    source,
                });
                stopped.push(controller);
            }
            Err(e) => {
                tracing::error!(error = %e, "a controller's task failed; shutting down");
                graceful.cancel();
            }
        }
    }
    (stopped, error)
}

/// Flushes every recorder, each within `timeout`.
async fn flush(recorders: &[crate::events::Recorder], timeout: Duration) {
    for recorder in recorders {
        match tokio::time::timeout(timeout, recorder.flush()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "events not flushed"),
            Err(_) => tracing::warn!(?timeout, "events not flushed in time"),
        }
    }
}
