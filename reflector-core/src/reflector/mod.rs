//! The reflector: keeps a store in step with the API server by list-then-watch
//! ([`Reflector`], re-exported at the crate root).

mod error;
mod options;
mod pager;
mod resync_timer;
mod retry_with_deadline;
mod stats;
mod temporary_store;
mod watch_handler;
mod watch_list;

#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::api::{ListParams, WatchParams};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::fifo::Fifo;
use crate::listwatch::{ListWatchError, ListerWatcher, WatchStream};
use crate::object::Object;
use crate::store::{PlainStore, Store, StoreSink, Writer, WriterSink};

pub use error::ReflectorError;
pub use options::ReflectorOptions;
pub use stats::ReflectorStats;

use options::DEFAULT_PAGE_SIZE;
use resync_timer::ResyncTimer;
use retry_with_deadline::RetryWithDeadline;
use stats::{StatsCounters, bump};
use watch_handler::{RunVersions, WatchContext, WatchEnd, handle_watch};

/// Keeps a store in step with the API server by list-then-watch.
///
/// A [`Reflector`] writes into what it is given when made: a queue an informer pops
/// ([`with_queue`](Reflector::with_queue)), a cache it fills directly through the
/// cache's one [`Writer`] ([`with_cache`](Reflector::with_cache)), or any [`Store`]
/// ([`new`](Reflector::new)). It lists a resource (in pages), hands the result over
/// as one replacement, then watches from the list's resource version and turns each
/// event into an add, update or delete. When anything goes wrong it backs off and starts
/// over, relisting only when it must. It follows client-go's `reflector.go`:
///
/// - the first list asks for `resourceVersion="0"` (any cached state will do);
///   later lists ask for the last resource version seen; a `410 Expired` or
///   "too large resource version" answer marks that version unavailable, and the
///   list is retried at once with `resourceVersion=""` (a consistent read);
/// - lists are paginated (500 per page) unless relisting at an exact resource
///   version, where pagination would bypass the server's watch cache; a continue
///   token that expires mid-list falls back to one unpaginated list;
/// - from an [`ApiListerWatcher`](crate::listwatch::ApiListerWatcher), each list body
///   is decoded item by item as it arrives and never held whole (the API server
///   answers the first, `resourceVersion="0"` list in one page of every object,
///   whatever the limit); the first list into an empty informer hands the items to
///   its FIFO batch by batch, a relist gathers them for one `replace`, and a body that
///   breaks off or holds a malformed item fails the list as a whole;
/// - watches start at the last resource version with bookmarks on and a random
///   timeout in `[min, 2×min]` (5 min by default); each event and bookmark moves
///   the resource version; an `ERROR` event ends the watch and the next round
///   relists; 429 or a refused connection when starting a watch backs off and
///   watches again *without* relisting; `500` errors are retried until a deadline;
///   a watch that ends within a second having delivered nothing is an error;
/// - events of another kind are dropped and counted; a malformed line ends the
///   watch;
/// - optionally the initial state is streamed by a watch-list request and kept in
///   a temporary store until the `k8s.io/initial-events-end` bookmark (into an empty
///   FIFO it is handed on as it arrives, as the pages of a streamed first list);
/// - a resync timer calls `store.resync()` while watching;
/// - between rounds it backs off exponentially (800 ms → 30 s, jitter 1.0, reset
///   after 2 min).
///
/// The reflector spawns no task: [`Reflector::run`] is one future, and dropping it
/// or cancelling its token stops everything.
///
/// # Example
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use reflector::listwatch::ApiListerWatcher;
/// use reflector::{Reflector, ReflectorOptions};
/// use reflector::store::{Indexers, Writer};
/// use tokio_util::sync::CancellationToken;
/// # async fn f(client: kube::Client) {
/// let lw = ApiListerWatcher::new(Api::<ConfigMap>::all(client));
/// let writer = Writer::new(Indexers::new());
/// let cache = writer.reader();
/// let reflector = Reflector::with_cache(lw, writer, ReflectorOptions::default().name("configmaps"));
/// let cancel = CancellationToken::new();
/// reflector.run(cancel.child_token()).await;
/// # let _ = cache;
/// # }
/// ```
pub struct Reflector<K, L> {
    name: String,
    lister_watcher: L,
    store: Arc<dyn StoreSink<K>>,
    options: ReflectorOptions,
    /// Resource-version bookkeeping; guarded by its own mutex, never held across an
    /// await.
    state: Mutex<RvState>,
    /// The backoff between rounds and on retryable watch failures; locked only to
    /// draw the next delay.
    backoff: Mutex<Backoff>,
    stats: StatsCounters,
}

