//! The recorder's one background task: drains the buffer, folds events into their
//! series, and writes Events to the API server.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as EventObject;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::metrics::{DropReason, EventMetrics};
use super::series::{Series, SeriesCache, SeriesKey, Written};
use super::{Event, EventError};

/// How many buffered messages the writer takes at once; events of one series among
/// them become one write.
const BATCH: usize = 256;

/// What the recorder's handles send to the writer.
#[derive(Debug)]
pub(crate) enum Command {
    /// One occurrence of an event about `regarding`.
    Publish(Box<(Event, ObjectReference)>),
    /// Answer once everything sent before has been written (or attempted).
    Flush(oneshot::Sender<()>),
}

/// The writer task's settings and state.
pub(crate) struct Writer {
    pub(crate) client: kube::Client,
    pub(crate) series: SeriesCache,
    pub(crate) metrics: EventMetrics,
    pub(crate) controller: String,
    pub(crate) retry_interval: Duration,
    pub(crate) max_tries: u32,
}

impl Writer {
    /// Runs until every handle is dropped (then writes what is left, once) or `stop`
    /// fires (then stops at once).
    pub(crate) async fn run(mut self, mut rx: mpsc::Receiver<Command>, stop: CancellationToken) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut retry_at: Option<Instant> = None;
        loop {
            let received = tokio::select! {
                biased;
                () = stop.cancelled() => return,
                n = rx.recv_many(&mut batch, BATCH) => Some(n),
                () = sleep_until(retry_at) => None,
            };
            let mut flushes = Vec::new();
            let closed = received == Some(0);
            for command in batch.drain(..) {
                match command {
                    Command::Publish(published) => {
                        let (event, regarding) = *published;
                        self.series
                            .observe(event, regarding, Instant::now(), Timestamp::now());
                    }
                    Command::Flush(ack) => flushes.push(ack),
                }
            }
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                next = self.write_dirty(closed) => retry_at = next,
            }
            for ack in flushes {
                // The flusher may have stopped waiting; nothing to tell it then.
                let _ = ack.send(());
            }
            if closed {
                return;
            }
        }
    }

    /// Writes every series the server lacks something of. Returns when to retry those
    /// that met connection errors (none when `last`: the writer is stopping).
    async fn write_dirty(&mut self, last: bool) -> Option<Instant> {
        let mut retry = false;
        for key in self.series.dirty() {
            let Some(series) = self.series.get_mut(&key) else {
                continue;
            };
            let outcome = write(&self.client, series).await;
            retry |= self.settle(&key, outcome, last);
        }
        (retry && !last).then(|| Instant::now() + self.retry_interval)
    }

    /// Books the outcome of one write; `true` if it is to be retried.
    fn settle(&mut self, key: &SeriesKey, outcome: Result<(), EventError>, last: bool) -> bool {
        let Some(series) = self.series.get_mut(key) else {
            return false;
        };
        let error = match outcome {
            Ok(()) => {
                series.written = Written::Count(series.count);
                series.attempts = 0;
                return false;
            }
            Err(error) => error,
        };
        series.attempts += 1;
        let unwritten = series.unwritten();
        let created = series.written != Written::No;
        if error.is_retryable() && !last && series.attempts < self.max_tries {
            tracing::debug!(error = %error, cause = ?std::error::Error::source(&error), attempt = series.attempts, "event write failed; will retry");
            return true;
        }
        let reason = if error.is_retryable() {
            DropReason::RetriesExhausted
        } else {
            DropReason::Rejected
        };
        tracing::warn!(
            error = %error,
            cause = ?std::error::Error::source(&error),
            dropped = unwritten,
            "event not written; dropping it"
        );
        self.metrics.dropped(&self.controller, reason, unwritten);
        if created {
            // Keep the series (later occurrences patch it), as if written.
            series.written = Written::Count(series.count);
            series.attempts = 0;
        } else {
            // Never created: the next occurrence starts a new Event.
            self.series.remove(key);
        }
        false
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Creates the Event, or patches its series; a series whose Event is gone on the
/// server (404) is created again, as client-go does.
async fn write(client: &kube::Client, series: &mut Series) -> Result<(), EventError> {
    let namespace = series.object.metadata.namespace.clone().unwrap_or_default();
    let name = series.object.metadata.name.clone().unwrap_or_default();
    let api: Api<EventObject> = Api::namespaced(client.clone(), &namespace);
    if series.written != Written::No {
        let patch = serde_json::json!({ "series": series.series() });
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                series.written = Written::No;
            }
            Err(source) => return Err(EventError::UpdateSeries { name, source }),
        }
    }
    api.create(&PostParams::default(), &series.to_create())
        .await
        .map(drop)
        .map_err(|source| EventError::Create { name, source })
}
