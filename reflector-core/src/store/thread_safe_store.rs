//! The map of objects plus its secondary indices, behind one lock, as client-go's
//! `threadSafeMap`.
//!
//! Items and indices live in one [`State`] guarded by one [`RwLock`], so a reader
//! sees the indices of exactly the items it sees. Index functions never run while
//! the state is half-updated: every write first computes all the index values it
//! needs, then mutates, so a panicking index function leaves the store as it was.

use std::collections::hash_map::Entry;
use std::collections::{HashMap as StdHashMap, HashSet as StdHashSet};

/// Maps and sets keyed by object keys and index values use foldhash: SipHash was a
/// visible share of the informer pipeline's CPU profile.
type HashMap<K, V> = StdHashMap<K, V, foldhash::fast::RandomState>;
type HashSet<T> = StdHashSet<T, foldhash::fast::RandomState>;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::StoreError;
use super::indexer::{IndexEntry, IndexFunc, Indexers};
use crate::object::ObjectKey;

/// One index: index value → the keys of the objects that yield that value.
///
/// Invariant: no set is empty; a value whose last key leaves is removed.
type Index = HashMap<String, HashSet<ObjectKey>>;

/// Above this many values, set differences use a hash set instead of a linear scan.
const LINEAR_DIFF_MAX: usize = 16;

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
    /// Index name → index. Has an entry (possibly empty) for every name in
    /// `indexers` and no other. Guarded by `ThreadSafeStore::state`.
    indices: HashMap<String, Index>,
    /// Every key is `ns/name` (or `name`) of its object: see
    /// [`ThreadSafeStore::with_key_namespaces`]. Set once, at construction.
    keys_carry_namespace: bool,
}

impl<K> ThreadSafeStore<K> {
    /// An empty store with the given indices.
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
            .names()
            .map(|name| (name.to_owned(), Index::default()))
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
    pub fn add(&self, key: ObjectKey, obj: Arc<K>) {
        self.update(key, obj);
    }

    /// Stores `obj` under `key`. Only the index values that differ between the
    /// previous object and `obj` are touched, so the cost is proportional to the
    /// object's values, not to the store.
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

    /// Replaces every object with `items` and rebuilds every index.
    ///
    /// The new map and indices are built without the lock, then swapped in under
    /// it: readers see the old content or the new one, never a mix. When a key
    /// appears twice, the last object wins.
    pub fn replace(&self, items: impl IntoIterator<Item = (ObjectKey, Arc<K>)>) {
        let indexers = self.read().indexers.clone();
        let items: HashMap<ObjectKey, Arc<K>> = items.into_iter().collect();
        let mut indices: HashMap<String, Index> = indexers
            .entries()
            .map(|(name, entry)| (name.to_owned(), build_index(entry, &items)))
            .collect();
        let mut state = self.write();
        // Indexers only grow; index the new items for any added since the snapshot.
        for (name, entry) in state.indexers.entries() {
            if !indices.contains_key(name) {
                indices.insert(name.to_owned(), build_index(entry, &items));
            }
        }
        state.items = items;
        state.indices = indices;
    }

