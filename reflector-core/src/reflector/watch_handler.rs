//! Consumes one watch stream into a store, as client-go's `handleAnyWatch`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::Poll;
use std::time::Duration;

use futures::StreamExt;
use kube::api::WatchEvent;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::listwatch::{ListWatchError, WatchStream};
use crate::object::Object;
use crate::store::{StoreSink, WatchAction};

use super::ReflectorError;
use super::resync_timer::ResyncTimer;
use super::stats::{StatsCounters, bump};

/// The annotation on the bookmark that ends a watch-list's initial events.
pub(crate) const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// A watch shorter than this with no event is an error, as client-go's.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// Events handled between two yields to the scheduler. The watch stream yields on
/// its own whenever it waits for data; this bounds the run of an always-ready one,
/// so the informer's consumer (which shares the reflector's task) drains the FIFO
/// at least this often and other tasks on the worker get their turn. Large, since a
/// yield per few events costs throughput (measured with the `informer` bench's pipeline).
const YIELD_EVERY: u64 = 1024;

/// How a watch stream ended without an error.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WatchEnd {
    /// The stream closed (timeout or server side). The flag says whether the
    /// initial-events-end bookmark was seen.
    Closed { initial_events_end: bool },
    /// The initial-events-end bookmark arrived and the caller asked to stop there; the
    /// stream is left open for reuse.
    InitialEventsEnd,
    /// Cancellation was requested.
    Stopped,
}

/// What a watch handler needs besides the stream.
pub(crate) struct WatchContext<'a, K> {
    pub(crate) name: &'a str,
    pub(crate) store: &'a dyn StoreSink<K>,
    pub(crate) stats: &'a StatsCounters,
    pub(crate) cancel: &'a CancellationToken,
    /// `Some` when store resyncs run alongside this watch.
    pub(crate) resync: Option<(&'a mut ResyncTimer, &'a (dyn Fn() -> bool + Send + Sync))>,
    /// Stop, leaving the stream open, at the initial-events-end bookmark.
    pub(crate) exit_on_initial_events_end: bool,
}

/// Feeds events from `stream` into the store until it ends, an error event or
/// decode failure arrives, the resync fails, or `cancel` fires.
///
/// The events taken from the stream in one poll (up to YIELD_EVERY) reach the
/// store as one run ([`StoreSink::apply_watch_run`]); then `set_rv` is called once with
/// their [`RunVersions`] — so a reported version is always one the store already
/// has.
///
/// # Cancel safety
/// Dropping the future drops no event: each is in the store before the poll that
/// took it from the stream returns.
pub(crate) async fn handle_watch<K: Object>(
    ctx: WatchContext<'_, K>,
    start: Instant,
    stream: &mut WatchStream<K>,
    set_rv: &mut (dyn FnMut(RunVersions<'_>) + Send),
) -> Result<WatchEnd, ReflectorError> {
    let WatchContext {
        name,
        store,
        stats,
        cancel,
        mut resync,
        exit_on_initial_events_end,
    } = ctx;
    let mut seen = Seen {
        initial_events_end: false,
        past_initial_adds: false,
        events: 0,
        unreported_events: 0,
        run: Vec::new(),
        rvs: String::new(),
        rv_ends: Vec::new(),
    };
    // Created once: a fresh `cancelled()` per wait would register and remove a
    // waiter every time.
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    loop {
        // Up to YIELD_EVERY ready events per poll, checked in the order a biased
        // select would: cancellation, the resync timer, the stream. Cancellation is
        // a flag read per event; its waker is registered only when the stream
        // waits (polling it per event was measurably slower: BENCHMARKS.md).
        // The events taken in one poll go to the store together when it ends —
        // before it returns, so before any await — and only then are their
        // resource versions reported, in order.
        let run = std::future::poll_fn(|cx| {
            let run = 'run: {
                for _ in 0..YIELD_EVERY {
                    if cancel.is_cancelled() {
                        break 'run Poll::Ready(Run::End(WatchEnd::Stopped));
                    }
                    if let Some((timer, should_resync)) = &mut resync
                        && timer.poll_fired(cx).is_ready()
                    {
                        if should_resync() {
                            tracing::debug!(reflector = name, "forcing resync");
                            bump(&stats.resyncs);
                            // The resync follows the events before it.
                            seen.flush(name, store, stats, set_rv);
                            if let Err(e) = store.resync() {
                                break 'run Poll::Ready(Run::Failed(ReflectorError::of_sink(
                                    name, e, true,
                                )));
                            }
                        }
                        continue;
                    }
                    let event = match stream.poll_next_unpin(cx) {
                        Poll::Pending => {
                            if cancelled.as_mut().poll(cx).is_ready() {
                                break 'run Poll::Ready(Run::End(WatchEnd::Stopped));
                            }
                            break 'run Poll::Pending;
                        }
                        Poll::Ready(None) => break 'run Poll::Ready(Run::Closed),
                        Poll::Ready(Some(Ok(event))) => event,
                        Poll::Ready(Some(Err(e))) if e.is_unexpected_kind() => {
                            tracing::warn!(reflector = name, error = %e, "dropping watch event of an unexpected kind");
                            bump(&stats.unexpected_kind_events);
                            continue;
                        }
                        Poll::Ready(Some(Err(source))) => {
                            break 'run Poll::Ready(Run::Failed(ReflectorError::WatchStream {
                                resource: name.to_owned(),
                                source,
                            }));
                        }
                    };
                    if let Err(e) = seen.take(event, name, stats) {
                        break 'run Poll::Ready(Run::Failed(e));
                    }
                    if exit_on_initial_events_end && seen.initial_events_end {
                        tracing::debug!(
                            reflector = name,
                            events = seen.events,
                            "initial events ended; keeping the watch open"
                        );
                        break 'run Poll::Ready(Run::End(WatchEnd::InitialEventsEnd));
                    }
                }
                Poll::Ready(Run::Yield)
            };
            seen.flush(name, store, stats, set_rv);
            run
        });
        match run.await {
            Run::Yield => tokio::task::yield_now().await,
            Run::End(end) => return Ok(end),
            Run::Failed(e) => return Err(e),
            Run::Closed => break,
        }
    }
    if start.elapsed() < VERY_SHORT_WATCH && seen.events == 0 {
        return Err(ReflectorError::VeryShortWatch {
            resource: name.to_owned(),
        });
    }
    tracing::debug!(reflector = name, events = seen.events, "watch closed");
    Ok(WatchEnd::Closed {
        initial_events_end: seen.initial_events_end,
    })
}

