//! [`Recorder`]: publishes Events without ever making the caller wait.

use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::event::length_problem;
use super::metrics::{DropReason, EventMetrics};
use super::reference::reference_to;
use super::series::SeriesCache;
use super::spam_filter::SpamFilter;
use super::writer::{Command, Writer};
use super::{Event, EventError, RecorderConfig};

/// The longest `reportingController`/`reportingInstance` the API server accepts.
const REPORTER_LIMIT: usize = 128;

/// Writes `events.k8s.io/v1` Events about objects, with client-go's correlation:
///
/// - **series**: an event with the same type, reason and action as one published
///   within the [series window](RecorderConfig::series_window), about the same
///   regarding and related references, does not make a new Event object: the existing
///   one's `series.count` and `series.lastObservedTime` grow (a JSON merge patch), as
///   client-go's `tools/events`. Its key is client-go's `eventKey`: the note is not in
///   it (a repeat with another note joins the series, and the Event keeps its first
///   note), and the references are compared whole, so the same object at a new
///   `resourceVersion` starts a new Event;
/// - **spam filter**: each object has a token bucket (client-go's
///   `EventSourceObjectSpamFilter`: a burst of 25, then one per 5 minutes); an event
///   finding it empty is dropped and counted;
/// - **never blocking**: [`publish`](Self::publish) validates the event, runs the spam
///   filter and puts it in a bounded buffer, then returns; a full buffer drops and
///   counts. One background task, owned by the recorder, drains the buffer, folds the
///   events it finds into their series (so a burst costs one write per Event, not
///   one per occurrence), and writes.
///
/// Drops are counted in `reflector_events_dropped_total{controller,reason}`, `reason`
/// one of `spam_filter`, `buffer_full`, `rejected` (the server answered with an error;
/// not retried, as client-go) and `retries_exhausted` (connection errors outlasted the
/// [retries](RecorderConfig::retries)); register it with
/// [`RecorderConfig::metrics`]. Write errors are logged with `tracing`.
///
/// An Event is named `<regarding name>.<unique hex suffix>` (client-go's scheme), lives
/// in the regarding object's namespace (`default` for a cluster-scoped object) and
/// carries `eventTime`, `reportingController` and `reportingInstance`. Its `regarding`
/// is the object's reference as client-go's `GetReference` makes it (apiVersion, kind,
/// namespace, name, uid and `resourceVersion`) when published with
/// [`publish`](Self::publish), or the reference given to
/// [`publish_ref`](Self::publish_ref) as it is.
///
/// Unlike client-go's `tools/events`, which writes a series at its second occurrence,
/// then only every 30 minutes (a heartbeat that keeps the Event from the server's TTL)
/// and once when it ends, every occurrence that passes the spam filter reaches the
/// server (bursts folded into one patch): `series.count` is current within a write,
/// and a continuing series is re-written each time one of its occurrences gets a
/// spam-filter token (one per 5 minutes of its object), far more often than the
/// server's one-hour Event TTL, so there is no separate heartbeat. `tools/record`'s
/// `EventAggregator` (core `v1` Events differing only in their note, combined into
/// one) belongs to the older Events API and is not done. The spam filter runs before
/// the buffer, so an event dropped for a full buffer has used its object's token.
///
/// The handle is cheap to clone. The writer task stops when the last clone is dropped
/// (after one last attempt at what is buffered) or when the configured
/// [cancellation token](RecorderConfig::cancel) fires (at once).
///
/// # Example
/// ```no_run
/// # async fn f(client: kube::Client, cm: k8s_openapi::api::core::v1::ConfigMap) -> Result<(), reflector::events::EventError> {
/// use reflector::events::{Event, Recorder};
///
/// let recorder = Recorder::new(client, "widget-controller")?;
/// recorder.publish(&cm, Event::normal("Reconciled", "Reconcile").note("data is current"))?;
/// recorder.flush().await?; // only to wait for the write, e.g. in tests
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
}