    /// The objects that share at least one of `obj`'s values for index `name`,
    /// each once, in no particular order.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn index(&self, name: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        let state = self.read();
        let (f, index) = state.index_locked(name)?;
        let values = f(obj);
        let mut out = Vec::new();
        if let [value] = values.as_slice() {
            // One value needs no de-duplication.
            if let Some(keys) = index.get(value) {
                out.extend(keys.iter().filter_map(|k| state.items.get(k).cloned()));
            }
        } else {
            let mut seen: HashSet<&ObjectKey> = HashSet::default();
            for keys in values.iter().filter_map(|v| index.get(v)) {
                for key in keys {
                    if seen.insert(key) {
                        out.extend(state.items.get(key).cloned());
                    }
                }
            }
        }
        Ok(out)
    }

    /// The keys of the objects whose values for index `name` include `value`,
    /// sorted (as client-go's `IndexKeys`).
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn index_keys(&self, name: &str, value: &str) -> Result<Vec<ObjectKey>, StoreError> {
        let state = self.read();
        let (_, index) = state.index_locked(name)?;
        let mut keys: Vec<ObjectKey> = index
            .get(value)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        keys.sort_unstable();
        Ok(keys)
    }

    /// The objects whose values for index `name` include `value`, in no
    /// particular order. Costs O(result), whatever the size of the store.
    ///
    /// # Errors
    /// [`StoreError::UnknownIndex`] if no index is called `name`.
    pub fn by_index(&self, name: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        let state = self.read();
        let (_, index) = state.index_locked(name)?;
        Ok(index
            .get(value)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| state.items.get(k).cloned())
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Every value index `name` currently holds at least one object under, in no
    /// particular order; empty for an unknown index (as client-go).
    #[must_use]
    pub fn list_index_func_values(&self, name: &str) -> Vec<String> {
        self.read()
            .indices
            .get(name)
            .map(|index| index.keys().cloned().collect())
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
        // Build every new index before touching the state.
        let built: Vec<(String, Index)> = new
            .entries()
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

    /// The function and index called `name`. Expects the lock held.
    fn index_locked(&self, name: &str) -> Result<(&IndexFunc<K>, &Index), StoreError> {
        match (self.indexers.get(name), self.indices.get(name)) {
            (Some(f), Some(index)) => Ok((f, index)),
            _ => Err(StoreError::UnknownIndex(name.to_owned())),
        }
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

/// Moves `key` from `old`'s index values to `new`'s. Every user index function
/// runs before any index changes, so one that panics leaves the indices as they
/// were; the built-in namespace index reads its value in place, cannot panic, and
/// is applied last, with the namespace read from `key` when `ns_from_key`.
fn reindex<K>(
    indexers: &Indexers<K>,
    indices: &mut HashMap<String, Index>,
    ns_from_key: bool,
    key: &ObjectKey,
    old: Option<&K>,
    new: Option<&K>,
) {
    // Empty (no allocation) unless a user index's values changed.
    let mut changes: Vec<(&str, Vec<String>, Vec<String>)> = Vec::new();
    for (name, entry) in indexers.entries() {
        if entry.namespace_of.is_some() {
            continue;
        }
        let old_values = old.map(|o| (entry.func)(o)).unwrap_or_default();
        let new_values = new.map(|o| (entry.func)(o)).unwrap_or_default();
        // The common case: the object's values did not change.
        if old_values != new_values {
            changes.push((name, old_values, new_values));
        }
    }
    for (name, old_values, new_values) in changes {
        // (The state holds an index per indexer: the `None` arm never runs.)
        let index = match indices.get_mut(name) {
            Some(index) => index,
            None => indices.entry(name.to_owned()).or_default(),
        };
        for value in difference(&old_values, &new_values) {
            remove_key(index, value, key);
        }
        for value in difference(&new_values, &old_values) {
            insert_key(index, value, key);
        }
    }
    for (name, entry) in indexers.entries() {
        let Some(namespace_of) = entry.namespace_of else {
            continue;
        };
        let (old_value, new_value) = if ns_from_key {
            let ns = key.namespace().unwrap_or_default();
            (old.map(|_| ns), new.map(|_| ns))
        } else {
            (old.map(namespace_of), new.map(namespace_of))
        };
        if old_value == new_value {
            continue;
        }
        let index = match indices.get_mut(name) {
            Some(index) => index,
            None => indices.entry(name.to_owned()).or_default(),
        };
        if let Some(value) = old_value {
            remove_key(index, value, key);
        }
        if let Some(value) = new_value {
            insert_key(index, value, key);
        }
    }
}

/// Adds `key` to the set under `value`, creating the set if needed.
fn insert_key(index: &mut Index, value: &str, key: &ObjectKey) {
    match index.get_mut(value) {
        Some(keys) => {
            keys.insert(key.clone());
        }
        None => {
            index.insert(value.to_owned(), HashSet::from_iter([key.clone()]));
        }
    }
}

/// Removes `key` from the set under `value`, dropping the set once empty.
fn remove_key(index: &mut Index, value: &str, key: &ObjectKey) {
    if let Some(keys) = index.get_mut(value) {
        keys.remove(key);
        if keys.is_empty() {
            index.remove(value);
        }
    }
}

/// The values of `a` that are not in `b`; linear for short lists, hashed beyond.
fn difference<'a>(a: &'a [String], b: &'a [String]) -> Vec<&'a String> {
    if b.len() <= LINEAR_DIFF_MAX {
        a.iter().filter(|v| !b.contains(v)).collect()
    } else {
        let b: HashSet<&String> = b.iter().collect();
        a.iter().filter(|v| !b.contains(v)).collect()
    }
}

/// One index over `items`.
fn build_index<K>(entry: &IndexEntry<K>, items: &HashMap<ObjectKey, Arc<K>>) -> Index {
    let mut index = Index::default();
    for (key, obj) in items {
        match entry.namespace_of {
            Some(namespace_of) => insert_key(&mut index, namespace_of(obj), key),
            None => {
                for value in (entry.func)(obj) {
                    index.entry(value).or_default().insert(key.clone());
                }
            }
        }
    }
    index
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    /// (Was the rustdoc example while `ThreadSafeStore` was public.)
    #[test]
    fn namespace_index_answers_by_namespace() {
        use crate::store::{NAMESPACE_INDEX, namespace_index_func};

        let store = ThreadSafeStore::new(
            Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<ConfigMap>),
        );
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("prod".into());
        cm.metadata.name = Some("web".into());
        store.add(ObjectKey::new(Some("prod"), "web"), Arc::new(cm));
        assert_eq!(store.by_index(NAMESPACE_INDEX, "prod").unwrap().len(), 1);
        assert!(store.by_index("nope", "prod").is_err());
    }

    /// A config map named `name` whose `v` annotation is `value`.
    fn cm(name: &str, value: &str) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.metadata.annotations = Some([("v".to_owned(), value.to_owned())].into());
        Arc::new(cm)
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(None, name)
    }

    fn annotation(cm: &ConfigMap) -> &str {
        cm.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("v"))
            .map_or("", String::as_str)
    }

    /// The keys under `value` in index `name`, sorted; `None` if the set is absent.
    fn set_of(store: &ThreadSafeStore<ConfigMap>, name: &str, value: &str) -> Option<Vec<String>> {
        let state = store.read();
        state.indices[name].get(value).map(|set| {
            let mut keys: Vec<String> = set.iter().map(|k| k.as_str().to_owned()).collect();
            keys.sort();
            keys
        })
    }

    #[test]
    fn delete_removes_empty_sets_from_index() {
        let store = ThreadSafeStore::new(Indexers::new().with("testIndexer", |c: &ConfigMap| {
            vec![annotation(c).to_owned()]
        }));
        store.add(key("testKey"), cm("testKey", "testKey"));
        assert_eq!(
            set_of(&store, "testIndexer", "testKey"),
            Some(vec!["testKey".to_owned()])
        );
        store.delete(&key("testKey"));
        assert_eq!(set_of(&store, "testIndexer", "testKey"), None);
        assert!(store.list_index_func_values("testIndexer").is_empty());
    }

    #[test]
    fn add_keeps_non_empty_set() {
        let store = ThreadSafeStore::new(
            Indexers::new().with("testIndexer", |_: &ConfigMap| vec!["testIndex".to_owned()]),
        );
        store.add(key("retain"), cm("retain", "retain"));
        store.add(key("delete"), cm("delete", "delete"));
        assert_eq!(
            set_of(&store, "testIndexer", "testIndex"),
            Some(vec!["delete".to_owned(), "retain".to_owned()])
        );
        store.delete(&key("delete"));
        assert_eq!(
            set_of(&store, "testIndexer", "testIndex"),
            Some(vec!["retain".to_owned()])
        );
    }

    #[test]
    fn indexing_functions_with_multiple_values() {
        let store = ThreadSafeStore::new(Indexers::new().with("testIndexer", |c: &ConfigMap| {
            annotation(c).split(',').map(str::to_owned).collect()
        }));
        let check = |expected: &[(&str, &[&str])]| {
            for (value, keys) in expected {
                let want: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
                let got = set_of(&store, "testIndexer", value).unwrap_or_default();
                assert_eq!(got, want, "keys under {value:?}");
                let via_api: Vec<String> = store
                    .index_keys("testIndexer", value)
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().to_owned())
                    .collect();
                assert_eq!(via_api, want, "index_keys under {value:?}");
            }
        };
        store.add(key("key1"), cm("key1", "foo"));
        store.add(key("key2"), cm("key2", "bar"));
        check(&[("foo", &["key1"]), ("bar", &["key2"])]);

        store.update(key("key2"), cm("key2", "foo,bar"));
        check(&[("foo", &["key1", "key2"]), ("bar", &["key2"])]);

        store.update(key("key1"), cm("key1", "foo,bar"));
        check(&[("foo", &["key1", "key2"]), ("bar", &["key1", "key2"])]);

        store.add(key("key3"), cm("key3", "foo,bar,baz"));
        check(&[
            ("foo", &["key1", "key2", "key3"]),
            ("bar", &["key1", "key2", "key3"]),
            ("baz", &["key3"]),
        ]);

        store.update(key("key1"), cm("key1", "foo"));
        check(&[
            ("foo", &["key1", "key2", "key3"]),
            ("bar", &["key2", "key3"]),
            ("baz", &["key3"]),
        ]);

        store.update(key("key2"), cm("key2", "bar"));
        check(&[
            ("foo", &["key1", "key3"]),
            ("bar", &["key2", "key3"]),
            ("baz", &["key3"]),
        ]);

        store.delete(&key("key1"));
        check(&[
            ("foo", &["key3"]),
            ("bar", &["key2", "key3"]),
            ("baz", &["key3"]),
        ]);

        store.delete(&key("key3"));
        check(&[("foo", &[]), ("bar", &["key2"]), ("baz", &[])]);
        // Emptied sets are gone, not left empty.
        assert_eq!(set_of(&store, "testIndexer", "foo"), None);
        assert_eq!(set_of(&store, "testIndexer", "baz"), None);
        assert_eq!(store.list_index_func_values("testIndexer"), ["bar"]);
    }

    #[test]
    fn difference_is_the_same_linear_and_hashed() {
        let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        let some: Vec<String> = (30..50).map(|i| i.to_string()).collect();
        let d: Vec<&String> = difference(&many, &some);
        assert_eq!(d.len(), 30);
        assert!(d.iter().all(|v| v.parse::<u32>().unwrap() < 30));
        let d: Vec<&String> = difference(&some, &many[..10]);
        assert_eq!(d.len(), 20);
    }

    /// A config map in namespace `ns` (none when empty) whose `v` annotation is `value`.
    fn cm_in(ns: &str, name: &str, value: &str) -> Arc<ConfigMap> {
        let mut cm = Arc::unwrap_or_clone(cm(name, value));
        cm.metadata.namespace = (!ns.is_empty()).then(|| ns.to_owned());
        Arc::new(cm)
    }

    /// The built-in namespace index follows adds, moves between namespaces and
    /// deletes exactly as `namespace_index_func` registered by hand does.
    #[test]
    fn builtin_namespace_index_matches_the_index_function() {
        use super::super::{NAMESPACE_INDEX, namespace_index_func};
        let builtin = ThreadSafeStore::new(Indexers::new().with_namespace_index());
        let by_hand = ThreadSafeStore::new(
            Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<ConfigMap>),
        );
        let steps: [(&str, Option<&str>); 6] = [
            ("a", Some("prod")),
            ("b", Some("prod")),
            ("c", Some("")),
            ("a", Some("dev")),
            ("b", None),
            ("c", Some("dev")),
        ];
        for (name, ns) in steps {
            for store in [&builtin, &by_hand] {
                match ns {
                    Some(ns) => {
                        store.upsert(key(name), cm_in(ns, name, "v"));
                    }
                    None => {
                        store.delete(&key(name));
                    }
                }
            }
            for value in ["prod", "dev", ""] {
                assert_eq!(
                    set_of(&builtin, NAMESPACE_INDEX, value),
                    set_of(&by_hand, NAMESPACE_INDEX, value),
                    "after {name} -> {ns:?}, namespace {value:?}"
                );
            }
        }
        assert_eq!(
            set_of(&builtin, NAMESPACE_INDEX, "dev"),
            Some(vec!["a".to_owned(), "c".to_owned()])
        );
        assert_eq!(set_of(&builtin, NAMESPACE_INDEX, "prod"), None);
        assert_eq!(builtin.list_index_func_values(NAMESPACE_INDEX), ["dev"]);
        // `replace` and `add_indexers` build it the same way too.
        builtin.replace([
            (key("x"), cm_in("", "x", "v")),
            (key("y"), cm_in("qa", "y", "v")),
        ]);
        assert_eq!(
            set_of(&builtin, NAMESPACE_INDEX, ""),
            Some(vec!["x".to_owned()])
        );
        let late = ThreadSafeStore::new(Indexers::new());
        late.add(key("z"), cm_in("qa", "z", "v"));
        late.add_indexers(Indexers::new().with_namespace_index())
            .unwrap();
        assert_eq!(
            set_of(&late, NAMESPACE_INDEX, "qa"),
            Some(vec!["z".to_owned()])
        );
        late.update(key("z"), cm_in("ops", "z", "v"));
        assert_eq!(set_of(&late, NAMESPACE_INDEX, "qa"), None);
        assert_eq!(
            set_of(&late, NAMESPACE_INDEX, "ops"),
            Some(vec!["z".to_owned()])
        );
    }

    /// A user index function that panics leaves the built-in namespace index as it
    /// was too, though that one is applied without running user code.
    #[test]
    fn panicking_index_function_leaves_namespace_index_unchanged() {
        use super::super::NAMESPACE_INDEX;
        let store = ThreadSafeStore::new(Indexers::new().with_namespace_index().with(
            "v",
            |c: &ConfigMap| {
                let v = annotation(c);
                assert!(v != "boom", "index function refuses boom");
                vec![v.to_owned()]
            },
        ));
        store.add(key("a"), cm_in("prod", "a", "x"));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.update(key("a"), cm_in("dev", "a", "boom"));
        }));
        assert!(r.is_err());
        assert_eq!(
            set_of(&store, NAMESPACE_INDEX, "prod"),
            Some(vec!["a".to_owned()])
        );
        assert_eq!(set_of(&store, NAMESPACE_INDEX, "dev"), None);
    }

    /// Writes through one held lock behave as the same writes one by one.
    #[test]
    fn batch_writes_return_what_they_replaced() {
        let store = ThreadSafeStore::new(Indexers::new().with_namespace_index());
        store.add(key("a"), cm_in("prod", "a", "1"));
        let (replaced, added, deleted, missing) = store.write_batch(|w| {
            (
                w.upsert(key("a"), cm_in("prod", "a", "2")),
                w.upsert(key("b"), cm_in("dev", "b", "1")),
                w.delete(&key("a")),
                w.delete(&key("zz")),
            )
        });
        assert_eq!(
            replaced.map(|o| annotation(&o).to_owned()),
            Some("1".to_owned())
        );
        assert!(added.is_none());
        assert_eq!(
            deleted.map(|o| annotation(&o).to_owned()),
            Some("2".to_owned())
        );
        assert!(missing.is_none());
        assert_eq!(store.list_keys(), [key("b")]);
        assert_eq!(
            set_of(&store, super::super::NAMESPACE_INDEX, "dev"),
            Some(vec!["b".to_owned()])
        );
        assert_eq!(set_of(&store, super::super::NAMESPACE_INDEX, "prod"), None);
    }

    #[test]
    fn panicking_index_function_leaves_store_unchanged() {
        let store = ThreadSafeStore::new(Indexers::new().with("v", |c: &ConfigMap| {
            let v = annotation(c);
            assert!(v != "boom", "index function refuses boom");
            vec![v.to_owned()]
        }));
        store.add(key("a"), cm("a", "x"));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.update(key("a"), cm("a", "boom"));
        }));
        assert!(r.is_err());
        assert_eq!(annotation(&store.get(&key("a")).unwrap()), "x");
        assert_eq!(set_of(&store, "v", "x"), Some(vec!["a".to_owned()]));
        assert_eq!(store.list_index_func_values("v"), ["x"]);
    }
}
