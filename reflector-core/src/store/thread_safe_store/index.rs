//! Index maintenance: moving a key between index values, and building an index
//! over every item.

use std::sync::Arc;

use super::{HashMap, HashSet};
use crate::object::ObjectKey;
use crate::store::indexer::{IndexEntry, Indexers};

/// One index: index value → the keys of the objects that yield that value.
///
/// Invariant: no set is empty; a value whose last key leaves is removed.
pub(super) type Index = HashMap<String, HashSet<ObjectKey>>;

/// Whether index `entry` is built before its first read: every user index is; the
/// built-in namespace index is built by its first read.
pub(super) fn built_eagerly<K>(entry: &IndexEntry<K>) -> bool {
    entry.namespace_of.is_none()
}

/// Above this many values, set differences use a hash set instead of a linear scan.
const LINEAR_DIFF_MAX: usize = 16;

/// Moves `key` from `old`'s index values to `new`'s. Every user index function
/// runs before any index changes, so one that panics leaves the indices as they
/// were; the built-in namespace index reads its value in place, cannot panic, and
/// is applied last, with the namespace read from `key` when `ns_from_key`, and only
/// once built (until its first read it is not kept).
pub(super) fn reindex<K>(
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
        let Some(index) = indices.get_mut(name) else {
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
        if let Some(value) = old_value {
            remove_key(index, value, key);
        }
        if let Some(value) = new_value {
            insert_key(index, value, key);
        }
    }
}

/// Adds `key` to the set under `value`, creating the set if needed.
pub(super) fn insert_key(index: &mut Index, value: &str, key: &ObjectKey) {
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
pub(super) fn remove_key(index: &mut Index, value: &str, key: &ObjectKey) {
    if let Some(keys) = index.get_mut(value) {
        keys.remove(key);
        if keys.is_empty() {
            index.remove(value);
        }
    }
}

/// The values of `a` that are not in `b`; linear for short lists, hashed beyond.
pub(super) fn difference<'a>(a: &'a [String], b: &'a [String]) -> Vec<&'a String> {
    if b.len() <= LINEAR_DIFF_MAX {
        a.iter().filter(|v| !b.contains(v)).collect()
    } else {
        let b: HashSet<&String> = b.iter().collect();
        a.iter().filter(|v| !b.contains(v)).collect()
    }
}

/// One index over `items`.
pub(super) fn build_index<K>(entry: &IndexEntry<K>, items: &HashMap<ObjectKey, Arc<K>>) -> Index {
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
