//! The producer side: the DeltaFifo as a [`Store`].

use super::*;

/// The producer side, as client-go's `DeltaFIFO` methods of the same names.
impl<K: Object> Store<K> for DeltaFifo<K> {
    /// Appends an `Added` delta.
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add_or_update(DeltaType::Added, obj)
    }

    /// Appends an `Updated` delta.
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add_or_update(DeltaType::Updated, obj)
    }

    /// Appends a `Deleted` delta, unless the key is neither queued nor among the
    /// known objects: then the deletion was already reported (by a relist,
    /// presumably) and is ignored.
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.options.key_of(&obj)?;
        let (queued, flipped) = {
            let _processing = self.lock_processing();
            let mut state = self.lock();
            if state.life.closed {
                return Err(StoreError::Closed);
            }
            let flipped = state.life.written_locked();
            let exists = state.items.contains_key(&key)
                || self
                    .options
                    .known_objects
                    .as_ref()
                    .is_some_and(|known| known.get(&key).is_some());
            let queued = exists
                && self.queue_action_locked(
                    &mut state,
                    key,
                    DeltaType::Deleted,
                    MaybeTombstone::Object(obj),
                    true,
                );
            (queued, flipped)
        };
        self.wake_after_enqueue(queued, flipped);
        Ok(())
    }

    /// The newest object of every queued key, in queue order (a tombstone's last
    /// known object for an inferred deletion).
    fn list(&self) -> Vec<Arc<K>> {
        let state = self.lock();
        state
            .queue
            .iter()
            .filter_map(|key| state.items.get(key)?.newest())
            .map(|d| Arc::clone(d.object.object()))
            .collect()
    }

    /// The queued keys, in queue order.
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.lock().queue.iter().cloned().collect()
    }

    /// The newest object queued under `obj`'s key.
    fn get_object(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.options.key_of(obj)?;
        Ok(self.get(&key))
    }

    /// The newest object queued under `key`.
    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let state = self.lock();
        let newest = state.items.get(key)?.newest()?;
        Some(Arc::clone(newest.object.object()))
    }

    /// Appends a `Sync` (or `Replaced`) delta for each item, then a `Deleted`
    /// delta with a [`MaybeTombstone::DeletedFinalStateUnknown`] tombstone for every key that is
    /// queued, or known, but missing from `items`. The tombstone carries the newest
    /// queued object of the key, or else the known object. A key already ending in
    /// an observed `Deleted` keeps it (the tombstone collapses into it). Known keys
    /// whose object vanished from the known objects meanwhile get no tombstone
    /// (client-go queues one without an object).
    ///
    /// The first `replace` sets the initial population that
    /// [`has_synced`](DeltaFifo::has_synced) waits for: every key it queued.
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        let transform = self.options.transform.is_some();
        self.replace_keyed(self.keyed(items)?, resource_version, transform)
    }

    /// Appends a `Sync` delta for every known object whose key has no pending
    /// delta (a pending delta is newer than the known object, so re-delivering the
    /// known one would go back in time). Does nothing without known objects.
    fn resync(&self) -> Result<(), StoreError> {
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(StoreError::Closed);
        }
        let Some(known) = &self.options.known_objects else {
            return Ok(());
        };
        let mut queued = false;
        for key in known.list_keys() {
            if state.items.contains_key(&key) {
                continue;
            }
            let Some(obj) = known.get(&key) else {
                tracing::info!(key = %key, "DeltaFifo: known key vanished from the known objects during resync; not synced");
                continue;
            };
            queued |= self.queue_action_locked(
                &mut state,
                key,
                DeltaType::Sync,
                MaybeTombstone::Object(obj),
                false,
            );
        }
        drop(state);
        drop(processing);
        if queued {
            self.core.notify.notify_waiters();
        }
        Ok(())
    }
}

/// The list half of the producer side.
impl<K: Object> DeltaFifo<K> {
    /// [`replace`](Store::replace) with keyed items, transformed here with
    /// `transform` (a list the reflector hands over was transformed already).
    pub(super) fn replace_keyed(
        &self,
        keyed: Vec<(ObjectKey, Arc<K>)>,
        resource_version: &str,
        transform: bool,
    ) -> Result<(), StoreError> {
        let action = self.list_delta_type();
        let processing = self.lock_processing();
        let mut state = self.lock();
        if state.life.closed {
            return Err(StoreError::Closed);
        }
        let mut listed = HashSet::with_capacity_and_hasher(keyed.len(), RandomState::default());
        for (key, obj) in keyed {
            listed.insert(key.clone());
            self.queue_action_locked(
                &mut state,
                key,
                action,
                MaybeTombstone::Object(obj),
                transform,
            );
        }

        // Every listed key is queued now; when nothing else is, nothing is missing.
        let missing = if state.queue.len() > listed.len() {
            Self::missing_queued_locked(&state, &listed)
        } else {
            Vec::new()
        };
        for (key, obj) in missing {
            let tombstone = MaybeTombstone::DeletedFinalStateUnknown {
                key: key.clone(),
                obj,
            };
            self.queue_action_locked(&mut state, key, DeltaType::Deleted, tombstone, false);
        }

        if let Some(known) = &self.options.known_objects {
            for key in known.list_keys() {
                if listed.contains(&key) || state.items.contains_key(&key) {
                    continue;
                }
                let Some(obj) = known.get(&key) else {
                    tracing::info!(key = %key, "DeltaFifo: known key vanished from the known objects during replace; no tombstone queued");
                    continue;
                };
                let tombstone = MaybeTombstone::DeletedFinalStateUnknown {
                    key: key.clone(),
                    obj,
                };
                self.queue_action_locked(&mut state, key, DeltaType::Deleted, tombstone, false);
            }
        }

        self.end_list(state, processing, resource_version);
        Ok(())
    }
}
