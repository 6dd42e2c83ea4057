//! [`Watching`]: the informers one `run` watches — its handlers on them, the
//! informers it started, the wait for their sync, and the stop.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::informer::SharedIndexInformer;
use crate::metrics::Metrics;
use crate::object::{Object, ObjectKey};
use crate::workqueue::WorkQueue;

use super::consistency::ConsistencyStore;
use super::error::ControllerError;
use super::event_filter::EventFilter;
use super::key_gate::KeyGate;
use super::source::{ActiveRegistration, InformerSource, KeyMapping, WatchSource};

/// The informers one `run` watches, with its handler on each (removed when
/// dropped) and the informers it started (stopped when dropped).
pub(crate) struct Watching {
    name: String,
    sources: Vec<Box<dyn WatchSource>>,
    /// `<controller>/<Kind>` and the handler, per source (the primary first).
    registrations: Vec<(String, ActiveRegistration)>,
    /// Stops the informers this run started; cancelled when dropped.
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
    informers: JoinSet<()>,
}

impl Watching {
    /// Registers the enqueueing handler of `primary` (its own keys, through `gate`
    /// if the term has one) and of every other source, before any informer this run
    /// starts runs, so no event is lost; exports the informers' counters to
    /// `metrics`.
    ///
    /// # Errors
    /// [`ControllerError::Informer`] if an informer has stopped.
    pub(crate) fn register<K: Object>(
        name: &str,
        primary: SharedIndexInformer<K>,
        filter: Option<EventFilter<K>>,
        mut sources: Vec<Box<dyn WatchSource>>,
        queue: &WorkQueue<ObjectKey>,
        gate: Option<&Arc<dyn KeyGate>>,
        metrics: Option<&Metrics>,
    ) -> Result<Self, ControllerError> {
        let primary = InformerSource::new(primary, KeyMapping::Own, false, filter);
        sources.insert(0, Box::new(primary));
        let mut registrations = Vec::with_capacity(sources.len());
        for (i, source) in sources.iter().enumerate() {
            let label = format!("{name}/{}", source.kind());
            if let Some(m) = metrics {
                source.export_stats(m.reflectors(), &label);
            }
            let gate = gate.filter(|_| i == 0);
            let registration =
                source
                    .register(queue, gate)
                    .map_err(|source| ControllerError::Informer {
                        informer: label.clone(),
                        source,
                    })?;
            registrations.push((label, registration));
        }
        let stop = CancellationToken::new();
        Ok(Watching {
            name: name.to_owned(),
            sources,
            registrations,
            _stop_on_drop: stop.clone().drop_guard(),
            stop,
            informers: JoinSet::new(),
        })
    }

    /// The store of the controller's own writes, recorded against the primary's
    /// cache and each owned informer's (not the caches of `watches` sources).
    pub(crate) fn consistency(&self) -> ConsistencyStore {
        let caches = self.sources.iter().enumerate();
        ConsistencyStore::new(
            caches
                .filter(|(i, s)| *i == 0 || s.is_owned())
                .map(|(_, s)| s.cache())
                .collect(),
        )
    }

    /// Starts the informers nobody started; this run stops them when it ends.
    pub(crate) fn start_informers(&mut self) {
        for (source, (label, _)) in self.sources.iter().zip(&self.registrations) {
            if let Some(run) = source.start(self.stop.clone()) {
                tracing::debug!(controller = %self.name, informer = %label, "starting informer");
                self.informers.spawn(run);
            }
        }
    }

    /// Waits until every handler has synced: `Ok(true)`; `Ok(false)` if `cancel`
    /// fired first. Woken by the informers and handlers, never polled.
    ///
    /// # Errors
    /// [`ControllerError::Informer`] if an informer stopped,
    /// [`ControllerError::CacheSyncTimeout`] after `timeout`.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes.
    pub(crate) async fn synced(
        &self,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<bool, ControllerError> {
        tracing::info!(controller = %self.name, "waiting for caches to sync");
        let all = async {
            for (label, r) in &self.registrations {
                r.wait_synced()
                    .await
                    .map_err(|source| ControllerError::Informer {
                        informer: label.clone(),
                        source,
                    })?;
            }
            Ok(())
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Ok(false),
            synced = tokio::time::timeout(timeout, all) => match synced {
                Ok(result) => result.map(|()| true),
                Err(_elapsed) => Err(ControllerError::CacheSyncTimeout {
                    timeout,
                    unsynced: self
                        .registrations
                        .iter()
                        .filter(|(_, r)| !r.has_synced())
                        .map(|(label, _)| label.clone())
                        .collect(),
                }),
            },
        }
    }

    /// Removes the handlers, then stops the informers this run started and waits
    /// for them.
    ///
    /// # Cancel safety
    /// Dropping the future stops those informers without waiting.
    pub(crate) async fn stop(mut self) {
        self.registrations.clear();
        self.stop.cancel();
        while let Some(joined) = self.informers.join_next().await {
            if let Err(e) = joined {
                tracing::error!(controller = %self.name, error = %e, "an informer task failed");
            }
        }
    }
}
