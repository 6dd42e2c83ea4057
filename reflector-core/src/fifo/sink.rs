//! The reflector's batching, streaming and watermark hooks ([`StoreSink`]) on the
//! queue, for both modes.

use std::sync::Arc;

use super::{DeltaType, Entry, Fifo};
use crate::object::Object;
use crate::store::{SinkError, StoreSink, WatchAction, unchanged};

impl<K: Object> StoreSink<K> for Fifo<K> {
    /// Queues the run's events in order under one lock, with one wake-up; keys and
    /// transforms are computed before locking. Per key, a run with a deletion waits
    /// for a running `pop` callback, as [`delete`](Fifo::delete) does.
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, SinkError),
    ) {
        let mut changes = Vec::with_capacity(run.len());
        let mut deletes = false;
        for (action, obj) in run.drain(..) {
            let delta_type = match action {
                WatchAction::Add => DeltaType::Added,
                WatchAction::Update => DeltaType::Updated,
                WatchAction::Delete => DeltaType::Deleted,
            };
            match self.key_of(&obj) {
                Ok(key) => {
                    deletes |= action == WatchAction::Delete;
                    changes.push((action, delta_type, key, self.transformed(obj)));
                }
                Err(e) => failed(action, e.into()),
            }
        }
        if changes.is_empty() {
            return;
        }
        let processing = (deletes && self.per_key())
            .then(|| self.lock_processing())
            .flatten();
        let mut state = self.lock();
        if state.life.closed {
            drop(state);
            for (action, ..) in changes {
                failed(action, SinkError::Closed);
            }
            return;
        }
        let flipped = state.life.written_locked();
        let mut newly_queued = 0_usize;
        for (_, delta_type, key, obj) in changes {
            newly_queued += usize::from(self.queue_change_locked(&mut state, delta_type, key, obj));
        }
        drop(state);
        drop(processing);
        self.announce_synced(flipped);
        // Every waiting popper may find work now; one that has not registered yet
        // checks the queue after registering, so nothing is missed.
        match newly_queued {
            0 => {}
            1 => self.notify.notify_one(),
            _ => self.notify.notify_waiters(),
        }
    }

    /// In order (with atomic lists), queues an [`Entry::Bookmark`] at
    /// `resource_version` unless the last entry queued already brings the cache
    /// there, so the consumer's watermark moves on an idle watch too. Otherwise notes
    /// the version, and wakes the consumer to answer it if nothing is queued.
    fn handed_over(&self, resource_version: &str) {
        let wake = {
            let mut state = self.lock();
            if state.life.closed {
                return;
            }
            let since = state.queued_num;
            let moved = state.note_version_locked(resource_version);
            if moved && self.atomic {
                let bookmark = Entry::Bookmark {
                    resource_version: resource_version.to_owned(),
                };
                state.push_locked(None, bookmark, since);
            }
            moved && (self.atomic || state.queue.is_empty())
        };
        if wake {
            self.notify.notify_one();
        }
    }

    /// Transformed, then the cached copy if it is exactly the cached object (the
    /// comparison is after the transform, as the cache holds transformed objects).
    fn prepare_listed(&self, obj: Arc<K>, look_up: bool) -> Arc<K> {
        let obj = self.transformed(obj);
        let Some(cache) = self.cache.as_ref().filter(|c| look_up && !c.is_empty()) else {
            return obj;
        };
        let Ok(key) = self.key_of(&obj) else {
            return obj;
        };
        unchanged(cache.get(&key), &obj).unwrap_or(obj)
    }

    /// Whether the cache holds anything, or anything is queued or being applied
    /// (which the consumer may yet add to it).
    fn may_cache_listed(&self) -> bool {
        let idle = self.lock().is_idle();
        self.cache.as_ref().is_some_and(|c| !idle || !c.is_empty())
    }

    /// Queues the page, a listed delta per item, if it belongs to a first list into
    /// an empty queue: with `first_page`, the queue must never have been populated
    /// and hold nothing, queued or being processed, nor may the cache; later pages
    /// follow a first page it took. The consumer pops these while the rest of the
    /// list is read, each marked as in the initial list;
    /// [`has_synced`](Fifo::has_synced) waits for
    /// [`finish_list_stream`](StoreSink::finish_list_stream). Refuses (`Ok(false)`)
    /// otherwise, or if a key cannot be computed (the final `replace` reports it).
    ///
    /// Unlike client-go, whose `Replace` queues a list only once it is complete, the
    /// first list's objects reach handlers while later pages are still being read.
    /// Nothing else changes: nothing could be deleted, nothing compared, and a list
    /// that fails part way is reconciled by the next one's `replace`.
    fn stream_list_page(&self, items: &[Arc<K>], first_page: bool) -> Result<bool, SinkError> {
        let Ok(listed) = self.keyed(items.iter().cloned(), false) else {
            return Ok(false);
        };
        let mut state = self.lock();
        if state.life.closed {
            return Err(SinkError::Closed);
        }
        let idle = state.is_idle();
        let cache_is_empty = self.cache.as_ref().is_none_or(|c| c.is_empty());
        if !state
            .life
            .stream_page_locked(first_page, || idle && cache_is_empty)
        {
            return Ok(false);
        }
        let (since, listed_type, merge) = (state.queued_num, self.listed_type(), self.per_key());
        for (key, obj) in listed {
            state.push_deltas_locked(key, super::Delta::new(listed_type, obj), since, merge);
        }
        let any = !state.queue.is_empty();
        drop(state);
        if any {
            self.notify.notify_waiters();
        }
        Ok(true)
    }

    /// Queues `rest` as the pages were queued, then ends the list at its resource
    /// version (in order with atomic lists, with a bookmark at it): the queue is
    /// populated, and everything still queued is the initial population
    /// [`has_synced`](Fifo::has_synced) waits for. If no streamed list is under way
    /// (the list started over after its streamed pages, on an expired continue token,
    /// and found the queue no longer empty), this is `replace(rest)`.
    fn finish_list_stream(
        &self,
        rest: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<(), SinkError> {
        let listed = self.keyed(rest, false)?;
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(SinkError::Closed);
        }
        if !state.life.streaming {
            drop(state);
            drop(processing);
            tracing::debug!("a streamed list was started over; replacing");
            return Ok(self.replace_keyed(listed, resource_version)?);
        }
        let (since, listed_type, merge) = (state.queued_num, self.listed_type(), self.per_key());
        for (key, obj) in listed {
            state.push_deltas_locked(key, super::Delta::new(listed_type, obj), since, merge);
        }
        if self.atomic && !resource_version.is_empty() {
            let bookmark = Entry::Bookmark {
                resource_version: resource_version.to_owned(),
            };
            state.push_locked(None, bookmark, since);
        }
        state.note_version_locked(resource_version);
        drop(processing);
        self.end_list(state);
        Ok(())
    }

    /// [`replace`](Fifo::replace) without transforming the items again.
    fn replace_listed(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), SinkError> {
        let listed = self.keyed(items, false)?;
        Ok(self.replace_keyed(listed, resource_version)?)
    }

    /// [`resync`](Fifo::resync).
    fn resync(&self) -> Result<(), SinkError> {
        Ok(Fifo::resync(self)?)
    }
}
