//! [`Workers`]: the workers of one term, and how they end — drained within the
//! graceful-shutdown timeout, or stopped when the term is lost.

use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::object::ObjectKey;
use crate::workqueue::WorkQueue;

use super::error::ControllerError;

/// How often the queue's unfinished-work gauges are refreshed (500 ms, as client-go's
/// `updateUnfinishedWorkLoop`).
const UNFINISHED_WORK_PERIOD: Duration = Duration::from_millis(500);

/// The key a worker is reconciling, for the logs of an abort; guarded by its own
/// mutex, held only to read or write the slot.
pub(crate) type CurrentKey = Arc<Mutex<Option<ObjectKey>>>;

pub(crate) fn set_current(slot: &CurrentKey, key: Option<ObjectKey>) {
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = key;
}

fn current(slot: &CurrentKey) -> Option<ObjectKey> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// The workers of one term; dropping it aborts them.
pub(crate) struct Workers {
    name: String,
    tasks: JoinSet<()>,
    /// The key each worker is reconciling.
    slots: Vec<CurrentKey>,
    /// Tells the workers to take no more keys (a child of the run's cancellation).
    stop: CancellationToken,
}

impl Workers {
    /// Starts `concurrency` workers of controller `name`, each the future `worker`
    /// makes from its key slot and its stop token (fired by `stop_until`, or by
    /// `cancel`).
    pub(crate) fn spawn<W, F>(
        name: &str,
        concurrency: usize,
        cancel: &CancellationToken,
        worker: W,
    ) -> Self
    where
        W: Fn(CurrentKey, CancellationToken) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let stop = cancel.child_token();
        let mut tasks = JoinSet::new();
        let slots: Vec<CurrentKey> = (0..concurrency).map(|_| CurrentKey::default()).collect();
        for slot in &slots {
            tasks.spawn(worker(Arc::clone(slot), stop.clone()));
        }
        Workers {
            name: name.to_owned(),
            tasks,
            slots,
            stop,
        }
    }

    /// Tends the workers while they run, never returning: logs any that ends (they
    /// end only when told to) and refreshes `queue`'s unfinished-work gauges if
    /// `gauges`.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes.
    pub(crate) async fn tend(&mut self, queue: &WorkQueue<ObjectKey>, gauges: bool) -> Infallible {
        let mut tick = tokio::time::interval(UNFINISHED_WORK_PERIOD);
        loop {
            tokio::select! {
                _ = tick.tick(), if gauges => queue.update_unfinished_work(),
                Some(joined) = self.tasks.join_next() => {
                    if let Err(e) = joined {
                        tracing::error!(controller = %self.name, error = %e, "a worker ended unexpectedly");
                    }
                }
                // Every worker ended (told to stop, as on a graceful shutdown that is
                // racing this) and no gauge to refresh: nothing is left to tend.
                else => std::future::pending::<()>().await,
            }
        }
    }

    /// The graceful end (the queue shut down already): lets the reconciles in flight
    /// finish within `timeout`, then aborts the rest; sooner if `lost` resolves
    /// first (the term's lease was lost meanwhile), at the instant it answers (the
    /// earliest another replica could take over; `None`: no sooner).
    ///
    /// # Errors
    /// [`ControllerError::GracefulShutdownTimeout`] if some had to be aborted.
    ///
    /// # Cancel safety
    /// Dropping the future aborts the workers.
    pub(crate) async fn shut_down(
        mut self,
        timeout: Duration,
        lost: impl Future<Output = Option<Instant>>,
    ) -> Result<(), ControllerError> {
        tracing::info!(controller = %self.name, "shutdown signal received, waiting for workers to finish");
        let deadline = Instant::now() + timeout;
        let limit = async {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                until = lost => match until {
                    Some(until) => tokio::time::sleep_until(until.min(deadline)).await,
                    None => tokio::time::sleep_until(deadline).await,
                },
            }
        };
        match self.stop_until(limit).await {
            (0, _) => Ok(()),
            (aborted, _) => Err(ControllerError::GracefulShutdownTimeout { timeout, aborted }),
        }
    }

    /// The end of a lost term: no worker takes another key; the reconciles in
    /// flight may finish until `until` (`None`: no limit), then are aborted. Answers
    /// the keys of the aborted reconciles.
    ///
    /// # Cancel safety
    /// Dropping the future aborts the workers.
    pub(crate) async fn end_term(mut self, until: Option<Instant>) -> Vec<ObjectKey> {
        let limit = async {
            match until {
                Some(until) => tokio::time::sleep_until(until).await,
                None => std::future::pending().await,
            }
        };
        self.stop_until(limit).await.1
    }

    /// Tells the workers to stop, waits for them until `limit` resolves, aborts the
    /// rest, and answers how many were aborted and the keys they were reconciling.
    ///
    /// # Cancel safety
    /// Dropping the future leaves the workers to `self`'s drop (aborted).
    async fn stop_until(&mut self, limit: impl Future<Output = ()>) -> (usize, Vec<ObjectKey>) {
        self.stop.cancel();
        let name = &self.name;
        let tasks = &mut self.tasks;
        let drain = async {
            while let Some(joined) = tasks.join_next().await {
                if let Err(e) = joined {
                    tracing::error!(controller = %name, error = %e, "a worker ended unexpectedly");
                }
            }
        };
        let drained = tokio::select! {
            biased;
            () = drain => true,
            () = limit => false,
        };
        if drained {
            return (0, Vec::new());
        }
        let aborted = self.tasks.len();
        let keys: Vec<ObjectKey> = self.slots.iter().filter_map(current).collect();
        for key in &keys {
            tracing::error!(controller = %self.name, %key, "reconcile still running at its deadline; aborting it");
        }
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        (aborted, keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tending workers that have all ended (the stop token fired them, as when a
    /// graceful shutdown races the tending) with no gauges to refresh waits; it
    /// never returns nor panics.
    #[tokio::test(start_paused = true)]
    async fn tending_workers_that_all_ended_waits() {
        let cancel = CancellationToken::new();
        let mut workers = Workers::spawn(
            "test",
            2,
            &cancel,
            |_, stop: CancellationToken| async move {
                stop.cancelled().await;
            },
        );
        cancel.cancel();
        let queue = WorkQueue::<ObjectKey>::new();
        let tended =
            tokio::time::timeout(Duration::from_secs(1), workers.tend(&queue, false)).await;
        assert!(tended.is_err(), "tend returned");
        assert!(workers.tasks.is_empty(), "the ended workers were joined");
    }
}
