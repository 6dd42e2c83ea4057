//! The map of objects plus its secondary indices, behind one lock, as client-go's
//! `threadSafeMap`.
//!
//! Items and indices live in one [`State`] guarded by one [`RwLock`], so a reader
//! sees the indices of exactly the items it sees. Index functions never run while
//! the state is half-updated: every write first computes all the index values it
//! needs, then mutates, so a panicking index function leaves the store as it was.

use std::collections::hash_map::Entry;
use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet};

/// Maps and sets keyed by object keys and index values use foldhash, cheaper than
/// SipHash on the informer pipeline's path (measured with the `informer` bench's pipeline).
type HashMap<K, V> = StdHashMap<K, V, foldhash::fast::RandomState>;
type HashSet<T> = StdHashSet<T, foldhash::fast::RandomState>;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::StoreError;
use super::indexer::{IndexFunc, Indexers};
use crate::object::ObjectKey;

mod index;
#[cfg(test)]
mod tests;

use index::{Index, build_index, built_eagerly, reindex};

/// A concurrent map from [`ObjectKey`] to `Arc<K>`, with named secondary indices.
///
/// It does not compute keys itself: callers pass them in. The
/// [`Indexer`](super::Indexer) wraps it with a key function. Reads return `Arc<K>`
/// clones and never copy objects; objects must be treated as immutable, since
/// changing one in place would not re-index it.
pub struct ThreadSafeStore<K> {
    /// Items, indexers and indices, all under this one lock.
    state: RwLock<State<K>>,
}

/// Everything [`ThreadSafeStore`] holds; every field is guarded by
/// `ThreadSafeStore::state`.
struct State<K> {
    /// The objects by key. Guarded by `ThreadSafeStore::state`.
    items: HashMap<ObjectKey, Arc<K>>,
    /// Index name → index function. Guarded by `ThreadSafeStore::state`.
    indexers: Indexers<K>,
    /// Index name → index. Has an entry (possibly empty) for every user index in
    /// `indexers`, and for the built-in namespace index once it has been read (see
    /// [`ThreadSafeStore::with_index`]); no other. Guarded by `ThreadSafeStore::state`.
    indices: HashMap<String, Index>,
    /// Every key is `ns/name` (or `name`) of its object: see
    /// [`ThreadSafeStore::with_key_namespaces`]. Set once, at construction.
    keys_carry_namespace: bool,
}

impl<K> ThreadSafeStore<K> {
    /// An empty store with the given indices.
    #[cfg(test)]
    #[must_use]
    pub fn new(indexers: Indexers<K>) -> Self {
        Self::with_key_namespaces(indexers, false)
    }

    /// An empty store whose callers promise that every key carries its object's
    /// namespace (the keys of [`meta_namespace_key`](crate::object::meta_namespace_key)):
    /// the built-in namespace index then reads the namespace from the key, and an
    /// object replaced under its key keeps its namespace without a look at either
    /// object (the old one is likely out of the CPU cache).
    pub(crate) fn with_key_namespaces(indexers: Indexers<K>, keys_carry_namespace: bool) -> Self {
        let indices = indexers
            .entries()
            .filter(|(_, entry)| built_eagerly(entry))
            .map(|(name, _)| (name.to_owned(), Index::default()))
            .collect();
        ThreadSafeStore {
            state: RwLock::new(State {
                items: HashMap::default(),
                indexers,
                indices,
                keys_carry_namespace,
            }),
        }
    }

    /// The state for reading. A poisoned lock is still usable: writers compute
    /// everything that can panic (index functions) before mutating.
    fn read(&self) -> RwLockReadGuard<'_, State<K>> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state for writing; see [`ThreadSafeStore::read`] about poisoning.
    fn write(&self) -> RwLockWriteGuard<'_, State<K>> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stores `obj` under `key`, replacing and re-indexing any previous object.
    #[cfg(test)]
    pub fn add(&self, key: ObjectKey, obj: Arc<K>) {
        self.update(key, obj);
    }

    /// Stores `obj` under `key`. Only the index values that differ between the
    /// previous object and `obj` are touched, so the cost is proportional to the
    /// object's values, not to the store.
    #[cfg(test)]
    pub fn update(&self, key: ObjectKey, obj: Arc<K>) {
        self.upsert(key, obj);
    }

    /// Stores `obj` under `key` and returns the object it replaced, looking the key
    /// up once (the informer's "was it cached?" and "store it" in one step).
    pub fn upsert(&self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        self.write().upsert_locked(key, obj)
    }

