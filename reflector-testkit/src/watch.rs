//! WATCH: newline-delimited JSON events streamed with chunked encoding.
//!
//! Each watch is a task (owned by a child of the server's cancellation token) with a
//! cursor into the shared event log: it reads the log under the state lock in small
//! batches and writes events into a bounded channel that the HTTP body drains. No
//! per-watcher buffer grows without bound; a watcher whose cursor falls below the
//! compaction floor gets a 410 `ERROR` event and the stream ends, as with the real watch
//! cache.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::json;
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::bookmark_schedule::BookmarkSchedule;
use crate::fault::{BadLine, Fault, Fired, WatchControl};
use crate::object::{Repr, StoredObject};
use crate::query::{ListOptions, Rv};
use crate::server::Shared;
use crate::state::{EventType, LogEvent, ObjectFilter, ResourceId};
use crate::status::ApiError;

/// Log entries read per lock acquisition.
const BATCH: usize = 512;

/// Where a watch starts.
#[derive(Debug, Clone, Copy)]
enum Start {
    /// Synthetic ADDED for the current state, then live events.
    Initial { end_bookmark: bool },
    /// Events strictly after this RV.
    After(u64),
}

/// Per-watch faults fixed when the request arrived.
#[derive(Debug, Default)]
struct WatchFaults {
    gone: bool,
    silent: bool,
    latency: Option<Duration>,
    abort_after: Option<usize>,
    lines: Vec<(usize, BadLine)>,
}

struct Watch {
    shared: Arc<Shared>,
    rid: ResourceId,
    namespace: Option<String>,
    filter: ObjectFilter,
    repr: Repr,
    /// Each event's object as a Table row set (`kubectl get -w`), when asked for.
    table: Option<crate::table::TableRequest>,
    kind: String,
    api_version: String,
    bookmarks: bool,
    timeout: Option<Duration>,
    faults: WatchFaults,
    tx: mpsc::Sender<Result<Bytes, io::Error>>,
    token: CancellationToken,
    /// Events delivered so far (for `after_events` faults).
    sent: usize,
}

/// Why a watch loop stopped.
struct Stop;

