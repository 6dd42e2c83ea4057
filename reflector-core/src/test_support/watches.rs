//! Watch streams the test drives, as client-go's `watch.NewFake()`, and the events
//! sent down them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{TypeMeta, WatchEvent, WatchParams};
use kube::core::watch::{Bookmark, BookmarkMeta};

use super::api_errors::api_error;
use super::lister_watchers::WatchResult;
use super::objects::pod;
use crate::listwatch::{ListWatchError, WatchStream};

/// The sending end of a driven watch.
pub(crate) type Sender = mpsc::UnboundedSender<Result<WatchEvent<Pod>, ListWatchError>>;

/// A watch the test drives, as client-go's `watch.NewFake()`; dropping the sender
/// closes it.
pub(crate) fn fake_watch() -> (Sender, WatchStream<Pod>) {
    let (tx, rx) = mpsc::unbounded();
    (tx, rx.boxed())
}

/// A watch that never ends and never sends.
pub(crate) fn pending_watch() -> WatchStream<Pod> {
    futures::stream::pending().boxed()
}

/// A watch that ends at once, as a stopped fake watcher.
pub(crate) fn closed_watch() -> WatchStream<Pod> {
    futures::stream::empty().boxed()
}

/// A fake watch already holding `events`, its sender dropped (the stream ends
/// after them).
pub(crate) fn watch_of(events: impl IntoIterator<Item = WatchEvent<Pod>>) -> WatchStream<Pod> {
    let (tx, stream) = fake_watch();
    send(&tx, events);
    stream
}

/// Sends `events` down a fake watch.
pub(crate) fn send(tx: &Sender, events: impl IntoIterator<Item = WatchEvent<Pod>>) {
    for event in events {
        tx.unbounded_send(Ok(event)).unwrap();
    }
}

/// A watcher that hands out `stream` to the first watch and fails any other.
pub(crate) fn watch_once(
    stream: WatchStream<Pod>,
) -> impl Fn(&WatchParams, &str) -> WatchResult + Send + Sync + 'static {
    let stream = Mutex::new(Some(stream));
    move |_, _| {
        stream
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| api_error(500, "InternalError", "second watch"))
    }
}

/// A counter of watch calls, and a watcher that answers call `n` (from 0) with
/// `answer(n)`.
pub(crate) fn counted_watch(
    answer: impl Fn(usize) -> WatchResult + Send + Sync + 'static,
) -> (
    Arc<AtomicUsize>,
    impl Fn(&WatchParams, &str) -> WatchResult + Send + Sync + 'static,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    (calls, move |_: &WatchParams, _: &str| {
        answer(c.fetch_add(1, Ordering::SeqCst))
    })
}

/// A watcher that never sends: every watch stays open until the round is stopped.
pub(crate) fn never_send(_: &WatchParams, _: &str) -> WatchResult {
    Ok(pending_watch())
}

// ---------- events ----------

/// A `BOOKMARK` at `rv`, annotated as the end of the initial events if
/// `initial_events_end`.
pub(crate) fn bookmark(rv: &str, initial_events_end: bool) -> WatchEvent<Pod> {
    let mut annotations = BTreeMap::new();
    if initial_events_end {
        annotations.insert("k8s.io/initial-events-end".to_owned(), "true".to_owned());
    }
    WatchEvent::Bookmark(Bookmark {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "Pod".into(),
        },
        metadata: BookmarkMeta {
            resource_version: rv.into(),
            annotations,
        },
    })
}

/// `ADDED` of `pod(name, rv)`.
pub(crate) fn added(name: &str, rv: &str) -> WatchEvent<Pod> {
    WatchEvent::Added(pod(name, rv))
}

/// `MODIFIED` of `pod(name, rv)`.
pub(crate) fn modified(name: &str, rv: &str) -> WatchEvent<Pod> {
    WatchEvent::Modified(pod(name, rv))
}

/// The four adds that follow the first object in client-go's
/// TestReflectorListAndWatch: bar@3, baz@4, qux@5, zoo@6.
pub(crate) fn four_more_adds() -> [WatchEvent<Pod>; 4] {
    [("bar", "3"), ("baz", "4"), ("qux", "5"), ("zoo", "6")].map(|(n, rv)| added(n, rv))
}