/// What the handles share. Dropping the last handle drops `tx`, which ends the writer.
struct Inner {
    tx: mpsc::Sender<Command>,
    spam: SpamFilter,
    metrics: EventMetrics,
    controller: String,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("reporting_controller", &self.inner.controller)
            .field("stopped", &self.inner.tx.is_closed())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder reporting as `reporting_controller` (e.g. `widget-controller`; at
    /// most 128 characters), with the [default configuration](RecorderConfig). Must be
    /// called inside a tokio runtime: it starts the writer task.
    ///
    /// # Errors
    /// [`EventError::InvalidConfig`] for an empty or too long name,
    /// [`EventError::NoRuntime`] outside a tokio runtime.
    ///
    /// # Example
    /// ```no_run
    /// # async fn f(client: kube::Client) -> Result<(), reflector::events::EventError> {
    /// let recorder = reflector::events::Recorder::new(client, "widget-controller")?;
    /// # let _ = recorder; Ok(()) }
    /// ```
    pub fn new(
        client: kube::Client,
        reporting_controller: impl Into<String>,
    ) -> Result<Self, EventError> {
        Self::with_config(client, reporting_controller, RecorderConfig::default())
    }

    /// A recorder as [`Recorder::new`], configured.
    ///
    /// # Errors
    /// [`EventError::InvalidConfig`] for an empty or too long name or instance, a zero
    /// burst, buffer, cache size or number of tries; [`EventError::NoRuntime`] outside
    /// a tokio runtime.
    ///
    /// # Example
    /// ```no_run
    /// # async fn f(client: kube::Client) -> Result<(), reflector::events::EventError> {
    /// use reflector::events::{Recorder, RecorderConfig};
    /// let recorder = Recorder::with_config(client, "widget-controller", RecorderConfig::default().buffer(64))?;
    /// # let _ = recorder; Ok(()) }
    /// ```
    pub fn with_config(
        client: kube::Client,
        reporting_controller: impl Into<String>,
        config: RecorderConfig,
    ) -> Result<Self, EventError> {
        let controller = reporting_controller.into();
        let instance = match config.reporting_instance.clone() {
            Some(instance) => instance,
            None => default_instance(&controller),
        };
        validate(&controller, &instance, &config)?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| EventError::NoRuntime)?;
        let metrics = config.metrics.clone().unwrap_or_default();
        let (tx, rx) = mpsc::channel(config.buffer);
        let writer = Writer {
            client,
            series: SeriesCache::new(
                config.series_window,
                config.cache_size,
                controller.clone(),
                instance,
            ),
            metrics: metrics.clone(),
            controller: controller.clone(),
            retry_interval: config.retry_interval,
            max_tries: config.max_tries,
        };
        let stop = config.cancel.unwrap_or_default();
        // Owned through `tx`: the task ends when the last handle drops it, or at once
        // when `stop` fires.
        drop(runtime.spawn(writer.run(rx, stop)));
        Ok(Recorder {
            inner: Arc::new(Inner {
                tx,
                spam: SpamFilter::new(config.spam_burst, config.spam_refill, config.cache_size),
                metrics,
                controller,
            }),
        })
    }

    /// Publishes one occurrence of `event` about `regarding`, referenced as client-go's
    /// `GetReference` does (apiVersion, kind, namespace, name, uid and
    /// `resourceVersion`). Returns at once: the write happens in the background. An
    /// event the spam filter or a full buffer drops is counted, not an error.
    ///
    /// # Errors
    /// [`EventError::InvalidEvent`] for what the API server would reject (the event is
    /// not buffered); [`EventError::Stopped`] once the writer task has stopped.
    ///
    /// # Example
    /// ```no_run
    /// # fn f(recorder: &reflector::events::Recorder, pod: &k8s_openapi::api::core::v1::Pod) -> Result<(), reflector::events::EventError> {
    /// use reflector::events::Event;
    /// recorder.publish(pod, Event::warning("BackOff", "Reconcile").note("retrying in 5 s"))?;
    /// # Ok(()) }
    /// ```
    #[doc(alias = "Eventf")]
    pub fn publish<K>(&self, regarding: &K, event: Event) -> Result<(), EventError>
    where
        K: kube::Resource,
        K::DynamicType: Default,
    {
        self.send(reference_to(regarding), event)
    }

