//! [`RecorderConfig`]: the recorder's tunables, with client-go's defaults.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::EventMetrics;

/// How a [`Recorder`](super::Recorder) filters, buffers and writes. Every setting has
/// a default; the defaults are client-go's.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::events::RecorderConfig;
///
/// let config = RecorderConfig::default()
///     .reporting_instance("widgets-7f9c")
///     .spam_filter(10, Duration::from_secs(60))
///     .buffer(100);
/// # let _ = config;
/// ```
#[derive(Debug, Clone)]
pub struct RecorderConfig {
    pub(crate) reporting_instance: Option<String>,
    pub(crate) spam_burst: u32,
    pub(crate) spam_refill: Duration,
    pub(crate) buffer: usize,
    pub(crate) series_window: Duration,
    pub(crate) cache_size: usize,
    pub(crate) retry_interval: Duration,
    pub(crate) max_tries: u32,
    pub(crate) metrics: Option<EventMetrics>,
    pub(crate) cancel: Option<CancellationToken>,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig {
            reporting_instance: None,
            spam_burst: 25,
            spam_refill: Duration::from_secs(300),
            buffer: 1000,
            series_window: Duration::from_secs(6 * 60),
            cache_size: 4096,
            retry_interval: Duration::from_secs(10),
            max_tries: 12,
            metrics: None,
            cancel: None,
        }
    }
}

impl RecorderConfig {
    /// The `reportingInstance` of every Event (at most 128 characters). Default:
    /// `<reporting controller>-<hostname>` (the `HOSTNAME` variable, else
    /// `/etc/hostname`), as client-go's `tools/events` recorder; the controller name
    /// alone when there is no hostname.
    ///
    /// ```
    /// let c = reflector::events::RecorderConfig::default().reporting_instance("pod-0");
    /// # let _ = c;
    /// ```
    #[must_use]
    pub fn reporting_instance(mut self, instance: impl Into<String>) -> Self {
        self.reporting_instance = Some(instance.into());
        self
    }

    /// The per-object spam filter: at most `burst` events about one object at once,
    /// then one more per `refill`. Default: 25 and 5 minutes, client-go's
    /// `EventSourceObjectSpamFilter` defaults (`defaultSpamBurst`, `defaultSpamQPS`).
    /// A zero `refill` refills at once (no filtering past `burst` per instant).
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = reflector::events::RecorderConfig::default().spam_filter(5, Duration::from_secs(60));
    /// # let _ = c;
    /// ```
    #[must_use]
    pub fn spam_filter(mut self, burst: u32, refill: Duration) -> Self {
        self.spam_burst = burst;
        self.spam_refill = refill;
        self
    }

    /// How many published events may wait for the writer; past that, `publish` drops
    /// (and counts) rather than waits. Default: 1000, client-go's `maxQueuedEvents`.
    ///
    /// ```
    /// let c = reflector::events::RecorderConfig::default().buffer(64);
    /// # let _ = c;
    /// ```
    #[must_use]
    pub fn buffer(mut self, capacity: usize) -> Self {
        self.buffer = capacity;
        self
    }

    /// How long after its last occurrence an event with the same series key (see
    /// [`Recorder`](super::Recorder)) still joins the same Event's series; later, a
    /// new Event starts. Default: 6 minutes, client-go's
    /// `tools/events` `finishTime`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = reflector::events::RecorderConfig::default().series_window(Duration::from_secs(60));
    /// # let _ = c;
    /// ```
    #[must_use]
    pub fn series_window(mut self, window: Duration) -> Self {
        self.series_window = window;
        self
    }

    /// How many objects' spam-filter buckets, and how many series, are remembered
    /// (least recently used forgotten first). Default: 4096, client-go's
    /// `maxLruCacheEntries`.
    ///
    /// ```
    /// let c = reflector::events::RecorderConfig::default().cache_size(512);
    /// # let _ = c;
    /// ```
    #[must_use]
    pub fn cache_size(mut self, entries: usize) -> Self {
        self.cache_size = entries;
        self
    }

    /// How a write that met a connection error is retried: every `interval`, at most
    /// `max_tries` tries in all (an answer from the server is never retried). Default:
    /// 10 s and 12, client-go's `sleepDuration` and `maxTriesPerEvent`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = reflector::events::RecorderConfig::default().retries(Duration::from_secs(1), 3);
    /// # let _ = c;
    /// ```
    #[must_use]
    pub fn retries(mut self, interval: Duration, max_tries: u32) -> Self {
        self.retry_interval = interval;
        self.max_tries = max_tries;
        self
    }

    /// Where `reflector_events_dropped_total{controller,reason}` is counted: the
    /// process's [`Metrics`](crate::metrics::Metrics) bundle, or the recorder's
    /// [`EventMetrics`] alone. Default: a private, unregistered copy (counted, but
    /// not exported).
    ///
    /// ```
    /// use reflector::metrics::{Metrics, Registry};
    /// let metrics = Metrics::registered(&mut Registry::default());
    /// let c = reflector::events::RecorderConfig::default().metrics(&metrics);
    /// # let _ = c;
    /// ```
    #[must_use]
    pub fn metrics(mut self, metrics: &impl AsRef<EventMetrics>) -> Self {
        self.metrics = Some(metrics.as_ref().clone());
        self
    }

    /// A token that stops the writer task at once when cancelled (events not yet
    /// written are dropped). Default: none; the task stops when the last
    /// [`Recorder`](super::Recorder) handle is dropped.
    ///
    /// ```
    /// use tokio_util::sync::CancellationToken;
    /// let c = reflector::events::RecorderConfig::default().cancel(CancellationToken::new());
    /// # let _ = c;
    /// ```
    #[must_use]
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
}
