//! How writes become deltas: the transform, queueing under the lock, listed
//! items, and the known objects consulted for deletions.

use super::*;

impl<K: Object> DeltaFifo<K> {
    /// Appends a delta under `key`, queueing the key if it was not queued; returns
    /// whether it was newly queued. `transform` says whether the object is new to the
    /// FIFO (so the transform runs on it); tombstones are never transformed.
    pub(super) fn queue_action_locked(
        &self,
        state: &mut State<K>,
        key: ObjectKey,
        delta_type: DeltaType,
        object: MaybeTombstone<K>,
        transform: bool,
    ) -> bool {
        let object = match object {
            MaybeTombstone::Object(o) if transform => {
                MaybeTombstone::Object(self.options.transformed(o))
            }
            other => other,
        };
        let delta = Delta { delta_type, object };
        match state.items.entry(key) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                e.get_mut().push_dedup(delta);
                false
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                state.queue.push_back(e.key().clone());
                e.insert(Deltas::one(delta));
                true
            }
        }
    }

    /// `items` with their keys; the first key error fails them all.
    pub(super) fn keyed(
        &self,
        items: impl IntoIterator<Item = Arc<K>>,
    ) -> Result<Vec<(ObjectKey, Arc<K>)>, KeyError> {
        items
            .into_iter()
            .map(|obj| Ok((self.options.key_of(&obj)?, obj)))
            .collect()
    }

    /// Queues listed items with a `Replaced` (or `Sync`) delta each, as a streamed
    /// list's pages (which the reflector transformed with `prepare_listed` already).
    pub(super) fn queue_listed_locked(
        &self,
        state: &mut State<K>,
        keyed: Vec<(ObjectKey, Arc<K>)>,
    ) {
        let action = self.list_delta_type();
        for (key, obj) in keyed {
            self.queue_action_locked(state, key, action, MaybeTombstone::Object(obj), false);
        }
    }

    /// Ends a list (`replace` or a streamed one) at `resource_version` and unlocks:
    /// the first list makes the FIFO populated, with every queued key as its initial
    /// population — the listed ones and inferred deletions, plus any a list streamed
    /// in and abandoned left queued (listed again or deleted now, so part of this
    /// population too). Everything through the list's version is handed over. Then
    /// wakes `wait_synced` and the poppers (one, to answer the watermark, if nothing
    /// is queued).
    pub(super) fn end_list(
        &self,
        mut state: MutexGuard<'_, State<K>>,
        processing: MutexGuard<'_, ()>,
        resource_version: &str,
    ) {
        state.life.streaming = false;
        if !state.life.populated {
            state.life.populated = true;
            state.life.initial_population_count = state.queue.len();
        }
        let flipped = state.life.check_synced_locked();
        let idle_with_news = Self::hand_over_locked(&mut state, resource_version);
        let any_queued = !state.queue.is_empty();
        drop(state);
        drop(processing);
        self.core.announce_synced(flipped);
        if any_queued {
            self.core.notify.notify_waiters();
        } else if idle_with_news {
            self.core.notify.notify_one();
        }
    }

    /// The delta type of a listed item: `Replaced` if so configured, else `Sync`.
    pub(super) fn list_delta_type(&self) -> DeltaType {
        if self.emit_replaced {
            DeltaType::Replaced
        } else {
            DeltaType::Sync
        }
    }

    /// `add` and `update`: key outside the lock, then append under it.
    pub(super) fn add_or_update(
        &self,
        delta_type: DeltaType,
        obj: Arc<K>,
    ) -> Result<(), StoreError> {
        let key = self.options.key_of(&obj)?;
        let (queued, flipped) = {
            let mut state = self.lock();
            if state.life.closed {
                return Err(StoreError::Closed);
            }
            let flipped = state.life.written_locked();
            let queued = self.queue_action_locked(
                &mut state,
                key,
                delta_type,
                MaybeTombstone::Object(obj),
                true,
            );
            (queued, flipped)
        };
        self.wake_after_enqueue(queued, flipped);
        Ok(())
    }

    /// Queues `keyed` adds and updates under one lock, in order, and wakes the
    /// poppers once; leaves `keyed` empty. On a closed FIFO each is refused.
    pub(super) fn queue_watch_run(
        &self,
        keyed: &mut Vec<(WatchAction, ObjectKey, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, StoreError),
    ) {
        let (newly_queued, flipped) = {
            let mut state = self.lock();
            if state.life.closed {
                drop(state);
                for (action, _, _) in keyed.drain(..) {
                    failed(action, StoreError::Closed);
                }
                return;
            }
            let flipped = state.life.written_locked();
            let mut newly_queued = 0_usize;
            for (action, key, obj) in keyed.drain(..) {
                let delta_type = match action {
                    WatchAction::Add => DeltaType::Added,
                    _ => DeltaType::Updated,
                };
                if self.queue_action_locked(
                    &mut state,
                    key,
                    delta_type,
                    MaybeTombstone::Object(obj),
                    true,
                ) {
                    newly_queued += 1;
                }
            }
            (newly_queued, flipped)
        };
        self.core.announce_synced(flipped);
        // Every waiting popper may find work now; one that has not registered yet
        // checks the queue after registering, so nothing is missed.
        match newly_queued {
            0 => {}
            1 => self.core.notify.notify_one(),
            _ => self.core.notify.notify_waiters(),
        }
    }

    /// The deletions `replace` infers for queued keys missing from the list: each
    /// key with the newest object it holds (a tombstone's inner object).
    pub(super) fn missing_queued_locked(
        state: &State<K>,
        listed: &HashSet<ObjectKey, RandomState>,
    ) -> Vec<(ObjectKey, Arc<K>)> {
        state
            .queue
            .iter()
            .filter(|key| !listed.contains(*key))
            .filter_map(|key| {
                let newest = state.items.get(key)?.newest()?;
                Some((key.clone(), Arc::clone(newest.object.object())))
            })
            .collect()
    }
}