/// Guarded by `Reflector::state`.
#[derive(Debug, Default)]
struct RvState {
    /// The resource version of the last list or watch event handled.
    last_sync_resource_version: String,
    /// Set when listing at `last_sync_resource_version` failed with 410 or "too
    /// large"; the next list asks for `""`.
    unavailable: bool,
    /// Whether the first (`"0"`) list came back paginated: then the server has no
    /// watch cache and every list is paginated.
    paginated_result: bool,
    /// Whether a list has completed (later ones count as relists).
    listed_once: bool,
}

impl<K, L> std::fmt::Debug for Reflector<K, L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<K, L> Reflector<K, L>
where
    K: Object,
    L: ListerWatcher<K>,
{
    /// A reflector that fills `store` (a cache of your own) from `lister_watcher`, one
    /// store call per event.
    #[must_use]
    pub fn new(lister_watcher: L, store: Arc<dyn Store<K>>, options: ReflectorOptions) -> Self {
        Self::with_sink(lister_watcher, Arc::new(PlainStore(store)), options)
    }

    /// A reflector that feeds `queue` from `lister_watcher`, for a consumer that pops
    /// it (an informer): the events of one poll are queued together, the first list
    /// into an empty queue page by page, and the consumer's resource version follows
    /// what is handed over (see [`QueueMode`](crate::fifo::QueueMode)).
    #[must_use]
    pub fn with_queue(lister_watcher: L, queue: Arc<Fifo<K>>, options: ReflectorOptions) -> Self {
        Self::with_sink(lister_watcher, queue, options)
    }

    /// A reflector that fills the cache `writer` writes, from `lister_watcher`: it
    /// owns the writer from then on, so it is the cache's only writer, and the cache's
    /// resource version follows every list, event and bookmark. Read the cache through
    /// a [`reader`](Writer::reader) taken before (as in the type's example).
    #[must_use]
    pub fn with_cache(lister_watcher: L, writer: Writer<K>, options: ReflectorOptions) -> Self {
        Self::with_sink(lister_watcher, Arc::new(WriterSink::new(writer)), options)
    }

    /// A reflector that writes through `store`'s own hooks (a test store's, say).
    pub(crate) fn with_sink(
        lister_watcher: L,
        store: Arc<dyn StoreSink<K>>,
        options: ReflectorOptions,
    ) -> Self {
        let name = if options.name.is_empty() {
            crate::object::short_type_name::<K>().to_owned()
        } else {
            options.name.clone()
        };
        Reflector {
            name,
            lister_watcher,
            store,
            backoff: Mutex::new(options.backoff.build()),
            options,
            state: Mutex::new(RvState::default()),
            stats: StatsCounters::default(),
        }
    }

    /// The reflector's name, as used in logs.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resource version of the last list or watch event handled; `None` before
    /// the first list.
    #[doc(alias = "LastSyncResourceVersion")]
    #[must_use]
    pub fn resource_version(&self) -> Option<String> {
        let rv = &self.lock_state().last_sync_resource_version;
        (!rv.is_empty()).then(|| rv.clone())
    }

    /// A snapshot of the counters.
    #[must_use]
    pub fn stats(&self) -> ReflectorStats {
        self.stats.snapshot()
    }

    /// The lister-watcher this reflector drives.
    #[must_use]
    pub fn lister_watcher(&self) -> &L {
        &self.lister_watcher
    }

    /// Lists and watches until `cancel` fires, backing off between rounds. Errors
    /// that end a round go to the watch-error handler (or the log).
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future or cancelling the token stops the reflector
    /// at its next poll; no task is left behind (the reflector spawns none). The
    /// store keeps whatever it was given.
    pub async fn run(&self, cancel: CancellationToken) {
        let span = tracing::info_span!(
            "reflector",
            name = %self.name,
            resource = crate::object::short_type_name::<K>()
        );
        tracing::Instrument::instrument(self.run_loop(cancel), span).await;
    }

    async fn run_loop(&self, cancel: CancellationToken) {
        tracing::debug!(reflector = %self.name, "starting reflector");
        while !cancel.is_cancelled() {
            if let Err(e) = self.list_and_watch(&cancel).await {
                self.handle_round_error(&e);
            }
            let delay = self.next_backoff();
            tokio::select! {
                () = cancel.cancelled() => break,
                () = tokio::time::sleep(delay) => {}
            }
        }
        tracing::debug!(reflector = %self.name, "stopping reflector");
    }

    fn handle_round_error(&self, e: &ReflectorError) {
        match &self.options.watch_error_handler {
            Some(handler) => handler(e),
            None => {
                if let Some(lw) = e.list_watch_error()
                    && lw.is_expired()
                {
                    tracing::info!(reflector = %self.name, error = %e, "watch closed");
                } else {
                    tracing::warn!(reflector = %self.name, error = ?e, "list-and-watch failed");
                }
            }
        }
    }

    /// One round: list (or stream with watch-list), then watch until the watch ends
    /// in a way that needs a relist, or `cancel` fires. Returns `Ok` when the round
    /// ended without an error worth reporting (client-go reports watch-stream errors
    /// only in its logs).
    ///
    /// # Errors
    /// The error that stopped the round before the watch began.
    ///
    /// # Cancel safety
    /// Cancel-safe: a cancelled round leaves the store as the last completed
    /// operation left it.
    pub async fn list_and_watch(&self, cancel: &CancellationToken) -> Result<(), ReflectorError> {
        tracing::debug!(reflector = %self.name, "listing and watching");
        let mut watch: Option<WatchStream<K>> = None;
        let mut fallback_to_list = !self.options.use_watch_list;
        if self.options.use_watch_list {
            match self.watch_list(cancel).await {
                Ok(None) => return Ok(()),
                Ok(Some(stream)) => watch = Some(stream),
                Err(e) => {
                    tracing::debug!(reflector = %self.name, error = %e,
                        "watch-list failed; falling back to list");
                    fallback_to_list = true;
                }
            }
        }
        if fallback_to_list {
            let listed = tokio::select! {
                () = cancel.cancelled() => return Ok(()),
                r = self.list() => r,
            };
            listed?;
        }
        tracing::debug!(reflector = %self.name, "caches populated");
        self.watch_with_resync(watch, cancel).await
    }

    async fn list(&self) -> Result<(), ReflectorError> {
        let rv = self.relist_resource_version();
        let page_size = self.page_size_for(&rv);
        let mut result = self.list_at(&rv, page_size).await;
        if let Err(e) = &result
            && (e.is_expired() || e.is_too_large_resource_version())
        {
            self.stats.count_error(e);
            tracing::debug!(reflector = %self.name, error = %e,
                "resource version unavailable; listing from the latest");
            self.lock_state().unavailable = true;
            let rv = self.relist_resource_version();
            result = self.list_at(&rv, page_size).await;
        }
        let (list, streamed) = result.map_err(|source| {
            self.stats.count_error(&source);
            ReflectorError::List {
                resource: self.name.clone(),
                source,
            }
        })?;
        let relist = {
            let mut st = self.lock_state();
            if rv == "0" && list.paginated {
                st.paginated_result = true;
            }
            st.unavailable = false;
            std::mem::replace(&mut st.listed_once, true)
        };
        bump(&self.stats.lists);
        if relist {
            bump(&self.stats.relists);
        }
        tracing::debug!(reflector = %self.name, items = list.items.len() + streamed,
            resource_version = %list.resource_version, "listed");
        let stored = if streamed > 0 {
            self.store
                .finish_list_stream(list.items, &list.resource_version)
        } else {
            self.store
                .replace_listed(list.items, &list.resource_version)
        };
        stored.map_err(|e| ReflectorError::of_sink(&self.name, e, false))?;
        self.set_resource_version(&list.resource_version);
        Ok(())
    }

    /// Lists everything at `rv`, page by page, each object prepared by the store as
    /// its page arrives ([`StoreSink::prepare_listed`]: transformed, and swapped for
    /// the cached copy if it is exactly the cached object). A list none of whose
    /// objects the store can hold yet ([`StoreSink::may_cache_listed`], asked as each
    /// list starts) is not looked up at all.
    ///
    /// Each page is offered to the store ([`StoreSink::stream_list_page`]); what it
    /// takes is not kept in the returned list, and the count of such items comes
    /// back beside it (the list must then end with `finish_list_stream`).
    async fn list_at(
        &self,
        rv: &str,
        page_size: Option<u32>,
    ) -> Result<(pager::FullList<K>, usize), ListWatchError> {
        let mut streamed = 0;
        let mut look_up = true;
        let keep = |page: Vec<K>, first_page: bool| {
            if first_page {
                look_up = self.store.may_cache_listed();
            }
            let items: Vec<Arc<K>> = page
                .into_iter()
                .map(|obj| self.store.prepare_listed(Arc::new(obj), look_up))
                .collect();
            match self.store.stream_list_page(&items, first_page) {
                Ok(true) => {
                    streamed += items.len();
                    Vec::new()
                }
                Ok(false) => items,
                Err(e) => {
                    // The list ends with a `replace`, which reports the same error.
                    tracing::debug!(reflector = %self.name, error = %e, "the store did not take a list page");
                    items
                }
            }
        };
        let base = ListParams::default();
        let list = pager::list_all(
            &self.lister_watcher,
            &base,
            rv,
            page_size,
            &self.stats,
            keep,
        )
        .await?;
        Ok((list, streamed))
    }

    /// The page size for a list at `rv`, as client-go decides it.
    fn page_size_for(&self, rv: &str) -> Option<u32> {
        if let Some(n) = self.options.page_size {
            return Some(n);
        }
        if self.lock_state().paginated_result {
            return Some(DEFAULT_PAGE_SIZE);
        }
        if !rv.is_empty() && rv != "0" {
            return None;
        }
        Some(DEFAULT_PAGE_SIZE)
    }

    async fn watch_with_resync(
        &self,
        mut watch: Option<WatchStream<K>>,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError> {
        let mut resync = ResyncTimer::new(self.options.resync_period);
        let always = || true;
        let should_resync: &(dyn Fn() -> bool + Send + Sync) = match &self.options.should_resync {
            Some(f) => f.as_ref(),
            None => &always,
        };
        let mut retry = RetryWithDeadline::new(
            self.options.max_internal_error_retry_duration,
            Duration::from_secs(60),
        );
        loop {
            if cancel.is_cancelled() {
                return Ok(());
            }
            let start = Instant::now();
            let mut propagate_rv_from_start = true;
            let mut stream = match watch.take() {
                Some(stream) => stream,
                None => {
                    let rv = self.lock_state().last_sync_resource_version.clone();
                    if rv.is_empty() || rv == "0" {
                        // Synthetic ADDED events come in no particular RV order;
                        // wait for another event before trusting their versions.
                        propagate_rv_from_start = false;
                    }
                    let params = WatchParams {
                        bookmarks: true,
                        timeout: Some(self.watch_timeout_secs()),
                        ..WatchParams::default()
                    };
                    bump(&self.stats.watches);
                    let started = tokio::select! {
                        () = cancel.cancelled() => return Ok(()),
                        r = self.lister_watcher.watch(&params, &rv) => r,
                    };
                    match started {
                        Ok(stream) => stream,
                        Err(e) if is_watch_error_retriable(&e) => {
                            self.stats.count_error(&e);
                            tracing::debug!(reflector = %self.name, error = %e,
                                "watch failed; backing off");
                            if self.sleep_backoff(cancel).await {
                                return Ok(());
                            }
                            continue;
                        }
                        Err(source) => {
                            self.stats.count_error(&source);
                            return Err(ReflectorError::Watch {
                                resource: self.name.clone(),
                                source,
                            });
                        }
                    }
                }
            };
            let store = self.store.as_ref();
            // The store is told every version, and once per run the run's last,
            // through which everything is handed over; the reflector's own is set
            // once per run, to the run's last (one lock per run, not per event).
            let mut set_rv = |versions: RunVersions<'_>| {
                let mut last = None;
                for (rv, past_initial_adds) in versions.iter() {
                    if propagate_rv_from_start || past_initial_adds {
                        store.update_resource_version(rv);
                        last = Some(rv);
                    }
                }
                if let Some(rv) = last {
                    store.handed_over(rv);
                    self.set_resource_version(rv);
                }
            };
            let ctx = WatchContext {
                name: &self.name,
                store,
                stats: &self.stats,
                cancel,
                resync: Some((&mut resync, should_resync)),
                exit_on_initial_events_end: false,
            };
            let ended = handle_watch(ctx, start, &mut stream, &mut set_rv).await;
            drop(stream);
            let internal = matches!(&ended, Err(e) if e.list_watch_error().is_some_and(ListWatchError::is_internal_error));
            retry.after(internal);
            let err = match ended {
                Ok(WatchEnd::Stopped) => return Ok(()),
                Ok(_) => continue,
                Err(e) => e,
            };
            match err.list_watch_error() {
                Some(lw) => self.stats.count_error(lw),
                None if matches!(err, ReflectorError::VeryShortWatch { .. }) => {
                    bump(&self.stats.errors_very_short_watch);
                }
                None => bump(&self.stats.errors_other),
            }
            let lw = err.list_watch_error();
            if lw.is_some_and(ListWatchError::is_expired) {
                tracing::debug!(reflector = %self.name, error = %err, "watch closed");
            } else if lw.is_some_and(ListWatchError::is_too_many_requests) {
                tracing::debug!(reflector = %self.name, "watch returned 429; backing off");
                if self.sleep_backoff(cancel).await {
                    return Ok(());
                }
                continue;
            } else if internal && retry.should_retry() {
                tracing::debug!(reflector = %self.name, error = %err,
                    "retrying watch after internal error");
                continue;
            } else {
                tracing::warn!(reflector = %self.name, error = ?err, "watch ended with an error");
            }
            return Ok(());
        }
    }

    /// Sleeps one backoff step; returns true if cancelled meanwhile.
    async fn sleep_backoff(&self, cancel: &CancellationToken) -> bool {
        let delay = self.next_backoff();
        tokio::select! {
            () = cancel.cancelled() => true,
            () = tokio::time::sleep(delay) => false,
        }
    }

    fn next_backoff(&self) -> Duration {
        self.backoff
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next_delay()
    }

    fn watch_timeout_secs(&self) -> u32 {
        let min = self.options.min_watch_timeout.as_secs_f64();
        let secs = min + crate::random::random_unit() * min;
        // Truncated like client-go's int64 conversion; bounded by 2×min.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let secs = secs.min(f64::from(u32::MAX)) as u32;
        secs
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, RvState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_resource_version(&self, rv: &str) {
        rv.clone_into(&mut self.lock_state().last_sync_resource_version);
    }

    /// The resource version to list from: `""` after an unavailable version, `"0"`
    /// at first, else the last one seen.
    fn relist_resource_version(&self) -> String {
        let st = self.lock_state();
        if st.unavailable {
            String::new()
        } else if st.last_sync_resource_version.is_empty() {
            "0".to_owned()
        } else {
            st.last_sync_resource_version.clone()
        }
    }

    /// The resource version a watch-list starts from.
    fn rewatch_resource_version(&self) -> String {
        let st = self.lock_state();
        if st.unavailable {
            String::new()
        } else {
            st.last_sync_resource_version.clone()
        }
    }
}

/// client-go's `isWatchErrorRetriable`: a refused connection or 429 means "try the
/// watch again later", not "relist".
fn is_watch_error_retriable(e: &ListWatchError) -> bool {
    e.is_connection_refused() || e.is_too_many_requests()
}