    /// Removes the object under `key` and its index entries; returns it, if it
    /// was there.
    pub fn delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.write().delete_locked(key)
    }

    /// Runs `apply` with the write lock held, so several writes take the lock once
    /// and readers see all of them or none. The informer applies each popped batch
    /// this way, so that readers never see half a batch whose handlers have not run.
    pub(crate) fn write_batch<R>(&self, apply: impl FnOnce(&mut BatchWriter<'_, K>) -> R) -> R {
        apply(&mut BatchWriter {
            state: self.write(),
        })
    }

    /// The object under `key`.
    #[must_use]
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.read().items.get(key).cloned()
    }

    /// Every object, in no particular order.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<K>> {
        self.read().items.values().cloned().collect()
    }

    /// Every key, in no particular order.
    #[must_use]
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.read().items.keys().cloned().collect()
    }

    /// How many objects are stored.
    #[must_use]
    pub fn len(&self) -> usize {
        self.read().items.len()
    }

    /// Whether no object is stored.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.read().items.is_empty()
    }

    /// Replaces every object with `items` and rebuilds every index (a namespace
    /// index not read yet stays unbuilt).
    ///
    /// The new map and indices are built without the lock, then swapped in under
    /// it: readers see the old content or the new one, never a mix. When a key
    /// appears twice, the last object wins.
    pub fn replace(&self, items: impl IntoIterator<Item = (ObjectKey, Arc<K>)>) {
        let (indexers, built): (Indexers<K>, Vec<String>) = {
            let state = self.read();
            (
                state.indexers.clone(),
                state.indices.keys().cloned().collect(),
            )
        };
        let items: HashMap<ObjectKey, Arc<K>> = items.into_iter().collect();
        let mut indices: HashMap<String, Index> = built
            .into_iter()
            .filter_map(|name| {
                let index = build_index(indexers.entry(&name)?, &items);
                Some((name, index))
            })
            .collect();
        let mut state = self.write();
        // Indexers only grow; index the new items for any index added, or read for
        // the first time, since the snapshot.
        for (name, entry) in state.indexers.entries() {
            if state.indices.contains_key(name) && !indices.contains_key(name) {
                indices.insert(name.to_owned(), build_index(entry, &items));
            }
        }
        state.items = items;
        state.indices = indices;
    }

    /// Runs `read` on index `name` (with the objects, its function and the index)
    /// under the lock. A namespace index read for the first time is built first,
    /// under the write lock: its first read costs one pass over the objects.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    fn with_index<R>(
        &self,
        name: &str,
        read: impl FnOnce(&HashMap<ObjectKey, Arc<K>>, &IndexFunc<K>, &Index) -> R,
    ) -> Result<R, StoreError> {
        let unknown = || StoreError::UnknownIndex(name.to_owned());
        {
            let state = self.read();
            let entry = state.indexers.entry(name).ok_or_else(unknown)?;
            if let Some(index) = state.indices.get(name) {
                return Ok(read(&state.items, &entry.func, index));
            }
        }
        let mut state = self.write();
        let State {
            items,
            indexers,
            indices,
            ..
        } = &mut *state;
        let entry = indexers.entry(name).ok_or_else(unknown)?;
        let index = indices
            .entry(name.to_owned())
            .or_insert_with(|| build_index(entry, items));
        Ok(read(items, &entry.func, index))
    }

    /// The objects that share at least one of `obj`'s values for index `name`,
    /// each once, in no particular order.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        self.with_index(name, |items, f, index| {
            let values = f(obj);
            let mut out = Vec::new();
            if let [value] = values.as_slice() {
                // One value needs no de-duplication.
                if let Some(keys) = index.get(value) {
                    out.extend(keys.iter().filter_map(|k| items.get(k).cloned()));
                }
            } else {
                let mut seen: HashSet<&ObjectKey> = HashSet::default();
                for keys in values.iter().filter_map(|v| index.get(v)) {
                    for key in keys {
                        if seen.insert(key) {
                            out.extend(items.get(key).cloned());
                        }
                    }
                }
            }
            out
        })
    }

    /// The keys of the objects whose values for index `name` include `value`,
    /// sorted (as client-go's `IndexKeys`).
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        let mut keys: Vec<ObjectKey> = self.with_index(name, |_, _, index| {
            index
                .get(value)
                .map(|set| set.iter().cloned().collect())
                .unwrap_or_default()
        })?;
        keys.sort_unstable();
        Ok(keys)
    }

    /// The objects whose values for index `name` include `value`, in no
    /// particular order. Costs O(result), whatever the size of the store.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        self.with_index(name, |items, _, index| {
            index
                .get(value)
                .map(|keys| keys.iter().filter_map(|k| items.get(k).cloned()).collect())
                .unwrap_or_default()
        })
    }

    /// Every value index `name` currently holds at least one object under, in no
    /// particular order; empty for an unknown index (as client-go).
    #[must_use]
    #[doc(alias = "ListIndexFuncValues")]
    pub fn index_values(&self, name: &str) -> Vec<String> {
        self.with_index(name, |_, _, index| index.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The registered index functions.
    #[must_use]
    pub fn indexers(&self) -> Indexers<K> {
        self.read().indexers.clone()
    }

    /// Registers more indices and indexes every object already stored under them.
    ///
    /// # Errors
    /// [`StoreError::IndexConflict`] if a name is already registered (the
    /// smallest such name is reported); nothing changes then.
    pub fn add_indexers(&self, new: Indexers<K>) -> Result<(), StoreError> {
        let mut state = self.write();
        let mut conflicts: Vec<&str> = new
            .names()
            .filter(|name| state.indexers.contains(name))
            .collect();
        conflicts.sort_unstable();
        if let Some(name) = conflicts.first() {
            return Err(StoreError::IndexConflict((*name).to_owned()));
        }
        // Build every new index (but a namespace index, built when first read)
        // before touching the state.
        let built: Vec<(String, Index)> = new
            .entries()
            .filter(|(_, entry)| built_eagerly(entry))
            .map(|(name, entry)| (name.to_owned(), build_index(entry, &state.items)))
            .collect();
        state.indices.extend(built);
        for (name, entry) in new.entries() {
            state.indexers.insert_entry(name, entry.clone());
        }
        Ok(())
    }
}

/// Writes to a [`ThreadSafeStore`] under one held write lock; see
/// [`ThreadSafeStore::write_batch`].
pub(crate) struct BatchWriter<'a, K> {
    /// The held lock.
    state: RwLockWriteGuard<'a, State<K>>,
}