    /// Publishes one occurrence of `event` about the object `regarding` refers to,
    /// with the reference as given: for when there is no object at hand (an error
    /// policy has only the key; the object may be gone), a kind whose type needs
    /// runtime type information, or a sub-object (`fieldPath`). As
    /// [`publish`](Self::publish) otherwise.
    ///
    /// # Errors
    /// As [`publish`](Self::publish).
    ///
    /// # Example
    /// ```no_run
    /// # fn f(recorder: &reflector::events::Recorder) -> Result<(), reflector::events::EventError> {
    /// use k8s_openapi::api::core::v1::ObjectReference;
    /// use reflector::events::Event;
    /// let gone = ObjectReference {
    ///     api_version: Some("v1".into()),
    ///     kind: Some("ConfigMap".into()),
    ///     namespace: Some("apps".into()),
    ///     name: Some("web".into()),
    ///     ..ObjectReference::default()
    /// };
    /// recorder.publish_ref(&gone, Event::normal("CleanedUp", "Finalize"))?;
    /// # Ok(()) }
    /// ```
    pub fn publish_ref(&self, regarding: &ObjectReference, event: Event) -> Result<(), EventError> {
        self.send(regarding.clone(), event)
    }

    /// Validates, filters and buffers one occurrence.
    fn send(&self, regarding: ObjectReference, event: Event) -> Result<(), EventError> {
        event.validate(&regarding)?;
        let inner = &self.inner;
        if inner.tx.is_closed() {
            return Err(EventError::Stopped);
        }
        if !inner.spam.allow(&regarding, Instant::now()) {
            inner
                .metrics
                .dropped(&inner.controller, DropReason::SpamFilter, 1);
            return Ok(());
        }
        let command = Command::Publish(Box::new((event, regarding)));
        match inner.tx.try_send(command) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                inner
                    .metrics
                    .dropped(&inner.controller, DropReason::BufferFull, 1);
                Ok(())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(EventError::Stopped),
        }
    }

    /// Waits until everything published before this call has been written (or its
    /// write attempted once: writes retried after connection errors may still be
    /// pending). Meant for tests and orderly shutdown; reconciles need not call it.
    ///
    /// # Errors
    /// [`EventError::Stopped`] if the writer task has stopped.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future only abandons the wait.
    ///
    /// # Example
    /// ```no_run
    /// # async fn f(recorder: reflector::events::Recorder) -> Result<(), reflector::events::EventError> {
    /// recorder.flush().await?;
    /// # Ok(()) }
    /// ```
    pub async fn flush(&self) -> Result<(), EventError> {
        let (ack, done) = oneshot::channel();
        self.inner
            .tx
            .send(Command::Flush(ack))
            .await
            .map_err(|_| EventError::Stopped)?;
        done.await.map_err(|_| EventError::Stopped)
    }
}

/// `<controller>-<hostname>`, as client-go's `tools/events` recorder, cut to what the
/// API server accepts; the controller alone without a hostname.
fn default_instance(controller: &str) -> String {
    let hostname = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty());
    let instance = match hostname {
        Some(host) => format!("{controller}-{host}"),
        None => controller.to_owned(),
    };
    instance.chars().take(REPORTER_LIMIT).collect()
}

fn validate(controller: &str, instance: &str, config: &RecorderConfig) -> Result<(), EventError> {
    for (field, value) in [
        ("reporting_controller", controller),
        ("reporting_instance", instance),
    ] {
        if let Some(problem) = length_problem(value, REPORTER_LIMIT) {
            return Err(EventError::invalid_config(field, problem));
        }
    }
    for (field, value) in [
        ("spam_filter burst", u64::from(config.spam_burst)),
        ("buffer", config.buffer as u64),
        ("cache_size", config.cache_size as u64),
        ("retries max_tries", u64::from(config.max_tries)),
    ] {
        if value == 0 {
            return Err(EventError::invalid_config(field, "must be at least 1"));
        }
    }
    Ok(())
}
