//! [`Controller::run`]: the informers' handlers, the workers, the terms of leadership
//! or shard membership, and the graceful shutdown.

use std::fmt::Display;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::leader_election::{LeaderElection, LeaderTransitions};
use crate::object::Object;
use crate::sharding::ShardGate;
use crate::workqueue::{QueueConfig, WorkQueue};

use super::action::Action;
use super::controller::Controller;
use super::error::ControllerError;
use super::error_policy::ErrorPolicy;
use super::request::Request;
use super::signal::Signals;
use super::source::{ActiveRegistration, InformerSource, KeyMapping, wait_for_sync};
use super::worker::{CurrentKey, WorkerShared, shut_down_workers, stop_workers};

/// How often the queue's unfinished-work gauges are refreshed (500 ms, as client-go's
/// `updateUnfinishedWorkLoop`).
const UNFINISHED_WORK_PERIOD: Duration = Duration::from_millis(500);

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
    /// Steps: registers a handler on every informer; starts those not started
    /// (unless told otherwise); waits for every handler to sync; starts
    /// `concurrency` workers; on shutdown, shuts the queue down, waits for in-flight
    /// reconciles up to the graceful-shutdown timeout, removes its handlers, stops
    /// the informers it started and returns.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector_core::controller::{Action, Controller, Request};
    ///
    /// // anyhow::Error (not a std Error) is a reconcile error like any other.
    /// async fn reconcile(req: Request<ConfigMap>, _: Arc<()>) -> anyhow::Result<Action> {
    ///     let cm = req.object.ok_or_else(|| anyhow::anyhow!("{} is gone", req.key))?;
    ///     anyhow::ensure!(cm.data.is_some(), "{} has no data", req.key);
    ///     Ok(Action::done())
    /// }
    /// # async fn f(client: kube::Client) -> Result<(), reflector_core::controller::ControllerError> {
    /// Controller::<ConfigMap>::for_kind(client).run(reconcile, Arc::new(())).await
    /// # }
    /// ```
    ///
    /// # Errors
    /// - [`ControllerError::Informer`] if an informer has stopped;
    /// - [`ControllerError::CacheSyncTimeout`] if the informers did not sync in time;
    /// - [`ControllerError::GracefulShutdownTimeout`] if reconciles had to be aborted;
    /// - [`ControllerError::Signal`] if the signal handlers cannot be installed;
    /// - [`ControllerError::LeaderElection`] if the election is already running.
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
        let shutdown = self.shutdown.take();
        let shard = self.shard.take();
        let ring_claimed = match &shard {
            Some(shard) => Some(self.check_sharded(&shard.ring)?),
            None => None,
        };
        let claimed = match &self.election {
            Some(e) => Some(e.claim().map_err(ControllerError::LeaderElection)?),
            None => None,
        };
        let mut signals = if self.shutdown_on_signal {
            Some(Signals::install().map_err(|e| ControllerError::Signal(Arc::new(e)))?)
        } else {
            None
        };
        // `cancel` starts the graceful shutdown of the loop below.
        let cancel = CancellationToken::new();
        let run = async {
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
                shutdown_on_signal: _,
                shutdown: _,
                election,
                shard: _,
                rescope: _,
                error_policy,
            } = self;
            let gate = shard
                .as_ref()
                .map(|s| Arc::new(ShardGate::new(&s.ring, metrics.as_ref().map(Into::into))));
            let cache = primary.indexer().clone();
            sources.insert(
                0,
                Box::new(InformerSource::new(primary, KeyMapping::Own, false)),
            );
            let labels: Vec<String> = sources
                .iter()
                .map(|s| format!("{name}/{}", s.kind()))
                .collect();

            let mut queue_config = QueueConfig::default().name(name.clone());
            if let Some(m) = &metrics {
                queue_config = queue_config.metrics(m);
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
            for (i, (s, label)) in sources.iter().zip(&labels).enumerate() {
                // The primary (first) passes its own keys through the shard's gate.
                let r = s
                    .register(&queue, gate.as_ref().filter(|_| i == 0))
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
                for (s, label) in sources.iter().zip(&labels) {
                    if let Some(run) = s.start(informer_cancel.clone()) {
                        tracing::debug!(controller = %name, informer = %label, "starting informer");
                        informer_tasks.spawn(run);
                    }
                }
            }

            // The election runs from the start (informers sync while following) and
            // stops only after the workers (so a release never precedes their end).
            let election_stop = CancellationToken::new();
            let mut election_task = JoinSet::new();
            if let Some(guard) = claimed {
                election_task.spawn(LeaderElection::run_claimed(guard, election_stop.clone()));
            }
            // A sharded controller's ring runs the same way: its lease is released
            // (on a graceful stop) only after the workers and the acknowledgements.
            if let (Some(guard), Some(gate)) = (ring_claimed, &gate) {
                let (ring, stop) = (gate.ring().clone(), election_stop.clone());
                election_task.spawn(async move { ring.run_claimed(guard, stop).await });
            }
            let ack_stop = CancellationToken::new();
            let mut ack_task = JoinSet::new();
            if let (Some(shard), Some(gate)) = (&shard, &gate) {
                ack_task.spawn((shard.acknowledge)(
                    Arc::clone(gate),
                    cache.clone(),
                    ack_stop.clone(),
                ));
            }
            // Terms follow the election, or a sharded controller's membership.
            let membership = election
                .as_ref()
                .or_else(|| gate.as_ref().map(|g| g.ring().membership()));

            let result = async {
                tracing::info!(controller = %name, "waiting for caches to sync");
                if !wait_for_sync(&registrations, &cancel, cache_sync_timeout).await? {
                    return Ok(());
                }
                tracing::info!(controller = %name, workers = concurrency, "starting workers");
                let shared = Arc::new(WorkerShared {
                    name: name.clone(),
                    queue: queue.clone(),
                    cache,
                    reconcile,
                    error_policy,
                    ctx,
                    recorder,
                    gate: gate.clone(),
                });
                let mut leadership = membership.map(LeaderElection::transitions);
                let mut tick = tokio::time::interval(UNFINISHED_WORK_PERIOD);
                // One term per leadership (one only without an election).
                loop {
                    if let Some(rx) = leadership.as_mut() {
                        tracing::info!(controller = %name, "waiting to lead");
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => return Ok(()),
                            () = rx.acquired() => {}
                        }
                        tracing::info!(controller = %name, "leading: reconciling every cached object");
                        for key in shared.cache.list_keys() {
                            queue.add(key);
                        }
                    }
                    let term = cancel.child_token();
                    let mut workers = JoinSet::new();
                    let mut slots: Vec<CurrentKey> = Vec::with_capacity(concurrency);
                    for _ in 0..concurrency {
                        let slot: CurrentKey = Arc::new(Mutex::new(None));
                        slots.push(Arc::clone(&slot));
                        workers.spawn(Arc::clone(&shared).worker(slot, term.clone()));
                    }
                    let lost = loop {
                        tokio::select! {
                            () = cancel.cancelled() => break false,
                            () = lost(leadership.as_mut()) => break true,
                            _ = tick.tick(), if metrics.is_some() => queue.update_unfinished_work(),
                            Some(joined) = workers.join_next() => {
                                // Workers only end on cancel or shutdown; log anything else.
                                if let Err(e) = joined {
                                    tracing::error!(controller = %name, error = %e, "a worker ended unexpectedly");
                                }
                            }
                        }
                    };
                    if !lost {
                        tracing::info!(controller = %name, "shutdown signal received, waiting for workers to finish");
                        queue.shutdown();
                        return shut_down_workers(&name, workers, &slots, graceful_shutdown_timeout).await;
                    }
                    term.cancel();
                    let until = membership.and_then(LeaderElection::takeover_bound);
                    tracing::warn!(controller = %name, "lost leadership: no new reconciles; waiting for those in flight");
                    let (_, keys) = stop_workers(&name, &mut workers, &slots, until).await;
                    for key in keys {
                        queue.done(&key);
                        queue.add(key);
                    }
                }
            }
            .await;

            ack_stop.cancel();
            while let Some(joined) = ack_task.join_next().await {
                if let Err(e) = joined {
                    tracing::error!(controller = %name, error = %e, "the drain acknowledgement task failed");
                }
            }
            election_stop.cancel();
            while let Some(joined) = election_task.join_next().await {
                if let Err(e) = joined {
                    tracing::error!(controller = %name, error = %e, "the leader election task failed");
                }
            }

            drop(registrations);
            informer_cancel.cancel();
            while let Some(joined) = informer_tasks.join_next().await {
                if let Err(e) = joined {
                    tracing::error!(controller = %name, error = %e, "an informer task failed");
                }
            }
            tracing::info!(controller = %name, "controller stopped");
            result
        };
        let mut run = std::pin::pin!(run);
        let stop = async {
            let trigger = async {
                match shutdown {
                    Some(trigger) => trigger.await,
                    None => std::future::pending().await,
                }
            };
            match signals.as_mut() {
                Some(signals) => tokio::select! {
                    () = trigger => {}
                    () = signals.recv() => {}
                },
                None => trigger.await,
            }
        };
        tokio::select! {
            biased;
            result = &mut run => return result,
            () = stop => cancel.cancel(),
        }
        run.await
    }
}

/// Resolves at the next loss of `leadership`; never without it.
///
/// # Cancel safety
/// Cancel-safe, as [`LeaderTransitions::lost`].
async fn lost(leadership: Option<&mut LeaderTransitions>) {
    match leadership {
        Some(t) => t.lost().await,
        None => std::future::pending().await,
    }
}
