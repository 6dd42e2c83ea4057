//! [`Controller`]: the builder and the `run` loop.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::informer::SharedIndexInformer;
use crate::lister::Lister;
use crate::metrics::Metrics;
use crate::object::{Object, ObjectKey};
use crate::workqueue::{QueueConfig, RateLimiter, WorkQueue, default_controller_rate_limiter};

use super::action::Action;
use super::error::ControllerError;
use super::owner_mapping::OwnerMapping;
use super::source::{ActiveRegistration, InformerSource, KeyMapping, WatchSource};
use super::worker::{CurrentKey, WorkerShared, current, worker};

/// 30 s, as controller-runtime's manager `GracefulShutdownTimeout`.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// 2 min, as controller-runtime's controller `CacheSyncTimeout`.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// How often `run` checks whether the informers have synced (100 ms, as client-go's
/// `syncedPollPeriod`).
const SYNC_POLL_PERIOD: Duration = Duration::from_millis(100);

/// How often the queue's unfinished-work gauges are refreshed (500 ms, as client-go's
/// `updateUnfinishedWorkLoop`).
const UNFINISHED_WORK_PERIOD: Duration = Duration::from_millis(500);

/// Reconciles the objects of one primary informer, with the keys its own events,
/// its owned children's and any watched informer's events map to, as
/// controller-runtime's `Controller` (built as its `Builder`: `For`, `Owns`,
/// `Watches`).
///
/// Semantics:
///
/// - **Keys, not objects.** `reconcile` gets an [`ObjectKey`] and reads the object
///   from the primary's lister ([`Controller::lister`]); a deleted object is
///   reconciled too, and the lister answers `None` for it.
/// - **After sync only.** No reconcile runs before every informer the controller
///   watches has synced and its handler has seen the initial list (events meanwhile
///   are queued).
/// - **One key, one worker.** `concurrency` workers share a
///   [`WorkQueue`], which never hands a key being reconciled to a second
///   worker, and re-queues it once if it changed meanwhile.
/// - **Requeues** follow the returned [`Action`]; errors go to the error policy
///   (usually [`backoff_on_error`](super::backoff_on_error): the key's exponential
///   backoff from the rate limiter, which a success resets).
/// - **Informers are shared, not owned.** `run` does not start the informers it was
///   given (controller-runtime's manager starts them, and other controllers may
///   share them) unless [`start_informers`](Self::start_informers) asks it to.
/// - **Shutdown.** When `cancel` fires, the queue shuts down and workers take no
///   more keys; reconciles in flight get the graceful-shutdown timeout to finish;
///   stragglers are aborted and logged.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::controller::{backoff_on_error, Action, Controller};
/// use reflector_core::informer::SharedIndexInformer;
/// use reflector_core::lister::Lister;
/// use reflector_core::listwatch::FakeSource;
/// use reflector_core::object::ObjectKey;
/// use reflector_core::store::Indexers;
/// use tokio_util::sync::CancellationToken;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("cannot reconcile")]
/// struct Error;
///
/// async fn reconcile(key: ObjectKey, deployments: Arc<Lister<Deployment>>) -> Result<Action, Error> {
///     match deployments.get_by_key(&key) {
///         Some(_deployment) => Ok(Action::requeue_after(Duration::from_secs(300))),
///         None => Ok(Action::done()), // deleted: clean up
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let deployments = SharedIndexInformer::new(FakeSource::<Deployment>::new(), Duration::ZERO, Indexers::new());
/// let config_maps = SharedIndexInformer::new(FakeSource::<ConfigMap>::new(), Duration::ZERO, Indexers::new());
/// let controller = Controller::new(deployments)
///     .owns(config_maps)
///     .concurrency(2)
///     .start_informers(true);
/// let lister = Arc::new(controller.lister());
/// let cancel = CancellationToken::new();
/// cancel.cancel(); // stop at once, for the example
/// controller.run(reconcile, backoff_on_error, lister, cancel).await.unwrap();
/// # }
/// ```
pub struct Controller<K: Object> {
    name: String,
    primary: SharedIndexInformer<K>,
    sources: Vec<Box<dyn WatchSource>>,
    concurrency: usize,
    rate_limiter: Arc<dyn RateLimiter<ObjectKey>>,
    metrics: Option<Metrics>,
    graceful_shutdown_timeout: Duration,
    cache_sync_timeout: Duration,
    start_informers: bool,
}