/// How one run of ready events ended.
enum Run {
    /// YIELD_EVERY events were handled; the stream may have more.
    Yield,
    /// The stream ended.
    Closed,
    /// Stop with this outcome.
    End(WatchEnd),
    /// Stop with this error.
    Failed(ReflectorError),
}

/// What a watch has seen so far, and the events taken in the current poll.
struct Seen<K> {
    /// The initial-events-end bookmark arrived.
    initial_events_end: bool,
    /// An event other than ADDED arrived.
    past_initial_adds: bool,
    /// Events handled.
    events: u64,
    /// Events of this poll not yet added to the reflector's statistics (added once
    /// per poll: a shared counter bumped per event is a locked instruction each).
    unreported_events: u64,
    /// This poll's events for the store, in order. Reused across polls.
    run: Vec<(WatchAction, Arc<K>)>,
    /// This poll's resource versions, bookmarks' included, one after another.
    /// Reused across polls.
    rvs: String,
    /// Where each of `rvs` ends, and whether an event other than ADDED had been
    /// seen by then. Reused across polls.
    rv_ends: Vec<(usize, bool)>,
}

impl<K: Object> Seen<K> {
    /// Takes one event: its object (unshared, so a transform may take it) joins the
    /// run for the store, its resource version the ones to report.
    fn take(
        &mut self,
        event: WatchEvent<K>,
        name: &str,
        stats: &StatsCounters,
    ) -> Result<(), ReflectorError> {
        let (action, obj) = match event {
            WatchEvent::Error(status) => {
                return Err(ReflectorError::WatchStream {
                    resource: name.to_owned(),
                    source: ListWatchError::Api(status),
                });
            }
            WatchEvent::Added(obj) => (WatchAction::Add, Arc::new(obj)),
            WatchEvent::Modified(obj) => (WatchAction::Update, Arc::new(obj)),
            WatchEvent::Deleted(obj) => (WatchAction::Delete, Arc::new(obj)),
            WatchEvent::Bookmark(bookmark) => {
                self.past_initial_adds = true;
                bump(&stats.bookmarks);
                if bookmark
                    .metadata
                    .annotations
                    .get(INITIAL_EVENTS_END_ANNOTATION)
                    .is_some_and(|v| v == "true")
                {
                    self.initial_events_end = true;
                }
                self.push_rv(&bookmark.metadata.resource_version);
                self.events += 1;
                self.unreported_events += 1;
                return Ok(());
            }
        };
        if action != WatchAction::Add {
            self.past_initial_adds = true;
        }
        self.push_rv(resource_version_of(&*obj));
        self.run.push((action, obj));
        self.events += 1;
        self.unreported_events += 1;
        Ok(())
    }

    fn push_rv(&mut self, rv: &str) {
        self.rvs.push_str(rv);
        self.rv_ends.push((self.rvs.len(), self.past_initial_adds));
    }

    /// Hands the run to the store, then reports the taken events' resource
    /// versions and counts the events.
    fn flush(
        &mut self,
        name: &str,
        store: &dyn StoreSink<K>,
        stats: &StatsCounters,
        set_rv: &mut (dyn FnMut(RunVersions<'_>) + Send),
    ) {
        if !self.run.is_empty() {
            store.apply_watch_run(&mut self.run, &mut |action, e| {
                tracing::error!(reflector = name, error = %e, "unable to {action} watch event object in store");
            });
        }
        if !self.rv_ends.is_empty() {
            set_rv(RunVersions {
                rvs: &self.rvs,
                ends: &self.rv_ends,
            });
        }
        self.rvs.clear();
        self.rv_ends.clear();
        if self.unreported_events > 0 {
            stats
                .events
                .fetch_add(std::mem::take(&mut self.unreported_events), Relaxed);
        }
    }
}

/// The resource versions of the events one poll took from a watch (bookmarks'
/// included), in order.
pub(crate) struct RunVersions<'a> {
    /// The versions, one after another.
    rvs: &'a str,
    /// Where each version ends in `rvs`, and whether an event other than ADDED had
    /// been seen on the stream by then.
    ends: &'a [(usize, bool)],
}

impl<'a> RunVersions<'a> {
    /// Each version with whether an event other than ADDED had been seen by then.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a str, bool)> + '_ {
        let rvs = self.rvs;
        let mut start = 0;
        self.ends.iter().map(move |&(end, past_initial_adds)| {
            let rv = &rvs[start..end];
            start = end;
            (rv, past_initial_adds)
        })
    }
}

fn resource_version_of<K: kube::Resource>(obj: &K) -> &str {
    obj.meta().resource_version.as_deref().unwrap_or_default()
}
