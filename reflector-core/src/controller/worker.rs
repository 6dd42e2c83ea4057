//! The worker loop: take a key, reconcile it, tell the queue what comes next, as
//! controller-runtime's `processNextWorkItem` and `reconcileHandler`.

use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::{ControllerRecorder, ReconcileResult};
use crate::object::{Object, ObjectKey};
use crate::store::Indexer;
use crate::workqueue::WorkQueue;

use super::action::{Action, ActionKind};
use super::consistency::{ConsistencyStore, MAX_STALE_WAIT, Readiness};
use super::error_policy::ErrorPolicy;
use super::key_gate::KeyGate;
use super::request::Request;
use super::workers::{CurrentKey, set_current};

/// What every worker of one `run` shares.
pub(crate) struct WorkerShared<K: Object, R, P, Ctx> {
    pub(crate) name: String,
    pub(crate) queue: WorkQueue<ObjectKey>,
    /// The primary informer's cache: each request carries the object read from it.
    pub(crate) cache: Indexer<K>,
    pub(crate) reconcile: R,
    pub(crate) error_policy: P,
    pub(crate) ctx: Arc<Ctx>,
    pub(crate) recorder: Option<ControllerRecorder>,
    /// The term's gate of the primary's keys, if it has one: asked before each
    /// reconcile.
    pub(crate) gate: Option<Arc<dyn KeyGate>>,
    /// The controller's own writes, per primary: a key whose caches have not
    /// reached them is deferred. `None` with `read_your_writes(false)`.
    pub(crate) consistency: Option<Arc<ConsistencyStore>>,
}

/// Counts a worker in `controller_runtime_active_workers` while alive, so an
/// aborted reconcile is counted out too.
struct ActiveGuard<'a>(Option<&'a ControllerRecorder>);

impl<'a> ActiveGuard<'a> {
    fn enter(recorder: Option<&'a ControllerRecorder>) -> Self {
        if let Some(r) = recorder {
            r.active_workers_add(1);
        }
        ActiveGuard(recorder)
    }
}

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.0 {
            r.active_workers_add(-1);
        }
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "<non-string panic payload>"
    }
}