impl<K: Object> std::fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field(
                "sources",
                &self.sources.iter().map(|s| s.kind()).collect::<Vec<_>>(),
            )
            .field("concurrency", &self.concurrency)
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field("start_informers", &self.start_informers)
            .finish_non_exhaustive()
    }
}

impl<K> Controller<K>
where
    K: Object,
    K::DynamicType: Default,
    K::Scope: 'static,
{
    /// A controller of `primary`'s objects, with controller-runtime's defaults: named
    /// after the kind in lower case, one worker, [`default_controller_rate_limiter`],
    /// no metrics, 30 s graceful shutdown, 2 min cache-sync timeout, informers
    /// started by someone else.
    #[must_use]
    pub fn new(primary: SharedIndexInformer<K>) -> Self {
        let name = K::kind(&K::DynamicType::default()).to_lowercase();
        Controller {
            primary,
            sources: Vec::new(),
            concurrency: 1,
            rate_limiter: Arc::new(default_controller_rate_limiter()),
            metrics: None,
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            start_informers: false,
            name,
        }
    }

    /// Reconciles the controller owner of each child of `children` (through the
    /// child's `ownerReferences` whose group and kind are `K`'s and which is marked
    /// `controller: true`), on the child's add, update (old and new owner) and
    /// delete. See [`OwnerMapping`].
    #[must_use]
    pub fn owns<C: Object>(self, children: SharedIndexInformer<C>) -> Self {
        self.owns_with(children, OwnerMapping::for_owner::<K>())
    }

    /// As [`owns`](Self::owns) with another mapping, e.g.
    /// `OwnerMapping::for_owner::<K>().every_owner()`.
    #[must_use]
    pub fn owns_with<C: Object>(
        self,
        children: SharedIndexInformer<C>,
        mapping: OwnerMapping,
    ) -> Self {
        self.watches(children, move |c: &C| mapping.owner_keys(c))
    }

    /// Reconciles the keys `mapper` returns for each object of `informer`, on its add,
    /// update (old and new state) and delete (its last known state), as
    /// controller-runtime's `Watches` with `EnqueueRequestsFromMapFunc`.
    #[must_use]
    pub fn watches<O: Object>(
        mut self,
        informer: SharedIndexInformer<O>,
        mapper: impl Fn(&O) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.sources.push(Box::new(InformerSource::new(
            informer,
            KeyMapping::Mapped(Arc::new(mapper)),
        )));
        self
    }
}

impl<K: Object> Controller<K> {
    /// The controller's name: labels its metrics and logs and names its queue.
    /// Default: the primary kind in lower case, as controller-runtime's builder.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How many keys are reconciled at once (at least 1). Default 1, as
    /// controller-runtime's `MaxConcurrentReconciles`.
    #[must_use]
    pub fn concurrency(mut self, workers: usize) -> Self {
        self.concurrency = workers.max(1);
        self
    }

