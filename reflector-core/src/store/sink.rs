//! The reflector's side of what it writes into: [`StoreSink`], the store verbs a
//! reflector uses plus the batching and streaming hooks only some sinks implement.
//! Crate-private: a reflector is given its sink by type — a
//! [`Fifo`](crate::fifo::Fifo), a cache's [`Writer`](super::Writer) or a user's
//! [`Store`] — and each implements this itself; nothing is recovered at run time.

use std::sync::Arc;

use super::{Store, StoreError};
use crate::object::{KeyError, Object};

/// The store call a watch event stands for: `ADDED` → add, `MODIFIED` → update,
/// `DELETED` → delete. A reflector hands a sink the events of one poll together, as
/// `(WatchAction, object)` pairs, through [`StoreSink::apply_watch_run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WatchAction {
    /// An `ADDED` event.
    Add,
    /// A `MODIFIED` event.
    Update,
    /// A `DELETED` event.
    Delete,
}

impl WatchAction {
    /// The store call's name: `add`, `update` or `delete`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WatchAction::Add => "add",
            WatchAction::Update => "update",
            WatchAction::Delete => "delete",
        }
    }
}

impl std::fmt::Display for WatchAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a sink refused a write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SinkError {
    /// A store's error (a key the key function cannot compute, say).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The queue was closed: its consumer stopped.
    #[error("the queue is closed")]
    Closed,
}

impl From<KeyError> for SinkError {
    fn from(e: KeyError) -> Self {
        SinkError::Store(e.into())
    }
}

/// What a reflector writes through: the store verbs it uses, and the batching and
/// streaming hooks of the queue and the cache (every hook defaults to what a plain
/// store does with the verbs alone).
pub(crate) trait StoreSink<K: Object>: Send + Sync {
    /// Applies a run of watch events in order, each as the [`WatchAction`]'s own
    /// call would, and leaves `run` empty; `failed` is told of every event the sink
    /// refused. A reflector hands over the events it takes from the stream in one
    /// poll this way (up to 1024), then reports their resource versions.
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, SinkError),
    );

    /// Re-delivers every object to whoever consumes the sink (a no-op for a cache).
    ///
    /// # Errors
    /// The sink's.
    fn resync(&self) -> Result<(), SinkError>;

    /// Ends a list no page of which the sink took: replaces the content with `items`,
    /// each [`prepare_listed`](StoreSink::prepare_listed) already (a queue does not
    /// transform them again), at `resource_version`.
    ///
    /// # Errors
    /// The sink's; nothing is replaced then.
    fn replace_listed(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), SinkError>;

    /// Told the resource version of every watch event the reflector handles, bookmarks
    /// included, as client-go's optional `ResourceVersionUpdater`. Default: ignored.
    fn update_resource_version(&self, _resource_version: &str) {}

    /// Told, once per run of watch events ([`apply_watch_run`](StoreSink::apply_watch_run)),
    /// the resource version through which the reflector has handed everything over:
    /// the run's last event's or bookmark's (a bookmark's version counts once every
    /// event before it is handed over). Lists carry theirs in
    /// [`replace_listed`](StoreSink::replace_listed) and
    /// [`finish_list_stream`](StoreSink::finish_list_stream). The cache's resource
    /// version follows from these once what was handed over is applied. Default:
    /// ignored.
    #[doc(alias = "Bookmark")]
    fn handed_over(&self, _resource_version: &str) {}

    /// One object of a list as the sink will keep it, handed over before the list
    /// ends ([`stream_list_page`](StoreSink::stream_list_page),
    /// [`finish_list_stream`](StoreSink::finish_list_stream),
    /// [`replace_listed`](StoreSink::replace_listed)), which take it as it is: the
    /// queue's transform applied, and, with `look_up`, the copy the cache already holds
    /// if `obj` is exactly that object ([`unchanged`](super::unchanged): same
    /// resourceVersion *and* same content; a real API server changes what a read
    /// returns without a new resourceVersion when a CRD's schema adds a default). So a
    /// relist holds one copy of every unchanged object rather than two (its peak memory
    /// is the old cache plus what changed, not twice the cache). The reflector calls it
    /// for every listed object as its page arrives; `look_up` is what
    /// [`may_cache_listed`](StoreSink::may_cache_listed) said as the list started.
    /// Default: `obj`.
    fn prepare_listed(&self, obj: Arc<K>, _look_up: bool) -> Arc<K> {
        obj
    }

    /// Asked as a list starts, before any of its objects is looked up by
    /// [`prepare_listed`](StoreSink::prepare_listed): whether such a lookup may find
    /// one of them. `false` promises that the cache is empty and that nothing queued
    /// for it or being applied can fill it but the list's own objects: an object
    /// cached while the list is read then came from the list itself, whose keys are
    /// unique, so every lookup would miss, and the reflector makes none (nor builds
    /// their keys). Default: `true`.
    fn may_cache_listed(&self) -> bool {
        true
    }

    /// Offered one page of a list still being read, so the consumer can start on its
    /// objects before the last page is in; `first_page` says the page starts a list
    /// (its first page, or the single page of a list started over). Returns whether
    /// the sink took the page; if it did, the reflector ends the list with
    /// [`finish_list_stream`](StoreSink::finish_list_stream) and the items no page
    /// handed over, instead of [`replace_listed`](StoreSink::replace_listed). The
    /// items are [`prepare_listed`](StoreSink::prepare_listed) already.
    ///
    /// A sink takes pages only of a first list into an empty queue (nothing queued,
    /// nothing cached, never populated), where a relist would find nothing to delete
    /// and nothing to compare against, so taking the list page by page changes only
    /// *when* objects arrive. Default: never (`Ok(false)`).
    ///
    /// # Errors
    /// [`SinkError::Closed`] on a closed queue.
    fn stream_list_page(&self, _items: &[Arc<K>], _first_page: bool) -> Result<bool, SinkError> {
        Ok(false)
    }

    /// Ends a list whose pages [`stream_list_page`](StoreSink::stream_list_page) took:
    /// `rest` holds the listed items no page handed over, `resource_version` is the
    /// list's. Default: [`replace_listed`](StoreSink::replace_listed) with `rest` (a
    /// sink that takes no page never sees this call).
    ///
    /// # Errors
    /// As [`replace_listed`](StoreSink::replace_listed).
    fn finish_list_stream(
        &self,
        rest: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<(), SinkError> {
        self.replace_listed(rest, resource_version)
    }
}

/// A user's [`Store`] behind a reflector: one verb per event, every hook's default.
pub(crate) struct PlainStore<K>(pub(crate) Arc<dyn Store<K>>);

impl<K: Object> StoreSink<K> for PlainStore<K> {
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, SinkError),
    ) {
        for (action, obj) in run.drain(..) {
            let result = match action {
                WatchAction::Add => self.0.add(obj),
                WatchAction::Update => self.0.update(obj),
                WatchAction::Delete => self.0.delete(obj),
            };
            if let Err(e) = result {
                failed(action, e.into());
            }
        }
    }

    fn resync(&self) -> Result<(), SinkError> {
        Ok(self.0.resync()?)
    }

    fn replace_listed(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), SinkError> {
        Ok(self.0.replace(items, resource_version)?)
    }
}
