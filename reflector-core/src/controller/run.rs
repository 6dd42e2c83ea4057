//! [`Controller::run`]: the informers, the terms (of a lease, or one endless term),
//! the workers of each term, and the graceful shutdown — in that order.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::object::{Object, ObjectKey};
use crate::workqueue::{Priority, QueueConfig, WorkQueue};

use super::action::Action;
use super::controller::Controller;
use super::error::ControllerError;
use super::error_policy::ErrorPolicy;
use super::request::Request;
use super::shutdown::Shutdown;
use super::watching::Watching;
use super::worker::WorkerShared;
use super::workers::Workers;

impl<K: Object, P> Controller<K, P> {
    /// Runs the controller until a shutdown signal (with
    /// [`shutdown_on_signal`](Self::shutdown_on_signal)), the
    /// [`graceful_shutdown_on`](Self::graceful_shutdown_on) trigger, or until the
    /// future is dropped.
    ///
    /// - `reconcile(request, ctx)` makes the world match `request.object` (`None`:
    ///   deleted) and answers an [`Action`]. It may run concurrently for different
    ///   keys, never for the same key. Its error is anything `Display` —
    ///   `kube::Error`, your own `thiserror` enum, `anyhow::Error`,
    ///   `Box<dyn Error + Send + Sync>` — logged, counted and handed to the error
    ///   policy. A panicking `reconcile` counts as an error and backs off.
    ///
    /// Steps: claims the term's lease if there is one (leader election, a shard's
    /// membership); registers a handler on every informer; starts those not started
    /// (unless told otherwise) and the lease; waits for every handler to sync; then,
    /// term after term, starts `concurrency` workers once the term is acquired and
    /// stops them when it is lost; on shutdown, shuts the queue down, waits for
    /// in-flight reconciles up to the graceful-shutdown timeout, releases the lease,
    /// removes its handlers, stops the informers it started and returns.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::controller::{Action, Controller, Request};
    ///
    /// // anyhow::Error (not a std Error) is a reconcile error like any other.
    /// async fn reconcile(req: Request<ConfigMap>, _: Arc<()>) -> anyhow::Result<Action> {
    ///     let cm = req.object.ok_or_else(|| anyhow::anyhow!("{} is gone", req.key))?;
    ///     anyhow::ensure!(cm.data.is_some(), "{} has no data", req.key);
    ///     Ok(Action::done())
    /// }
    /// # async fn f(client: kube::Client) -> Result<(), reflector::controller::ControllerError> {
    /// Controller::<ConfigMap>::for_kind(client).run(reconcile, Arc::new(())).await
    /// # }
    /// ```
    ///
    /// # Errors
    /// - [`ControllerError::Informer`] if an informer has stopped;
    /// - [`ControllerError::CacheSyncTimeout`] if the informers did not sync in time;
    /// - [`ControllerError::GracefulShutdownTimeout`] if reconciles had to be aborted;
    /// - [`ControllerError::Signal`] if the signal handlers cannot be installed;
    /// - [`ControllerError::LeaderElection`] if the election (or the ring) is already
    ///   running;
    /// - `ControllerError::Sharding` (feature `sharding`) if a sharded controller
    ///   watches more than its share, or is leader-elected too.
    ///
    /// A shutdown before the informers synced is a clean stop (`Ok`).
    ///
    /// # Cancel safety
    /// A signal or the [`graceful_shutdown_on`](Self::graceful_shutdown_on) trigger
    /// is the clean stop. Dropping the future instead aborts the workers and the
    /// informers it started at once and removes its handlers.
    pub async fn run<R, Fut, E, Ctx>(
        mut self,
        reconcile: R,
        ctx: Arc<Ctx>,
    ) -> Result<(), ControllerError>
    where
        R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + 'static,
        P: ErrorPolicy<K, E, Ctx>,
        Ctx: Send + Sync + 'static,
    {
        // What can fail before anything starts: the signal listeners, the lease's claim.
        let shutdown = Shutdown::install(self.shutdown.take(), self.shutdown_on_signal)?;
        let mut term = self.term()?;
        let name = self.name.clone();
        let queue = self.queue();
        let cache = self.primary.indexer().clone();
        let (primary, sources) = (self.primary.clone(), std::mem::take(&mut self.sources));
        let filter = self.primary_filter.take();
        let metrics = self.metrics.as_ref();
        let mut watching = Watching::register(
            &name,
            primary,
            filter,
            sources,
            &queue,
            term.gate(),
            metrics,
        )?;
        if self.start_informers {
            watching.start_informers();
        }
        let consistency = self
            .read_your_writes
            .then(|| Arc::new(watching.consistency()));
        term.start();
        let shared = Arc::new(WorkerShared {
            name: name.clone(),
            queue: queue.clone(),
            cache: cache.clone(),
            reconcile,
            error_policy: self.error_policy,
            ctx,
            recorder: metrics.map(|m| m.reconcile().init_controller(&name, self.concurrency)),
            gate: term.gate().cloned(),
            consistency,
        });
        // Starts the graceful shutdown: the workers drain, then the run ends.
        let graceful = CancellationToken::new();
        let terms = async {
            if !watching.synced(&graceful, self.cache_sync_timeout).await? {
                return Ok(());
            }
            // A term's catch-up is a backlog: live changes go first.
            let requeue = || {
                for key in cache.list_keys() {
                    queue.add_with_priority(key, Priority::LOW);
                }
            };
            while term.acquired(&graceful, requeue).await {
                tracing::info!(controller = %name, workers = self.concurrency, "starting workers");
                let worker = |slot, stop| Arc::clone(&shared).worker(slot, stop);
                let mut workers = Workers::spawn(&name, self.concurrency, &graceful, worker);
                let until = tokio::select! {
                    () = graceful.cancelled() => {
                        queue.shutdown();
                        return workers.shut_down(self.graceful_shutdown_timeout).await;
                    }
                    until = term.lost() => until,
                    never = workers.tend(&queue, metrics.is_some()) => match never {},
                };
                for key in workers.end_term(until).await {
                    let priority = queue.priority(&key).unwrap_or_default();
                    queue.done(&key);
                    queue.add_with_priority(key, priority);
                }
            }
            Ok(())
        };
        let result = shutdown.drive(terms, &graceful).await;
        // The lease is given up only now that no reconcile runs.
        term.release().await;
        watching.stop().await;
        tracing::info!(controller = %name, "controller stopped");
        result
    }

    /// The work queue, named after the controller, with its metrics.
    fn queue(&self) -> WorkQueue<ObjectKey> {
        let mut config = QueueConfig::default()
            .name(self.name.clone())
            .priorities(self.priority_queue);
        if let Some(m) = &self.metrics {
            config = config.metrics(m);
        }
        WorkQueue::with_config(Arc::clone(&self.rate_limiter), config)
    }
}
