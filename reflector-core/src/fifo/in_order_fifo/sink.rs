//! The reflector's batching, streaming and watermark hooks ([`StoreSink`]) on the
//! in-order FIFO.

use std::sync::Arc;

use super::InOrderFifo;
use super::state::{Mark, Queued};
use crate::fifo::{Delta, DeltaType};
use crate::object::Object;
use crate::store::{StoreError, StoreSink, WatchAction};

impl<K: Object> StoreSink<K> for InOrderFifo<K> {
    /// Queues the run's events in order under one lock with one wake-up; keys and
    /// transforms are computed before locking.
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, StoreError),
    ) {
        let mut entries = Vec::with_capacity(run.len());
        for (action, obj) in run.drain(..) {
            let delta_type = match action {
                WatchAction::Add => DeltaType::Added,
                WatchAction::Update => DeltaType::Updated,
                WatchAction::Delete => DeltaType::Deleted,
            };
            match self.options.key_of(&obj) {
                Ok(key) => {
                    let obj = self.options.transformed(obj);
                    entries.push((
                        action,
                        Queued::delta(key, Delta::new(delta_type, obj), Mark::Object),
                    ));
                }
                Err(e) => failed(action, e.into()),
            }
        }
        if entries.is_empty() {
            return;
        }
        let first_action = entries[0].0;
        if let Err(e) = self.push(entries.into_iter().map(|(_, q)| q)) {
            // Closed: every event of the run was refused; one report suffices.
            failed(first_action, e);
        }
    }

    /// With atomic events, queues an [`Entry::Bookmark`](super::Entry::Bookmark) at
    /// `resource_version` unless the last queued entry already brings the cache
    /// there (the run ended with an event of that version), so the consumer's
    /// watermark moves on an idle watch too. Without, nothing (as client-go).
    fn handed_over(&self, resource_version: &str) {
        if !self.atomic || resource_version.is_empty() {
            return;
        }
        {
            let mut state = self.lock();
            if state.life.closed || state.queued_rv == resource_version {
                return;
            }
            state.push_all_locked([Queued::bookmark(resource_version)]);
        }
        self.core.notify.notify_one();
    }

    /// Transformed, then the cached copy if it is exactly the cached object.
    fn prepare_listed(&self, obj: Arc<K>, look_up: bool) -> Arc<K> {
        self.options.prepare_listed(obj, look_up)
    }

    /// Whether the cache holds anything, or anything is queued or being applied
    /// (which the consumer may yet add to it).
    fn may_cache_listed(&self) -> bool {
        let idle = self.lock().is_idle();
        self.options.may_cache_listed(idle)
    }

    /// Queues the page with a `Replaced` delta per item if it belongs to a first
    /// list into an empty FIFO (never populated, nothing queued or being processed,
    /// nothing cached); later pages follow a first page it took. The consumer applies
    /// these while the rest of the list is read, each marked as in the initial list;
    /// [`has_synced`](InOrderFifo::has_synced) waits for
    /// [`finish_list_stream`](StoreSink::finish_list_stream). Refuses (`Ok(false)`)
    /// otherwise, or if a key cannot be computed (the final `replace` reports it).
    fn stream_list_page(&self, items: &[Arc<K>], first_page: bool) -> Result<bool, StoreError> {
        let Ok(listed) = self.keyed_listed(items.iter().cloned(), false) else {
            return Ok(false);
        };
        let mut state = self.lock();
        if state.life.closed {
            return Err(StoreError::Closed);
        }
        let idle = state.is_idle();
        let streaming = state
            .life
            .stream_page_locked(first_page, || idle && self.options.cache_is_empty());
        if !streaming {
            return Ok(false);
        }
        state.push_all_locked(listed.into_iter().map(|(key, obj)| {
            Queued::delta(key, Delta::new(DeltaType::Replaced, obj), Mark::None)
        }));
        let any = !state.queue.is_empty();
        drop(state);
        if any {
            self.core.notify.notify_one();
        }
        Ok(true)
    }

    /// Queues `rest` as the pages were queued, then the end of the list: a bookmark
    /// at the list's resource version (with atomic events; without, the last entry
    /// carries it). The FIFO is then populated, every entry still queued the initial
    /// population. If no streamed list is under way, this is `replace(rest)`.
    fn finish_list_stream(
        &self,
        rest: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let listed = self.keyed_listed(rest.iter().cloned(), false)?;
        let mut state = self.lock();
        if state.life.closed {
            return Err(StoreError::Closed);
        }
        if !state.life.streaming {
            drop(state);
            tracing::debug!("InOrderFifo: a streamed list was started over; replacing");
            return self.replace_keyed(listed, resource_version);
        }
        let mut entries: Vec<Queued<K>> = listed
            .into_iter()
            .map(|(key, obj)| Queued::delta(key, Delta::new(DeltaType::Replaced, obj), Mark::None))
            .collect();
        if !resource_version.is_empty() {
            if self.atomic {
                entries.push(Queued::bookmark(resource_version));
            } else if let Some(last) = entries.last_mut() {
                last.mark = Mark::Version(resource_version.to_owned());
            }
        }
        state.push_all_locked(entries);
        self.end_list(state);
        Ok(())
    }

    /// [`replace`](crate::store::Store::replace) without transforming the items again.
    fn replace_listed(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        self.replace_keyed(self.keyed_listed(items, false)?, resource_version)
    }
}