    /// The rate limiter behind requeues and error backoff. Default:
    /// [`default_controller_rate_limiter`] (per-key 5 ms doubling to 1000 s, and an
    /// overall 10 qps / burst 100 bucket), as controller-runtime's.
    #[must_use]
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<ObjectKey>>) -> Self {
        self.rate_limiter = limiter;
        self
    }

    /// Reports to `metrics` (shared by every controller of a process; register it
    /// once). Default: no metrics.
    #[must_use]
    pub fn metrics(mut self, metrics: &Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// How long in-flight reconciles may run after `cancel` fires. Default 30 s, as
    /// controller-runtime's `GracefulShutdownTimeout`.
    #[must_use]
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// How long `run` waits for the informers to sync before it gives up. Default
    /// 2 min, as controller-runtime's `CacheSyncTimeout`.
    #[must_use]
    pub fn cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = timeout;
        self
    }

    /// Whether `run` starts the watched informers that have not started (and stops
    /// those it started when it returns). Default false: informers are shared and
    /// started by their owner (an [`InformerFactory`](crate::informer::InformerFactory)
    /// or the caller).
    #[must_use]
    pub fn start_informers(mut self, start: bool) -> Self {
        self.start_informers = start;
        self
    }

    /// A lister over the primary informer's cache: what `reconcile` reads.
    #[must_use]
    pub fn lister(&self) -> Lister<K> {
        self.primary.lister()
    }

    /// Runs the controller until `cancel` fires.
    ///
    /// - `reconcile(key, ctx)` makes the world match the object at `key` (absent:
    ///   deleted) and answers an [`Action`]. It may run concurrently for different
    ///   keys, never for the same key.
    /// - `error_policy(key, error, ctx)` answers what to do after `reconcile` failed:
    ///   usually [`backoff_on_error`](super::backoff_on_error) (per-key exponential
    ///   backoff); [`Action::done`] for a terminal error. Every error is logged and
    ///   counted. A panicking `reconcile` counts as an error and backs off.
    ///
    /// Steps: registers a handler on every informer; starts those not started if
    /// [`start_informers`](Self::start_informers); waits for every handler to sync;
    /// starts `concurrency` workers; on `cancel`, shuts the queue down, waits for
    /// in-flight reconciles up to the graceful-shutdown timeout, removes its
    /// handlers, stops the informers it started and returns.
    ///
    /// # Errors
    /// - [`ControllerError::Informer`] if an informer has stopped;
    /// - [`ControllerError::CacheSyncTimeout`] if the informers did not sync in time;
    /// - [`ControllerError::GracefulShutdownTimeout`] if reconciles had to be aborted.
    ///
    /// Cancelling before the informers synced is a clean stop (`Ok`).
    ///
    /// # Cancel safety
    /// Cancelling the token is the clean stop. Dropping the future instead aborts
    /// the workers and the informers it started at once and removes its handlers.
    pub async fn run<Ctx, E, R, Fut, P>(
        self,
        reconcile: R,
        error_policy: P,
        ctx: Arc<Ctx>,
        cancel: CancellationToken,
    ) -> Result<(), ControllerError>
    where
        R: Fn(ObjectKey, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + 'static,
        P: Fn(&ObjectKey, &E, Arc<Ctx>) -> Action + Send + Sync + 'static,
        Ctx: Send + Sync + 'static,
    {
        let Controller {
            name,
            primary,
            mut sources,
            concurrency,
            rate_limiter,
            metrics,
            graceful_shutdown_timeout,
            cache_sync_timeout,
            start_informers,
        } = self;
        sources.insert(0, Box::new(InformerSource::new(primary, KeyMapping::Own)));
        let labels: Vec<String> = sources
            .iter()
            .map(|s| format!("{name}/{}", s.kind()))
            .collect();

        let mut queue_config = QueueConfig::default().name(name.clone());
        if let Some(m) = &metrics {
            queue_config = queue_config.metrics(m.workqueue().queue_metrics(&name));
        }
        let queue = WorkQueue::with_config(rate_limiter, queue_config);
        let recorder = metrics
            .as_ref()
            .map(|m| m.reconcile().init_controller(&name, concurrency));
        if let Some(m) = &metrics {
            for (s, label) in sources.iter().zip(&labels) {
                s.export_stats(m.reflectors(), label);
            }
        }

        // Handlers first, so no event between sync and workers is lost.
        let mut registrations: Vec<(String, ActiveRegistration)> = Vec::new();
        for (s, label) in sources.iter().zip(&labels) {
            let r = s
                .register(&queue)
                .map_err(|source| ControllerError::Informer {
                    informer: label.clone(),
                    source,
                })?;
            registrations.push((label.clone(), r));
        }

        // Informers this run started: stopped by `informer_cancel` (a child of
        // `cancel`, also cancelled when this future is dropped).
        let informer_cancel = cancel.child_token();
        let _stop_informers = informer_cancel.clone().drop_guard();
        let mut informer_tasks = JoinSet::new();
        if start_informers {
            for (s, label) in sources
                .iter()
                .zip(&labels)
                .filter(|(s, _)| !s.has_started())
            {
                tracing::debug!(controller = %name, informer = %label, "starting informer");
                informer_tasks.spawn(s.run(informer_cancel.clone()));
            }
        }

        let result = async {
            tracing::info!(controller = %name, "waiting for caches to sync");
            if !wait_for_sync(&registrations, &cancel, cache_sync_timeout).await? {
                return Ok(());
            }
            tracing::info!(controller = %name, workers = concurrency, "starting workers");
            let shared = Arc::new(WorkerShared {
                name: name.clone(),
                queue: queue.clone(),
                reconcile,
                error_policy,
                ctx,
                recorder,
            });
            let mut workers = JoinSet::new();
            let mut slots: Vec<CurrentKey> = Vec::with_capacity(concurrency);
            for _ in 0..concurrency {
                let slot: CurrentKey = Arc::new(Mutex::new(None));
                slots.push(Arc::clone(&slot));
                workers.spawn(worker(Arc::clone(&shared), slot, cancel.clone()));
            }
            drop(shared);

            let mut tick = tokio::time::interval(UNFINISHED_WORK_PERIOD);
            loop {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    _ = tick.tick(), if metrics.is_some() => queue.update_unfinished_work(),
                    Some(joined) = workers.join_next() => {
                        // Workers only end on cancel or shutdown; log anything else.
                        if let Err(e) = joined {
                            tracing::error!(controller = %name, error = %e, "a worker ended unexpectedly");
                        }
                    }
                }
            }
            tracing::info!(controller = %name, "shutdown signal received, waiting for workers to finish");
            queue.shut_down();
            shut_down_workers(&name, workers, &slots, graceful_shutdown_timeout).await
        }
        .await;

        drop(registrations);
        informer_cancel.cancel();
        while let Some(joined) = informer_tasks.join_next().await {
            if let Err(e) = joined {
                tracing::error!(controller = %name, error = %e, "an informer task failed");
            }
        }
        tracing::info!(controller = %name, "controller stopped");
        result
    }
}