pub(crate) fn start(
    shared: &Arc<Shared>,
    read: crate::list::Read,
    rid: ResourceId,
    namespace: Option<&str>,
    options: ListOptions,
    fired: Fired,
) -> Result<Response, ApiError> {
    let start = match (options.send_initial_events, options.rv) {
        // Without `allowWatchBookmarks` the real watch cache still sends the initial
        // events, just no bookmark marking their end.
        (Some(true), _) => Start::Initial {
            end_bookmark: options.allow_bookmarks,
        },
        // The watch cache ends a legacy watch's synthetic ADDEDs with the same bookmark.
        (_, Rv::Unset | Rv::Any) => Start::Initial {
            end_bookmark: options.allow_bookmarks,
        },
        (_, Rv::At(n)) => Start::After(n),
    };
    let mut faults = WatchFaults::default();
    for (_, fault) in fired.response.into_iter().chain(fired.stream) {
        match fault {
            Fault::WatchGone => faults.gone = true,
            Fault::SilentWatch => faults.silent = true,
            Fault::LatencyBetweenEvents(d) => {
                faults.latency = Some(faults.latency.unwrap_or_default() + d)
            }
            Fault::AbortWatch { after_events } => {
                faults.abort_after = Some(
                    faults
                        .abort_after
                        .map_or(after_events, |a| a.min(after_events)),
                );
            }
            Fault::BadLine { after_events, line } => faults.lines.push((after_events, line)),
            _ => {}
        }
    }
    let repr = read.repr;
    let (kind, api_version) = {
        let state = shared.state();
        let info = &state.resources[rid];
        repr.object_type(&info.kind, &info.api_version())
    };
    let (tx, mut rx) = mpsc::channel::<Result<Bytes, io::Error>>(16);
    let control = shared.watch_control.subscribe();
    let watch = Watch {
        shared: shared.clone(),
        rid,
        namespace: namespace.map(str::to_owned),
        filter: options.filter,
        repr,
        table: read.table,
        kind,
        api_version,
        bookmarks: options.allow_bookmarks,
        timeout: options.timeout,
        faults,
        tx,
        token: shared.token.child_token(),
        sent: 0,
    };
    shared.open_watches.fetch_add(1, Ordering::SeqCst);
    tokio::spawn(async move {
        let shared = watch.shared.clone();
        let _ = watch.run(start, control).await;
        shared.open_watches.fetch_sub(1, Ordering::SeqCst);
    });
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// One log event's watch lines, each encoded at most once: by the first watcher that
/// needs it, then shared (a `Bytes` clone) by every other watcher that sees the same
/// bytes. A watcher with a selector may see a modification as `ADDED` or `DELETED`, and a
/// metadata-only watcher another object, so there is one slot per (representation, type).
#[derive(Debug, Default)]
pub(crate) struct EventLines {
    slots: [OnceLock<Bytes>; 6],
}

impl EventLines {
    /// The line for the object `object` makes as `event_type` in `repr`, encoded
    /// (and the object made) on first use.
    fn get(
        &self,
        repr: Repr,
        event_type: &'static str,
        object: impl FnOnce() -> Arc<StoredObject>,
    ) -> Bytes {
        let kind = match event_type {
            "ADDED" => 0,
            "MODIFIED" => 1,
            _ => 2,
        };
        let slot = match repr {
            Repr::Full => kind,
            Repr::Metadata => 3 + kind,
        };
        self.slots[slot]
            .get_or_init(|| event_line(event_type, &repr.render(&object())))
            .clone()
    }
}

/// The object a watcher is sent for one write.
enum Seen<'e> {
    /// The object as the write left it.
    Written(&'e Arc<StoredObject>),
    /// The object before the write, which took it out of the watcher's selection.
    LeftSelection(&'e Arc<StoredObject>),
}

/// `object` with its `resourceVersion` set to `rv`.
fn at_resource_version(object: &StoredObject, rv: u64) -> StoredObject {
    let mut value = object.value();
    if let Some(meta) = value
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        meta.insert("resourceVersion".to_owned(), json!(rv.to_string()));
    }
    StoredObject::from_value(object.key.clone(), rv, &value)
}

pub(crate) fn event_line(event_type: &str, object: &[u8]) -> Bytes {
    let mut line = BytesMut::with_capacity(object.len() + 40);
    line.put_slice(b"{\"type\":\"");
    line.put_slice(event_type.as_bytes());
    line.put_slice(b"\",\"object\":");
    line.put_slice(object);
    line.put_slice(b"}\n");
    line.freeze()
}

fn expired_line(requested: u64, floor: u64) -> Bytes {
    let status =
        ApiError::expired(format!("too old resource version: {requested} ({floor})")).to_status();
    event_line("ERROR", &serde_json::to_vec(&status).unwrap_or_default())
}

impl Watch {
    /// # Cancel safety
    /// Not meant to be cancelled except by dropping the whole task.
    async fn run(
        mut self,
        start: Start,
        mut control: broadcast::Receiver<WatchControl>,
    ) -> Result<(), Stop> {
        let deadline = self.timeout.map(|t| tokio::time::Instant::now() + t);
        if self.faults.gone {
            let (rv, floor) = {
                let state = self.shared.state();
                (state.rv, state.floor)
            };
            let requested = match start {
                Start::After(n) => n,
                Start::Initial { .. } => rv,
            };
            return self.write(expired_line(requested, floor)).await;
        }
        if self.faults.silent {
            loop {
                tokio::select! {
                    () = self.token.cancelled() => return Ok(()),
                    () = self.tx.closed() => return Ok(()),
                    () = sleep_until(deadline) => return Ok(()),
                    msg = control.recv() => match msg {
                        Ok(WatchControl::Drop) | Err(broadcast::error::RecvError::Closed) => return Ok(()),
                        _ => {}
                    },
                }
            }
        }
        self.write_due_lines().await?;
        // The RV when the watch began: it ends at the first retirement of its resource
        // (a deleted CRD) after that.
        let served_since;
        let mut rv_rx = self.shared.rv_rx.clone();
        rv_rx.borrow_and_update();
        let begun = {
            let state = self.shared.state();
            served_since = state.rv;
            match start {
                Start::Initial { .. } => Ok((
                    state.rv,
                    Some(state.snapshot(self.rid, self.namespace.as_deref())),
                )),
                Start::After(n) if n < state.floor => Err(expired_line(n, state.floor)),
                // A custom resource's watch cache starts with its CRD's creation or last
                // change: nothing older can be watched from.
                Start::After(n)
                    if let Some(since) = state.custom.storage_since(self.rid)
                        && n < since =>
                {
                    Err(expired_line(n, since))
                }
                Start::After(n) => Ok((n, None)),
            }
        };
        let (mut cursor, initial) = match begun {
            Ok(begun) => begun,
            Err(line) => return self.write(line).await,
        };
        // Periodic bookmarks carry the current resourceVersion and, as the real watch
        // cache filters every event at or below where the watch started, only come once
        // writes have moved it past that.
        let start_rv = cursor;
        if let Some(objects) = initial {
            for group in objects.chunks(BATCH) {
                let lines = group
                    .iter()
                    .filter(|object| self.filter.matches(object))
                    .map(|object| match self.table {
                        Some(table) => {
                            crate::table_watch::line(&self.shared, self.rid, table, "ADDED", object)
                        }
                        None => event_line("ADDED", &self.repr.render(object)),
                    })
                    .collect();
                self.send_events(lines).await?;
            }
            if let Start::Initial { end_bookmark: true } = start {
                self.write(self.bookmark(cursor, true)).await?;
            }
        }
        let schedule = BookmarkSchedule::new(
            self.shared.epoch,
            self.shared.config.bookmark_interval,
            deadline,
        );
        let mut next_bookmark = schedule.next_after(tokio::time::Instant::now());
        loop {
            rv_rx.borrow_and_update();
            loop {
                let (batch, retired_at) = {
                    let state = self.shared.state();
                    let retired_at = state.custom.storage_ended_since(self.rid, served_since);
                    let batch = if cursor < state.floor {
                        Err(state.floor)
                    } else {
                        let from = state.log.partition_point(|e| e.rv <= cursor);
                        let events: Vec<LogEvent> = state
                            .log
                            .range(from..)
                            .take_while(|e| retired_at.is_none_or(|end| e.rv <= end))
                            .take(BATCH)
                            .cloned()
                            .collect();
                        Ok(events)
                    };
                    (batch, retired_at)
                };
                let events = match batch {
                    Ok(events) => events,
                    Err(floor) => return self.write(expired_line(cursor, floor)).await,
                };
                let Some(last) = events.last().map(|e| e.rv) else {
                    if retired_at.is_some() {
                        // The resource is no longer served: the stream ends, as the real
                        // server's does when a CRD's storage is torn down.
                        return Ok(());
                    }
                    break;
                };
                let lines = events
                    .iter()
                    .filter(|event| event.resource == self.rid)
                    .filter_map(|event| {
                        let (event_type, object) = self.translate(event)?;
                        if let Some(table) = self.table {
                            let object = match object {
                                Seen::Written(object) => object.clone(),
                                Seen::LeftSelection(prev) => {
                                    Arc::new(at_resource_version(prev, event.rv))
                                }
                            };
                            let (shared, rid) = (&self.shared, self.rid);
                            return Some(crate::table_watch::line(
                                shared, rid, table, event_type, &object,
                            ));
                        }
                        Some(match object {
                            Seen::Written(object) => {
                                event.lines.get(self.repr, event_type, || object.clone())
                            }
                            Seen::LeftSelection(prev) => {
                                event.lines.get(self.repr, event_type, || {
                                    Arc::new(at_resource_version(prev, event.rv))
                                })
                            }
                        })
                    })
                    .collect();
                self.send_events(lines).await?;
                cursor = last;
            }
            // Biased: stop signals and immediate actions win over new events, so
            // `drop_watches()` followed by writes ends the watch before it sees them.
            tokio::select! {
                biased;
                () = self.token.cancelled() => return Ok(()),
                () = self.tx.closed() => return Ok(()),
                () = sleep_until(deadline) => return Ok(()),
                msg = control.recv() => match msg {
                    Ok(WatchControl::Drop) | Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    Ok(WatchControl::Line(line)) => self.write(Bytes::from_static(line.bytes())).await?,
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                },
                changed = rv_rx.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    coalesce(&rv_rx).await;
                    // What arrived while coalescing still wins over the events.
                    match control.try_recv() {
                        Ok(WatchControl::Drop) | Err(broadcast::error::TryRecvError::Closed) => return Ok(()),
                        Ok(WatchControl::Line(line)) => self.write(Bytes::from_static(line.bytes())).await?,
                        Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Lagged(_)) => {}
                    }
                },
                () = sleep_until(next_bookmark), if self.bookmarks && next_bookmark.is_some() => {
                    next_bookmark = next_bookmark.and_then(|due| schedule.next_after(due));
                    if cursor > start_rv {
                        self.write(self.bookmark(cursor, false)).await?;
                    }
                }
            }
        }
    }

    fn in_scope(&self, object: &StoredObject) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|ns| object.namespace.as_deref() == Some(ns))
            && self.filter.matches(object)
    }

    /// What this watcher sees of a write: selectors turn modifications into ADDED/DELETED
    /// when an object starts/stops matching. As the API server's watch cache
    /// (`cacheWatcher.convertToWatchEvent`), an object that stops matching arrives as
    /// `DELETED` carrying its *previous* state (the last one the watcher could see)
    /// at the write's resourceVersion.
    fn translate<'e>(&self, event: &'e LogEvent) -> Option<(&'static str, Seen<'e>)> {
        let now = self.in_scope(&event.object);
        let prev = event.prev.as_ref().filter(|p| self.in_scope(p));
        let written = Seen::Written(&event.object);
        match (event.event_type, prev, now) {
            (EventType::Added, _, true) => Some(("ADDED", written)),
            (EventType::Modified, Some(_), true) => Some(("MODIFIED", written)),
            (EventType::Modified, None, true) => Some(("ADDED", written)),
            (EventType::Modified, Some(prev), false) => {
                Some(("DELETED", Seen::LeftSelection(prev)))
            }
            (EventType::Deleted, Some(_), _) => Some(("DELETED", written)),
            _ => None,
        }
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rv.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let object =
            json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": metadata});
        event_line("BOOKMARK", &serde_json::to_vec(&object).unwrap_or_default())
    }

    /// Writes one chunk, giving up when the client is gone or the server stops.
    ///
    /// # Cancel safety
    /// Cancel safe: a chunk not yet accepted by the channel is dropped, never half-sent.
    async fn write(&mut self, bytes: Bytes) -> Result<(), Stop> {
        tokio::select! {
            sent = self.tx.send(Ok(bytes)) => sent.map_err(|_| Stop),
            () = self.token.cancelled() => Err(Stop),
        }
    }

    /// Writes whole event lines: as one chunk when no fault acts between two events of
    /// this watch (one channel send and one socket write for the lot, so a watcher that
    /// fell behind catches up in few writes), else one by one through
    /// [`send_event`](Self::send_event).
    ///
    /// # Cancel safety
    /// Not cancel safe (events may be lost); only ever cancelled with the whole task.
    async fn send_events(&mut self, lines: Vec<Bytes>) -> Result<(), Stop> {
        let per_event_faults = self.faults.latency.is_some()
            || self.faults.abort_after.is_some()
            || !self.faults.lines.is_empty();
        if per_event_faults || lines.len() < 2 {
            for line in lines {
                self.send_event(line).await?;
            }
            return Ok(());
        }
        let mut chunk = BytesMut::with_capacity(lines.iter().map(Bytes::len).sum());
        for line in &lines {
            chunk.extend_from_slice(line);
        }
        self.write(chunk.freeze()).await?;
        self.sent += lines.len();
        Ok(())
    }

    /// Writes one event, applying latency / abort / bad-line faults.
    ///
    /// # Cancel safety
    /// Not cancel safe (the event may be lost); only ever cancelled with the whole task.
    async fn send_event(&mut self, line: Bytes) -> Result<(), Stop> {
        if let Some(delay) = self.faults.latency {
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.token.cancelled() => return Err(Stop),
            }
        }
        if self.faults.abort_after == Some(self.sent) {
            let half = line.slice(..line.len() / 2);
            self.write(half).await?;
            // Let the HTTP layer take and flush what was written before the connection
            // is cut, so the client really sees a chunk that stops mid-line.
            while self.tx.capacity() < self.tx.max_capacity() && !self.tx.is_closed() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = self
                .tx
                .send(Err(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "injected watch abort",
                )))
                .await;
            return Err(Stop);
        }
        self.write(line).await?;
        self.sent += 1;
        self.write_due_lines().await
    }

    /// Writes the `BadLine` faults due after `self.sent` events.
    ///
    /// # Cancel safety
    /// Not cancel safe (lines are taken before written); only cancelled with the task.
    async fn write_due_lines(&mut self) -> Result<(), Stop> {
        let sent = self.sent;
        let due: Vec<BadLine> = self
            .faults
            .lines
            .iter()
            .filter(|(after, _)| *after == sent)
            .map(|(_, l)| *l)
            .collect();
        self.faults.lines.retain(|(after, _)| *after != sent);
        for line in due {
            self.write(Bytes::from_static(line.bytes())).await?;
        }
        Ok(())
    }
}

/// How many times a woken watcher lets the other tasks run while writes keep coming,
/// before it reads the log.
const COALESCE_YIELDS: usize = 128;

/// Lets the other tasks run (other watchers, the writers) for as long as writes keep
/// arriving, up to [`COALESCE_YIELDS`] times, so that a watcher woken by one write reads
/// the writes that follow it in the same pass and sends them in one chunk. With many
/// watchers every write wakes every one of them; without this each would send one
/// event per wake-up (a socket write per watcher per event). No time passes: it only
/// reorders tasks.
///
/// # Cancel safety
/// Cancel-safe: it only observes.
async fn coalesce(rv_rx: &watch::Receiver<u64>) {
    for _ in 0..COALESCE_YIELDS {
        let seen = *rv_rx.borrow();
        tokio::task::yield_now().await;
        if *rv_rx.borrow() == seen {
            break;
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
///
/// # Cancel safety
/// Cancel safe.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
