//! [`Controller::run`]: the informers, the terms (of a lease, or one endless term),
//! the workers of each term, and the graceful shutdown — in that order. The steps
//! are [`Prepared`]'s, so a [`Manager`](crate::manager::Manager) runs a controller
//! through the same ones, with its own shutdown and its shared lease.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::object::{Object, ObjectKey};
use crate::store::Indexer;
use crate::workqueue::{Priority, QueueConfig, WorkQueue};

use super::action::Action;
use super::controller::Controller;
use super::error::ControllerError;
use super::error_policy::ErrorPolicy;
use super::request::Request;
use super::shutdown::Shutdown;
use super::term::Term;
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
    /// Steps: claims the term's lease if there is one (a shard's membership);
    /// registers a handler on every informer; starts those not started (unless told
    /// otherwise) and the lease; waits for every handler to sync; then, term after
    /// term, starts `concurrency` workers once the term is acquired and stops them
    /// when it is lost; on shutdown, shuts the queue down, waits for in-flight
    /// reconciles up to the graceful-shutdown timeout, releases the lease, removes
    /// its handlers, stops the informers it started and returns.
    ///
    /// One controller runs alone this way. Several controllers in one process, a
    /// leader election, or the `/metrics` server: give the controller to a
    /// [`Manager`](crate::manager::Manager) instead.
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
    /// - [`ControllerError::LeaderElection`] if the shard's ring is already running;
    /// - `ControllerError::Sharding` (feature `sharding`) if a sharded controller
    ///   watches more than its share.
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
        let term = self.term()?;
        let mut prepared = self.prepare(reconcile, ctx, term)?;
        prepared.start();
        // Starts the graceful shutdown: the workers drain, then the run ends.
        let graceful = CancellationToken::new();
        let result = shutdown
            .drive(prepared.reconcile(&graceful), &graceful)
            .await;
        // The lease is given up only now that no reconcile runs.
        prepared.release().await;
        prepared.stop().await;
        result
    }

    /// Everything before the first await, in `term`: the handlers registered on
    /// every informer (before any informer this run starts runs, so no event is
    /// lost), and what the workers share.
    ///
    /// # Errors
    /// [`ControllerError::Informer`] if an informer has stopped.
    pub(super) fn prepare<R, Fut, E, Ctx>(
        mut self,
        reconcile: R,
        ctx: Arc<Ctx>,
        term: Term,
    ) -> Result<Prepared<K, R, P, Ctx>, ControllerError>
    where
        R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + 'static,
        P: ErrorPolicy<K, E, Ctx>,
        Ctx: Send + Sync + 'static,
    {
        let name = self.name.clone();
        let queue = self.queue();
        let cache = self.primary.indexer().clone();
        let (primary, sources) = (self.primary.clone(), std::mem::take(&mut self.sources));
        let filter = self.primary_filter.take();
        let metrics = self.metrics.as_ref();
        let watching = Watching::register(
            &name,
            primary,
            filter,
            sources,
            &queue,
            term.gate(),
            metrics,
        )?;
        let consistency = self
            .read_your_writes
            .then(|| Arc::new(watching.consistency()));
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
        Ok(Prepared {
            name,
            term,
            watching,
            queue,
            cache,
            shared,
            concurrency: self.concurrency,
            start_informers: self.start_informers,
            cache_sync_timeout: self.cache_sync_timeout,
            graceful_shutdown_timeout: self.graceful_shutdown_timeout,
            gauges: self.metrics.is_some(),
        })
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

/// A controller ready to run: its term, its handlers on the informers, and what its
/// workers share. [`start`](Self::start), [`reconcile`](Self::reconcile) until the
/// graceful shutdown, [`release`](Self::release), [`stop`](Self::stop) — in that
/// order; dropping it at any point aborts the workers and the lease's run and stops
/// the informers it started.
pub(crate) struct Prepared<K: Object, R, P, Ctx> {
    name: String,
    term: Term,
    watching: Watching,
    queue: WorkQueue<ObjectKey>,
    /// The primary informer's cache.
    cache: Indexer<K>,
    shared: Arc<WorkerShared<K, R, P, Ctx>>,
    concurrency: usize,
    start_informers: bool,
    cache_sync_timeout: Duration,
    graceful_shutdown_timeout: Duration,
    /// Whether the queue's unfinished-work gauges are refreshed (with metrics).
    gauges: bool,
}

impl<K, R, Fut, E, P, Ctx> Prepared<K, R, P, Ctx>
where
    K: Object,
    R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Display + 'static,
    P: ErrorPolicy<K, E, Ctx>,
    Ctx: Send + Sync + 'static,
{
    /// Starts the informers nobody started (unless told not to) and the term's
    /// lease, if it runs one: from here the informers sync while the term is awaited.
    pub(crate) fn start(&mut self) {
        if self.start_informers {
            self.watching.start_informers();
        }
        self.term.start();
    }

    /// How long in-flight reconciles may run once the graceful shutdown begins.
    pub(crate) fn set_graceful_shutdown_timeout(&mut self, timeout: Duration) {
        self.graceful_shutdown_timeout = timeout;
    }

    /// Waits for the informers to sync, then reconciles term after term until
    /// `graceful` fires; then shuts the queue down and lets the reconciles in flight
    /// finish within the graceful-shutdown timeout.
    ///
    /// # Errors
    /// As [`Controller::run`], but for the signals and the lease's claim.
    ///
    /// # Cancel safety
    /// Dropping the future aborts the workers of the term under way.
    pub(crate) async fn reconcile(
        &mut self,
        graceful: &CancellationToken,
    ) -> Result<(), ControllerError> {
        if !self
            .watching
            .synced(graceful, self.cache_sync_timeout)
            .await?
        {
            return Ok(());
        }
        let (name, queue, cache) = (&self.name, &self.queue, &self.cache);
        // A term's catch-up is a backlog: live changes go first.
        let requeue = || {
            for key in cache.list_keys() {
                queue.add_with_priority(key, Priority::LOW);
            }
        };
        while self.term.acquired(graceful, requeue).await {
            tracing::info!(controller = %name, workers = self.concurrency, "starting workers");
            let worker = |slot, stop| Arc::clone(&self.shared).worker(slot, stop);
            let mut workers = Workers::spawn(name, self.concurrency, graceful, worker);
            let until = tokio::select! {
                () = graceful.cancelled() => {
                    queue.shutdown();
                    // A lease lost while draining cuts the drain where another
                    // replica could take over.
                    let lost = self.term.lost();
                    return workers.shut_down(self.graceful_shutdown_timeout, lost).await;
                }
                until = self.term.lost() => until,
                never = workers.tend(queue, self.gauges) => match never {},
            };
            for key in workers.end_term(until).await {
                let priority = queue.priority(&key).unwrap_or_default();
                queue.done(&key);
                queue.add_with_priority(key, priority);
            }
        }
        queue.shutdown();
        Ok(())
    }
}

impl<K: Object, R, P, Ctx> Prepared<K, R, P, Ctx> {
    /// The controller's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Gives the term's lease up, if the term runs one (call once no reconcile runs).
    ///
    /// # Cancel safety
    /// Dropping the future aborts the lease's run (no release: the lease expires).
    pub(crate) async fn release(&mut self) {
        self.term.release().await;
    }

    /// Removes the handlers and stops the informers this controller started.
    ///
    /// # Cancel safety
    /// Dropping the future stops those informers without waiting for them.
    pub(crate) async fn stop(self) {
        self.watching.stop().await;
        tracing::info!(controller = %self.name, "controller stopped");
    }
}