/// Waits until every handler has synced: `Ok(true)`; `Ok(false)` if `cancel`
/// fired first.
///
/// # Cancel safety
/// Cancel-safe: it only polls.
async fn wait_for_sync(
    registrations: &[(String, ActiveRegistration)],
    cancel: &CancellationToken,
    timeout: Duration,
) -> Result<bool, ControllerError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut tick = tokio::time::interval(SYNC_POLL_PERIOD);
    loop {
        if registrations.iter().all(|(_, r)| r.has_synced()) {
            return Ok(true);
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Ok(false),
            () = tokio::time::sleep_until(deadline) => {
                return Err(ControllerError::CacheSyncTimeout {
                    timeout,
                    unsynced: registrations
                        .iter()
                        .filter(|(_, r)| !r.has_synced())
                        .map(|(label, _)| label.clone())
                        .collect(),
                });
            }
            _ = tick.tick() => {}
        }
    }
}

/// Lets the workers finish their reconcile within `timeout`, then aborts the rest.
///
/// # Cancel safety
/// Dropping the future drops the workers (aborting them).
async fn shut_down_workers(
    name: &str,
    mut workers: JoinSet<()>,
    slots: &[CurrentKey],
    timeout: Duration,
) -> Result<(), ControllerError> {
    let drained = tokio::time::timeout(timeout, async {
        while let Some(joined) = workers.join_next().await {
            if let Err(e) = joined {
                tracing::error!(controller = %name, error = %e, "a worker ended unexpectedly");
            }
        }
    })
    .await;
    if drained.is_ok() {
        return Ok(());
    }
    let aborted = workers.len();
    for key in slots.iter().filter_map(current) {
        tracing::error!(controller = %name, %key, ?timeout,
            "reconcile still running after the graceful shutdown timeout; aborting it");
    }
    workers.abort_all();
    while workers.join_next().await.is_some() {}
    Err(ControllerError::GracefulShutdownTimeout { timeout, aborted })
}
