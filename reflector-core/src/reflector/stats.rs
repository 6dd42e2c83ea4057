//! Counters a reflector keeps: lists, watches, relists, events and errors by reason.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of a reflector's counters, from
/// [`Reflector::stats`](super::Reflector::stats).
///
/// # Example
/// ```
/// let s = reflector::ReflectorStats::default();
/// assert_eq!(s.lists, 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReflectorStats {
    /// List calls that completed (one per full list, however many pages).
    pub lists: u64,
    /// Pages requested.
    pub list_pages: u64,
    /// Lists after the first one.
    pub relists: u64,
    /// Watch requests started (watch-list requests included).
    pub watches: u64,
    /// Watch events handled (added, modified, deleted, bookmarks).
    pub events: u64,
    /// Bookmark events among them.
    pub bookmarks: u64,
    /// Events dropped because their object was of another kind.
    pub unexpected_kind_events: u64,
    /// Store resyncs triggered by the resync timer.
    pub resyncs: u64,
    /// Errors: resource version expired (410).
    pub errors_expired: u64,
    /// Errors: resource version too large.
    pub errors_too_large_resource_version: u64,
    /// Errors: 429 Too Many Requests.
    pub errors_too_many_requests: u64,
    /// Errors: 500 Internal Error.
    pub errors_internal: u64,
    /// Errors: connection refused.
    pub errors_connection_refused: u64,
    /// Errors: a malformed watch line or body.
    pub errors_decode: u64,
    /// Errors: very short watches.
    pub errors_very_short_watch: u64,
    /// Errors of any other kind.
    pub errors_other: u64,
    /// Event handler calls that panicked (caught and logged by the informer that
    /// owns the reflector; zero for a bare reflector).
    pub handler_panics: u64,
    /// The resource version the informer's cache has reached
    /// ([`SharedIndexInformer::store_resource_version`](crate::informer::SharedIndexInformer::store_resource_version)),
    /// as an integer: zero before the first list, when it is not an integer, and
    /// for a bare reflector. A gauge, not a counter.
    pub store_resource_version: u64,
    /// Items waiting in the informer's queue at the time of reading (a gauge, not
    /// a counter; filled in by the informer that owns the reflector, zero for a
    /// bare reflector).
    pub queued_items: u64,
}

/// The live counters behind [`ReflectorStats`].
#[derive(Debug, Default)]
pub(crate) struct StatsCounters {
    pub(crate) lists: AtomicU64,
    pub(crate) list_pages: AtomicU64,
    pub(crate) relists: AtomicU64,
    pub(crate) watches: AtomicU64,
    pub(crate) events: AtomicU64,
    pub(crate) bookmarks: AtomicU64,
    pub(crate) unexpected_kind_events: AtomicU64,
    pub(crate) resyncs: AtomicU64,
    pub(crate) errors_expired: AtomicU64,
    pub(crate) errors_too_large_resource_version: AtomicU64,
    pub(crate) errors_too_many_requests: AtomicU64,
    pub(crate) errors_internal: AtomicU64,
    pub(crate) errors_connection_refused: AtomicU64,
    pub(crate) errors_decode: AtomicU64,
    pub(crate) errors_very_short_watch: AtomicU64,
    pub(crate) errors_other: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

impl StatsCounters {
    pub(crate) fn snapshot(&self) -> ReflectorStats {
        ReflectorStats {
            lists: self.lists.load(Relaxed),
            list_pages: self.list_pages.load(Relaxed),
            relists: self.relists.load(Relaxed),
            watches: self.watches.load(Relaxed),
            events: self.events.load(Relaxed),
            bookmarks: self.bookmarks.load(Relaxed),
            unexpected_kind_events: self.unexpected_kind_events.load(Relaxed),
            resyncs: self.resyncs.load(Relaxed),
            errors_expired: self.errors_expired.load(Relaxed),
            errors_too_large_resource_version: self.errors_too_large_resource_version.load(Relaxed),
            errors_too_many_requests: self.errors_too_many_requests.load(Relaxed),
            errors_internal: self.errors_internal.load(Relaxed),
            errors_connection_refused: self.errors_connection_refused.load(Relaxed),
            errors_decode: self.errors_decode.load(Relaxed),
            errors_very_short_watch: self.errors_very_short_watch.load(Relaxed),
            errors_other: self.errors_other.load(Relaxed),
            // Kept by the informer, which fills them in.
            handler_panics: 0,
            store_resource_version: 0,
            queued_items: 0,
        }
    }

    /// Counts an error under its reason.
    pub(crate) fn count_error(&self, e: &crate::listwatch::ListWatchError) {
        let c = if e.is_expired() {
            &self.errors_expired
        } else if e.is_too_large_resource_version() {
            &self.errors_too_large_resource_version
        } else if e.is_too_many_requests() {
            &self.errors_too_many_requests
        } else if e.is_internal_error() {
            &self.errors_internal
        } else if e.is_connection_refused() {
            &self.errors_connection_refused
        } else if matches!(e, crate::listwatch::ListWatchError::Decode { .. }) {
            &self.errors_decode
        } else {
            &self.errors_other
        };
        bump(c);
    }
}