impl<K> BatchWriter<'_, K> {
    /// As [`ThreadSafeStore::upsert`].
    pub(crate) fn upsert(&mut self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        self.state.upsert_locked(key, obj)
    }

    /// As [`ThreadSafeStore::delete`].
    pub(crate) fn delete(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        self.state.delete_locked(key)
    }

    /// Every key, as the batch has left them so far.
    pub(crate) fn keys(&self) -> Vec<ObjectKey> {
        self.state.items.keys().cloned().collect()
    }

    /// Every object, as the batch has left them so far.
    pub(crate) fn objects(&self) -> Vec<Arc<K>> {
        self.state.items.values().cloned().collect()
    }
}

impl<K> State<K> {
    /// Stores `obj` under `key`, re-indexing, and returns the object it replaced.
    /// Expects the write lock held.
    fn upsert_locked(&mut self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        let State {
            items,
            indexers,
            indices,
            keys_carry_namespace,
        } = self;
        let ns_from_key = *keys_carry_namespace;
        // Indices first: a panicking index function leaves the object unstored.
        match items.entry(key) {
            Entry::Occupied(mut e) => {
                reindex(
                    indexers,
                    indices,
                    ns_from_key,
                    e.key(),
                    Some(e.get()),
                    Some(&obj),
                );
                Some(e.insert(obj))
            }
            Entry::Vacant(e) => {
                reindex(indexers, indices, ns_from_key, e.key(), None, Some(&obj));
                e.insert(obj);
                None
            }
        }
    }

    /// Removes the object under `key` and its index entries; returns it. Expects
    /// the write lock held.
    fn delete_locked(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        let old = self.items.get(key).cloned()?;
        self.reindex_locked(key, Some(&old), None);
        self.items.remove(key)
    }

    /// Moves `key` in every index from `old`'s values to `new`'s. All index
    /// functions run before anything is mutated. Expects the write lock held.
    fn reindex_locked(&mut self, key: &ObjectKey, old: Option<&K>, new: Option<&K>) {
        let ns_from_key = self.keys_carry_namespace;
        reindex(
            &self.indexers,
            &mut self.indices,
            ns_from_key,
            key,
            old,
            new,
        );
    }
}

impl<K> std::fmt::Debug for ThreadSafeStore<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.read();
        f.debug_struct("ThreadSafeStore")
            .field("len", &state.items.len())
            .field("indexers", &state.indexers)
            .finish()
    }
}
