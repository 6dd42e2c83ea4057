//! Consumes one watch stream into a store, as client-go's `handleAnyWatch`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::WatchEvent;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::listwatch::{ListWatchError, WatchStream};
use crate::object::Object;
use crate::store::Store;

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
/// at least this often and other tasks on the worker get their turn. Measured with
/// `benches/informer.rs`: consuming tokio's coop budget per event (a yield every
/// 128) cost 16 handlers a fifth of their throughput; every 1024 events costs
/// nothing visible.
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
    pub(crate) store: &'a dyn Store<K>,
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
/// `set_rv(rv, past_initial_adds)` is called after every event with its resource
/// version and whether an event other than ADDED has been seen on this stream.
pub(crate) async fn handle_watch<K: Object>(
    ctx: WatchContext<'_, K>,
    start: Instant,
    stream: &mut WatchStream<K>,
    set_rv: &mut (dyn FnMut(&str, bool) + Send),
) -> Result<WatchEnd, ReflectorError> {
    let WatchContext {
        name,
        store,
        stats,
        cancel,
        mut resync,
        exit_on_initial_events_end,
    } = ctx;
    let mut initial_events_end = false;
    let mut past_initial_adds = false;
    let mut event_count: u64 = 0;
    let mut rv = String::new();
    // Created once: a fresh `cancelled()` per event would register and remove a
    // waiter on every iteration.
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    loop {
        let next = tokio::select! {
            biased;
            () = &mut cancelled => return Ok(WatchEnd::Stopped),
            () = resync_fired(&mut resync) => {
                if let Some((_, should_resync)) = &resync
                    && should_resync()
                {
                    tracing::debug!(reflector = name, "forcing resync");
                    bump(&stats.resyncs);
                    if let Err(source) = store.resync() {
                        return Err(ReflectorError::Resync { resource: name.to_owned(), source });
                    }
                }
                continue;
            }
            next = stream.next() => next,
        };
        let event = match next {
            None => break,
            Some(Ok(event)) => event,
            Some(Err(e)) if e.is_unexpected_kind() => {
                tracing::warn!(reflector = name, error = %e, "dropping watch event of an unexpected kind");
                bump(&stats.unexpected_kind_events);
                continue;
            }
            Some(Err(source)) => {
                return Err(ReflectorError::WatchStream {
                    resource: name.to_owned(),
                    source,
                });
            }
        };
        // The event's resource version, copied into one buffer reused across events
        // (the object itself goes to the store unshared, so a transform may take it).
        rv.clear();
        match event {
            WatchEvent::Error(status) => {
                return Err(ReflectorError::WatchStream {
                    resource: name.to_owned(),
                    source: ListWatchError::Api(status),
                });
            }
            WatchEvent::Added(obj) => {
                rv.push_str(resource_version_of(&obj));
                if let Err(e) = store.add(Arc::new(obj)) {
                    tracing::error!(reflector = name, error = %e, "unable to add watch event object to store");
                }
            }
            WatchEvent::Modified(obj) => {
                past_initial_adds = true;
                rv.push_str(resource_version_of(&obj));
                if let Err(e) = store.update(Arc::new(obj)) {
                    tracing::error!(reflector = name, error = %e, "unable to update watch event object in store");
                }
            }
            WatchEvent::Deleted(obj) => {
                past_initial_adds = true;
                rv.push_str(resource_version_of(&obj));
                if let Err(e) = store.delete(Arc::new(obj)) {
                    tracing::error!(reflector = name, error = %e, "unable to delete watch event object from store");
                }
            }
            WatchEvent::Bookmark(bookmark) => {
                past_initial_adds = true;
                bump(&stats.bookmarks);
                if bookmark
                    .metadata
                    .annotations
                    .get(INITIAL_EVENTS_END_ANNOTATION)
                    .is_some_and(|v| v == "true")
                {
                    initial_events_end = true;
                }
                rv.push_str(&bookmark.metadata.resource_version);
            }
        }
        set_rv(&rv, past_initial_adds);
        event_count += 1;
        if event_count.is_multiple_of(YIELD_EVERY) {
            tokio::task::yield_now().await;
        }
        bump(&stats.events);
        if exit_on_initial_events_end && initial_events_end {
            tracing::debug!(
                reflector = name,
                events = event_count,
                "initial events ended; keeping the watch open"
            );
            return Ok(WatchEnd::InitialEventsEnd);
        }
    }
    if start.elapsed() < VERY_SHORT_WATCH && event_count == 0 {
        return Err(ReflectorError::VeryShortWatch {
            resource: name.to_owned(),
        });
    }
    tracing::debug!(reflector = name, events = event_count, "watch closed");
    Ok(WatchEnd::Closed { initial_events_end })
}

async fn resync_fired(resync: &mut Option<(&mut ResyncTimer, &(dyn Fn() -> bool + Send + Sync))>) {
    match resync {
        Some((timer, _)) => timer.fired().await,
        None => std::future::pending().await,
    }
}

fn resource_version_of<K: kube::Resource>(obj: &K) -> &str {
    obj.meta().resource_version.as_deref().unwrap_or_default()
}
