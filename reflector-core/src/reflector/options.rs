//! [`ReflectorOptions`]: how a reflector lists, watches, resyncs and backs off.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::backoff::BackoffConfig;

use super::ReflectorError;

/// Called with every error that ends a list-and-watch round, as client-go's
/// `WatchErrorHandler`.
pub(crate) type WatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// Decides, each time the resync timer fires, whether to resync now.
pub(crate) type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;

/// Options of a [`Reflector`](super::Reflector). Every default is client-go's.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::ReflectorOptions;
/// let opts = ReflectorOptions::default()
///     .name("configmaps")
///     .page_size(100)
///     .resync_period(Duration::from_secs(30));
/// assert_eq!(opts.min_watch_timeout_value(), Duration::from_secs(300));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ReflectorOptions {
    pub(crate) name: String,
    pub(crate) page_size: Option<u32>,
    pub(crate) resync_period: Duration,
    pub(crate) should_resync: Option<ShouldResync>,
    pub(crate) backoff: BackoffConfig,
    pub(crate) min_watch_timeout: Duration,
    pub(crate) use_watch_list: bool,
    pub(crate) max_internal_error_retry_duration: Duration,
    pub(crate) watch_error_handler: Option<WatchErrorHandler>,
}

/// client-go's `defaultMinWatchTimeout`.
pub(crate) const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);

/// client-go's pager default page size.
pub(crate) const DEFAULT_PAGE_SIZE: u32 = 500;

impl Default for ReflectorOptions {
    fn default() -> Self {
        ReflectorOptions {
            name: String::new(),
            page_size: None,
            resync_period: Duration::ZERO,
            should_resync: None,
            backoff: BackoffConfig::default(),
            min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
            use_watch_list: false,
            max_internal_error_retry_duration: Duration::ZERO,
            watch_error_handler: None,
        }
    }
}

impl fmt::Debug for ReflectorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorOptions")
            .field("name", &self.name)
            .field("page_size", &self.page_size)
            .field("resync_period", &self.resync_period)
            .field("should_resync", &self.should_resync.is_some())
            .field("backoff", &self.backoff)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("use_watch_list", &self.use_watch_list)
            .field(
                "max_internal_error_retry_duration",
                &self.max_internal_error_retry_duration,
            )
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .finish()
    }
}

impl ReflectorOptions {
    /// The name used in logs and stats (default: the object type's name).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Lists in pages of `n` objects, always (client-go's `WatchListPageSize`).
    ///
    /// Default (unset): pages of 500, as client-go's pager — except that a relist
    /// at an exact resource version asks for no pagination (so the server can
    /// answer from its watch cache), unless the first `resourceVersion="0"` list
    /// came back paginated. `0` means "unset".
    #[must_use]
    pub fn page_size(mut self, n: u32) -> Self {
        self.page_size = (n > 0).then_some(n);
        self
    }

    /// How often the store is asked to resync (default zero: never, as client-go's
    /// `NewReflector(.., 0)`).
    #[must_use]
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// Consulted each time the resync timer fires (default: always resync).
    #[must_use]
    pub fn should_resync(mut self, f: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        self.should_resync = Some(Arc::new(f));
        self
    }

    /// Backoff between rounds and on 429/refused watches: the first delay's base is
    /// `initial`, doubled after each step up to `max` (default 800 ms → 30 s, as
    /// client-go's reflector), and starts over after 2 min without a step (fixed, as
    /// client-go's reflector).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reflector::ReflectorOptions;
    /// let options = ReflectorOptions::default()
    ///     .backoff(Duration::from_millis(100), Duration::from_secs(5));
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.backoff = self.backoff.initial(initial).max(max);
        self
    }

    /// The backoff's jitter fraction: each delay is its base times
    /// `1 + jitter × U[0,1)` (default 1.0, as client-go's reflector); 0 makes the
    /// delays exact. Negative or non-finite values mean 0.
    ///
    /// ```
    /// use reflector::ReflectorOptions;
    /// let exact = ReflectorOptions::default().backoff_jitter(0.0);
    /// # let _ = exact;
    /// ```
    #[must_use]
    pub fn backoff_jitter(mut self, jitter: f64) -> Self {
        self.backoff = self.backoff.jitter(jitter);
        self
    }

    /// Lower bound of the random watch timeout, which is drawn from
    /// `[min, 2 × min]` (default 5 min, as client-go; smaller values are ignored, as
    /// client-go ignores them).
    #[must_use]
    pub fn min_watch_timeout(mut self, d: Duration) -> Self {
        self.min_watch_timeout = d.max(DEFAULT_MIN_WATCH_TIMEOUT);
        self
    }

    /// The effective minimum watch timeout.
    #[must_use]
    pub fn min_watch_timeout_value(&self) -> Duration {
        self.min_watch_timeout
    }

    /// Streams the initial state with a watch-list request (`sendInitialEvents=true`)
    /// instead of a list, falling back to list+watch if the server refuses (default
    /// false, as client-go's `WatchListClient` gate was until 1.34).
    #[must_use]
    pub fn use_watch_list(mut self, on: bool) -> Self {
        self.use_watch_list = on;
        self
    }

    /// How long watches failing with `500 InternalError` are retried without a
    /// relist (default zero: not retried, as client-go's
    /// `MaxInternalErrorRetryDuration`).
    #[must_use]
    pub fn max_internal_error_retry_duration(mut self, d: Duration) -> Self {
        self.max_internal_error_retry_duration = d;
        self
    }

    /// Called with each error that ends a list-and-watch round (default: logged
    /// with `tracing`, as client-go's `DefaultWatchErrorHandler`).
    #[must_use]
    pub fn watch_error_handler(
        mut self,
        f: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        self.watch_error_handler = Some(Arc::new(f));
        self
    }
}
