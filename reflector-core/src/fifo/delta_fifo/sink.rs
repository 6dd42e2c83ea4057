//! The reflector's batching and streaming hooks ([`StoreSink`]) on the DeltaFifo.

use super::*;

/// The reflector's batching and streaming hooks.
impl<K: Object> StoreSink<K> for DeltaFifo<K> {
    /// Queues the run's adds and updates under one lock and wakes the poppers once
    /// per stretch between deletions; a deletion is [`delete`](Store::delete)'s own
    /// (it consults the known objects under the processing lock). Keys are computed
    /// before locking, so a popper is never kept waiting on them.
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, StoreError),
    ) {
        let mut keyed = Vec::with_capacity(run.len());
        let mut events = run.drain(..);
        loop {
            let mut deletion = None;
            for (action, obj) in events.by_ref() {
                if action == WatchAction::Delete {
                    deletion = Some(obj);
                    break;
                }
                match self.options.key_of(&obj) {
                    Ok(key) => keyed.push((action, key, obj)),
                    Err(e) => failed(action, e.into()),
                }
            }
            if !keyed.is_empty() {
                self.queue_watch_run(&mut keyed, failed);
            }
            match deletion {
                Some(obj) => {
                    if let Err(e) = self.delete(obj) {
                        failed(WatchAction::Delete, e);
                    }
                }
                None => break,
            }
        }
    }

    /// Notes the version for the consumer's watermark (see
    /// [`pop_batch`](DeltaFifo::pop_batch)); wakes the consumer if nothing is
    /// queued, so the watermark moves without waiting for another event.
    fn handed_over(&self, resource_version: &str) {
        let idle_with_news = Self::hand_over_locked(&mut self.lock(), resource_version);
        if idle_with_news {
            self.core.notify.notify_one();
        }
    }

    /// Transformed, then the known object if it is exactly that object.
    fn prepare_listed(&self, obj: Arc<K>, look_up: bool) -> Arc<K> {
        self.options.prepare_listed(obj, look_up)
    }

    /// Whether the known objects hold anything, or anything is queued or being
    /// processed (which the consumer may yet add to them).
    fn may_cache_listed(&self) -> bool {
        // The processing lock makes the check see popped items as cached.
        let _processing = self.lock_processing();
        let idle = self.lock().queue.is_empty();
        self.options.may_cache_listed(idle)
    }

    /// Queues the page with a `Replaced` (or `Sync`) delta per item, as `replace`
    /// would, if the page belongs to a first list into an empty FIFO: with
    /// `first_page`, the FIFO must never have been populated and hold nothing, nor
    /// may the known objects; later pages follow a first page it took. The consumer
    /// pops these items while the rest of the list is read, each marked as in the
    /// initial list; [`has_synced`](DeltaFifo::has_synced) waits for
    /// [`finish_list_stream`](StoreSink::finish_list_stream). Refuses (`Ok(false)`)
    /// otherwise, or if a key cannot be computed (the final `replace` reports it).
    ///
    /// Unlike client-go, whose `Replace` queues a list only once it is complete,
    /// the first list's objects reach handlers while later pages are still being
    /// read. Nothing else changes: nothing could be deleted, nothing compared, and a
    /// list that fails part way is reconciled by the next one's `replace`.
    fn stream_list_page(&self, items: &[Arc<K>], first_page: bool) -> Result<bool, StoreError> {
        let Ok(keyed) = self.keyed(items.iter().cloned()) else {
            return Ok(false);
        };
        // The processing lock makes the emptiness check see popped items as cached.
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(StoreError::Closed);
        }
        let idle = state.queue.is_empty();
        let streaming = state
            .life
            .stream_page_locked(first_page, || idle && self.options.cache_is_empty());
        drop(processing);
        if !streaming {
            return Ok(false);
        }
        self.queue_listed_locked(&mut state, keyed);
        let any_queued = !state.queue.is_empty();
        drop(state);
        if any_queued {
            self.core.notify.notify_waiters();
        }
        Ok(true)
    }

    /// Queues `rest` as [`stream_list_page`](StoreSink::stream_list_page) queued the
    /// pages, and ends the streamed list: the FIFO is populated, and every item still
    /// queued is the initial population [`has_synced`](DeltaFifo::has_synced) waits
    /// for. If no streamed list is under way, this is `replace(rest)`.
    fn finish_list_stream(
        &self,
        rest: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let keyed = self.keyed(rest.iter().cloned())?;
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(StoreError::Closed);
        }
        if !state.life.streaming {
            drop(state);
            drop(processing);
            // The list started over after its streamed pages (an expired continue token), and
            // the new list found the FIFO no longer empty: `rest` is then the whole list.
            tracing::debug!("DeltaFifo: a streamed list was started over; replacing");
            return self.replace_keyed(keyed, resource_version, false);
        }
        self.queue_listed_locked(&mut state, keyed);
        self.end_list(state, processing, resource_version);
        Ok(())
    }

    /// [`replace`](Store::replace) without transforming the items again.
    fn replace_listed(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        self.replace_keyed(self.keyed(items)?, resource_version, false)
    }
}