/// A worker's loop and one reconcile, for a reconcile function `R` whose futures
/// give `Result<Action, E>` and an error policy `P` for `E`.
impl<K, R, Fut, E, P, Ctx> WorkerShared<K, R, P, Ctx>
where
    K: Object,
    R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Display + 'static,
    P: ErrorPolicy<K, E, Ctx>,
    Ctx: Send + Sync + 'static,
{
    /// Takes keys until `cancel` fires or the queue shuts down.
    ///
    /// # Cancel safety
    /// Cancelling `cancel` stops the loop between keys; dropping the future mid-reconcile
    /// drops the reconcile and leaves the key marked as processing (the controller only
    /// does that after shutting the queue down).
    pub(crate) async fn worker(self: Arc<Self>, slot: CurrentKey, cancel: CancellationToken) {
        loop {
            let Some(key) = self.queue.get_unless_cancelled(&cancel).await else {
                return;
            };
            set_current(&slot, Some(key.clone()));
            if self.deferred(&key) {
                set_current(&slot, None);
                continue;
            }
            // Read after the readiness check: the cache holds what its version says.
            let cached = self.cache.get(&key);
            if let Some(consistency) = &self.consistency {
                let uid = cached
                    .as_deref()
                    .map(|o| o.meta().uid.as_deref().unwrap_or(""));
                consistency.clear(&key, uid);
            }
            let meta = cached.as_deref().map(|o| o.meta());
            match self.gate.as_deref().map(|gate| gate.begin(&key, meta)) {
                None => {
                    self.process(&key, cached).await;
                }
                Some(Some(pass)) => {
                    if !self.process(&key, cached).await {
                        pass.settled();
                    }
                }
                Some(None) => {
                    // Not to be reconciled here (the gate said so).
                    self.queue.forget(&key);
                    self.queue.done(&key);
                }
            }
            set_current(&slot, None);
        }
    }

    /// Whether the reconcile of `key` waits for a cache to reach the controller's
    /// own write (then the key is done for now, and queued again when that cache
    /// reaches it — woken by the informer, holding no worker — or after
    /// [`MAX_STALE_WAIT`] at the latest). Counted in `stale_sync_skips_total`.
    fn deferred(&self, key: &ObjectKey) -> bool {
        let Some(consistency) = &self.consistency else {
            return false;
        };
        let Readiness::Wait {
            version,
            target,
            park,
        } = consistency.ensure_ready(key)
        else {
            return false;
        };
        tracing::debug!(controller = %self.name, %key, target, "cache behind the controller's last write; reconcile deferred");
        if park {
            // Queued while processing, the key is handed out again after `done`.
            let (queue, parked) = (self.queue.clone(), key.clone());
            let priority = queue.priority(key).unwrap_or_default();
            version.wake_at(
                target,
                Box::new(move || queue.add_with_priority(parked, priority)),
            );
            self.queue.add_after(key.clone(), MAX_STALE_WAIT);
        }
        if let Some(r) = &self.recorder {
            r.stale_sync_skipped();
        }
        self.queue.done(key);
        true
    }

    /// Reconciles one key with its object as `cached` when the worker took it, and
    /// files it back in the queue; answers whether it was queued again.
    async fn process(&self, key: &ObjectKey, cached: Option<Arc<K>>) -> bool {
        let recorder = self.recorder.as_ref();
        let active = ActiveGuard::enter(recorder);
        let queue = &self.queue;
        let started = Instant::now();
        // The error policy gets what the reconcile saw (two reference counts).
        let request = Request::recorded(key.clone(), cached, self.consistency.clone());
        let seen = request.clone();
        let outcome =
            AssertUnwindSafe(async { (self.reconcile)(request, Arc::clone(&self.ctx)).await })
                .catch_unwind()
                .await;
        let elapsed = started.elapsed();
        let (result, requeued) = match outcome {
            Ok(Ok(action)) => match action.kind() {
                ActionKind::Done => {
                    queue.forget(key);
                    (ReconcileResult::Success, false)
                }
                ActionKind::RequeueAfter(delay) => {
                    queue.forget(key);
                    queue.add_after(key.clone(), delay);
                    (ReconcileResult::RequeueAfter, true)
                }
                ActionKind::RequeueRateLimited => {
                    queue.add_rate_limited(key.clone());
                    (ReconcileResult::Requeue, true)
                }
            },
            Ok(Err(err)) => {
                tracing::error!(controller = %self.name, %key, error = %err, "reconciler error");
                let policy = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    self.error_policy.on_error(&seen, &err, &self.ctx)
                }));
                let action = policy.unwrap_or_else(|payload| {
                    tracing::error!(controller = %self.name, %key,
                        panic = panic_message(payload.as_ref()),
                        "error policy panicked; requeueing with backoff");
                    Action::requeue_rate_limited()
                });
                let requeued = match action.kind() {
                    ActionKind::Done => {
                        if let Some(r) = recorder {
                            r.terminal_error();
                        }
                        false
                    }
                    ActionKind::RequeueAfter(delay) => {
                        queue.add_after(key.clone(), delay);
                        true
                    }
                    ActionKind::RequeueRateLimited => {
                        queue.add_rate_limited(key.clone());
                        true
                    }
                };
                (ReconcileResult::Error, requeued)
            }
            Err(payload) => {
                tracing::error!(controller = %self.name, %key,
                    panic = panic_message(payload.as_ref()),
                    "reconciler panicked; requeueing with backoff");
                if let Some(r) = recorder {
                    r.panicked();
                }
                queue.add_rate_limited(key.clone());
                (ReconcileResult::Error, true)
            }
        };
        if let Some(r) = recorder {
            r.reconciled(result, elapsed);
        }
        queue.done(key);
        drop(active);
        requeued
    }
}
