//! Objects, their keys, and the tombstone left when a delete was missed.
//!
//! Two keys, one for each layer:
//!
//! - [`ObjectRef<K>`] is the key users handle: every user-facing API takes or answers
//!   it (a controller's [`Request`](crate::controller::Request) and `watches` mappers,
//!   a [`Lister`](crate::lister::Lister)'s and the `#[derive(Reflect)]` queries'
//!   `*_keys`), so the kind is in the type and a key of another kind does not compile;
//! - [`ObjectKey`] is the untyped key the machinery holds, client-go's string key:
//!   the [`store`](crate::store)s and their indices, the
//!   informer's [`Fifo`](crate::fifo::Fifo) and the work queue. `namespace/name` for
//!   namespaced objects, `name` for cluster-scoped ones, exactly as client-go's
//!   `MetaNamespaceKeyFunc` spells them.
//!
//! Converting is free either way ([`ObjectRef::from_key`], [`ObjectRef::key`],
//! `ObjectKey::from(r)`): an `ObjectRef<K>` is an `ObjectKey` and a marker. Keys are
//! cheap to clone (one reference-count bump), because the FIFO, the indexer and the
//! work queue all hold them. Every cache stores objects as [`Arc<K>`] under their
//! `ObjectKey`.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

mod maybe_tombstone;
mod object_ref;

pub use maybe_tombstone::MaybeTombstone;
pub use object_ref::ObjectRef;

/// What this crate asks of a cached object: a Kubernetes resource that can be shared
/// across tasks, and serialized (a relist compares each listed object with the cached
/// one by its JSON, to keep one copy of what did not change).
///
/// Implemented for every type that satisfies the bounds, so users never implement it:
/// `k8s-openapi` types, `#[derive(CustomResource)]` types, `DynamicObject` and
/// `PartialObjectMeta<K>` all do.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// fn cacheable<K: reflector::object::Object>() {}
/// cacheable::<ConfigMap>();
/// ```
pub trait Object: kube::Resource + serde::Serialize + Clone + Send + Sync + 'static {}

impl<T> Object for T where T: kube::Resource + serde::Serialize + Clone + Send + Sync + 'static {}

/// Why a key could not be made or parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The object has no `metadata.name`. Not retryable: the object is malformed.
    #[error("object has no metadata.name")]
    MissingName,
    /// A key string had an empty name (`""`, `"ns/"`). Not retryable.
    #[error("key {0:?} has an empty name")]
    EmptyName(String),
    /// A key string had an empty namespace before the slash (`"/name"`). Not retryable.
    #[error("key {0:?} has an empty namespace")]
    EmptyNamespace(String),
    /// A key string had more than two `/`-separated parts. Not retryable.
    #[error("key {0:?} has more than two parts")]
    TooManyParts(String),
}

/// Keys up to this length are assembled on the stack (see [`ObjectKey::new`]).
const KEY_STACK_BYTES: usize = 320;

/// The key of an object in a cache: `namespace/name`, or `name` when cluster-scoped.
///
/// The untyped key of the machinery — stores, indices, the FIFO, the work queue —
/// as client-go's string key. User-facing APIs answer the typed [`ObjectRef<K>`]
/// instead; convert with [`ObjectRef::from_key`] (free).
///
/// Stored as one shared string, so cloning is a reference-count bump, beside the
/// string's hash, computed once: the maps and sets that hold keys (the FIFO, the
/// cache, every index, the work queue) hash and rehash them without reading the
/// string, and tell most unequal keys apart without comparing bytes. Equality and
/// ordering follow the string form, so keys sort as client-go's do.
///
/// # Example
/// ```
/// use reflector::object::ObjectKey;
/// let key = ObjectKey::new(Some("default"), "web");
/// assert_eq!(key.to_string(), "default/web");
/// assert_eq!(key.namespace(), Some("default"));
/// assert_eq!(key.name(), "web");
/// assert_eq!("default/web".parse::<ObjectKey>().unwrap(), key);
/// assert!("a/b/c".parse::<ObjectKey>().is_err());
/// ```
#[derive(Clone)]
pub struct ObjectKey {
    /// `ns/name` or `name`. Kubernetes names and namespaces never contain `/`, so
    /// the first `/` separates them (as in client-go's `SplitMetaNamespaceKey`).
    full: Arc<str>,
    /// `full` hashed with [`key_hasher`]. With the pointer pair, 24 bytes in every
    /// map and index that holds the key.
    hash: u64,
}

/// The hasher of every key's string, seeded at random once per process, so key
/// hashes cannot be predicted from outside (object names are chosen by users of
/// the cluster).
fn key_hasher() -> &'static foldhash::fast::RandomState {
    static HASHER: std::sync::OnceLock<foldhash::fast::RandomState> = std::sync::OnceLock::new();
    HASHER.get_or_init(foldhash::fast::RandomState::default)
}

impl ObjectKey {
    /// A key from an optional namespace and a name. An empty namespace means
    /// cluster-scoped, as in Kubernetes.
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        match namespace.filter(|ns| !ns.is_empty()) {
            Some(ns) => {
                let len = ns.len() + 1 + name.len();
                // Kubernetes names fit on the stack (namespace ≤ 63, name ≤ 253 bytes):
                // the key is then one allocation, the shared string itself.
                let mut buf = [0u8; KEY_STACK_BYTES];
                if len <= KEY_STACK_BYTES {
                    buf[..ns.len()].copy_from_slice(ns.as_bytes());
                    buf[ns.len()] = b'/';
                    buf[ns.len() + 1..len].copy_from_slice(name.as_bytes());
                    if let Ok(full) = std::str::from_utf8(&buf[..len]) {
                        return ObjectKey::from_full(full.into());
                    }
                }
                let mut full = String::with_capacity(len);
                full.push_str(ns);
                full.push('/');
                full.push_str(name);
                ObjectKey::from_full(full.into())
            }
            None => ObjectKey::from_full(name.into()),
        }
    }

    /// The key whose string is `full`.
    fn from_full(full: Arc<str>) -> Self {
        use std::hash::BuildHasher;
        let hash = key_hasher().hash_one(&*full);
        ObjectKey { full, hash }
    }

    /// The namespace, or `None` for a cluster-scoped key.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.slash().map(|at| &self.full[..at])
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.slash().map_or(&*self.full, |at| &self.full[at + 1..])
    }

    /// Where the `/` between namespace and name is. A byte search: the indexer asks
    /// for every cached object's namespace, and `split_once('/')` took 126
    /// instructions a call where this takes 39 (callgrind).
    fn slash(&self) -> Option<usize> {
        self.full.bytes().position(|b| b == b'/')
    }

    /// The key as a string: `ns/name` or `name`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.full
    }
}

impl FromStr for ObjectKey {
    type Err = KeyError;

    /// Parses `ns/name` or `name`, as client-go's `SplitMetaNamespaceKey`.
    fn from_str(s: &str) -> Result<Self, KeyError> {
        let mut parts = s.split('/');
        let first = parts.next().unwrap_or_default();
        match (parts.next(), parts.next()) {
            (None, _) if first.is_empty() => Err(KeyError::EmptyName(s.to_owned())),
            (None, _) => Ok(ObjectKey::new(None, first)),
            (Some(_), Some(_)) => Err(KeyError::TooManyParts(s.to_owned())),
            (Some(""), None) => Err(KeyError::EmptyName(s.to_owned())),
            (Some(_), None) if first.is_empty() => Err(KeyError::EmptyNamespace(s.to_owned())),
            (Some(name), None) => Ok(ObjectKey::new(Some(first), name)),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.full)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.full, f)
    }
}

impl PartialEq for ObjectKey {
    /// Keys with different hashes differ without a look at their bytes; clones of
    /// one key (the FIFO's queue and map, the cache) compare by pointer.
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && (Arc::ptr_eq(&self.full, &other.full) || self.full == other.full)
    }
}

impl Eq for ObjectKey {}

impl Hash for ObjectKey {
    /// Feeds the precomputed hash of the string, not the string: a `HashMap` keyed
    /// by `ObjectKey` is therefore looked up by `ObjectKey`, not by `&str`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.full.cmp(&other.full)
    }
}

/// A function that computes an object's cache key, shared by the FIFO and the
/// indexer that use it.
pub(crate) type KeyFunc<K> = Arc<dyn Fn(&K) -> Result<ObjectKey, KeyError> + Send + Sync>;

/// The default key function, as client-go's `MetaNamespaceKeyFunc`: `ns/name`, or
/// `name` when the object has no namespace.
///
/// # Errors
/// [`KeyError::MissingName`] when `metadata.name` is unset or empty.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::object::meta_namespace_key;
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("web".into());
/// cm.metadata.namespace = Some("prod".into());
/// assert_eq!(meta_namespace_key(&cm).unwrap().to_string(), "prod/web");
/// ```
pub fn meta_namespace_key<K: kube::Resource>(obj: &K) -> Result<ObjectKey, KeyError> {
    let meta = obj.meta();
    let name = meta
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or(KeyError::MissingName)?;
    Ok(ObjectKey::new(meta.namespace.as_deref(), name))
}

/// The key of a possibly-tombstoned object, as client-go's
/// `DeletionHandlingMetaNamespaceKeyFunc`: a tombstone's own key, else the object's.
///
/// # Errors
/// [`KeyError::MissingName`] when a non-tombstone object has no name.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::object::{deletion_handling_key, MaybeTombstone, ObjectKey};
/// let t = MaybeTombstone::DeletedFinalStateUnknown {
///     key: ObjectKey::new(Some("ns"), "gone"),
///     obj: Arc::new(ConfigMap::default()),
/// };
/// assert_eq!(deletion_handling_key(&t).unwrap().to_string(), "ns/gone");
/// ```
pub fn deletion_handling_key<K: kube::Resource>(
    obj: &MaybeTombstone<K>,
) -> Result<ObjectKey, KeyError> {
    match obj {
        MaybeTombstone::Object(o) => meta_namespace_key(o.as_ref()),
        MaybeTombstone::DeletedFinalStateUnknown { key, .. } => Ok(key.clone()),
    }
}

/// A type's last path segment without generics (`ConfigMap` for
/// `k8s_openapi::api::core::v1::ConfigMap`): names a kind in logs, metrics and
/// [`ObjectRef`]'s `Display` without needing its `DynamicType`.
pub(crate) fn short_type_name<T>() -> &'static str {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(ns: Option<&str>, name: Option<&str>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = ns.map(Into::into);
        cm.metadata.name = name.map(Into::into);
        cm
    }

    /// Keys longer than the stack buffer are built on the heap, with the same result.
    #[test]
    fn long_keys_are_built_like_short_ones() {
        for (ns_len, name_len) in [(3, 5), (63, 253), (200, 300)] {
            let (ns, name) = ("n".repeat(ns_len), "x".repeat(name_len));
            let key = ObjectKey::new(Some(&ns), &name);
            assert_eq!(key.as_str(), format!("{ns}/{name}"));
            assert_eq!(key.namespace(), Some(ns.as_str()));
            assert_eq!(key.name(), name);
            assert_eq!(key, format!("{ns}/{name}").parse().unwrap());
        }
        assert_ne!(
            ObjectKey::new(Some("a"), "b"),
            ObjectKey::new(Some("a"), "c")
        );
        // One shared string and its hash: three words in every map and index.
        assert_eq!(std::mem::size_of::<ObjectKey>(), 24);
        let cluster = ObjectKey::new(None, "node-1");
        assert_eq!((cluster.namespace(), cluster.name()), (None, "node-1"));
    }

    #[test]
    fn key_of_namespaced_and_cluster_scoped() {
        assert_eq!(
            meta_namespace_key(&cm(Some("ns"), Some("a")))
                .unwrap()
                .as_str(),
            "ns/a"
        );
        assert_eq!(
            meta_namespace_key(&cm(None, Some("a"))).unwrap().as_str(),
            "a"
        );
        assert_eq!(
            meta_namespace_key(&cm(Some(""), Some("a")))
                .unwrap()
                .namespace(),
            None
        );
        assert_eq!(
            meta_namespace_key(&cm(Some("ns"), None)),
            Err(KeyError::MissingName)
        );
        assert_eq!(
            meta_namespace_key(&cm(Some("ns"), Some(""))),
            Err(KeyError::MissingName)
        );
    }

    #[test]
    fn parse_round_trips_and_rejects_bad_keys() {
        for s in ["a", "ns/a"] {
            assert_eq!(s.parse::<ObjectKey>().unwrap().as_str(), s);
        }
        let k: ObjectKey = "ns/a".parse().unwrap();
        assert_eq!((k.namespace(), k.name()), (Some("ns"), "a"));
        assert!(matches!(
            "".parse::<ObjectKey>(),
            Err(KeyError::EmptyName(_))
        ));
        assert!(matches!(
            "ns/".parse::<ObjectKey>(),
            Err(KeyError::EmptyName(_))
        ));
        assert!(matches!(
            "/a".parse::<ObjectKey>(),
            Err(KeyError::EmptyNamespace(_))
        ));
        assert!(matches!(
            "a/b/c".parse::<ObjectKey>(),
            Err(KeyError::TooManyParts(_))
        ));
    }

    #[test]
    fn keys_order_and_hash_by_string_form() {
        use std::collections::HashSet;
        let mut keys = [
            ObjectKey::new(Some("b"), "x"),
            ObjectKey::new(None, "a"),
            ObjectKey::new(Some("a"), "z"),
        ];
        keys.sort();
        let strs: Vec<_> = keys.iter().map(ObjectKey::as_str).collect();
        assert_eq!(strs, ["a", "a/z", "b/x"]);
        let set: HashSet<ObjectKey> = keys.iter().cloned().collect();
        assert!(set.contains(&"a/z".parse::<ObjectKey>().unwrap()));
        assert!(!set.contains(&ObjectKey::new(Some("a"), "y")));
        // Built either way, equal keys are equal and hash alike.
        let (built, parsed) = (
            ObjectKey::new(Some("ns"), "n"),
            "ns/n".parse::<ObjectKey>().unwrap(),
        );
        assert_eq!(built, parsed);
        let hasher = std::collections::hash_map::RandomState::new();
        use std::hash::BuildHasher;
        assert_eq!(hasher.hash_one(&built), hasher.hash_one(&parsed));
    }

    #[test]
    fn deletion_handling_key_prefers_tombstone_key() {
        let obj = Arc::new(cm(Some("ns"), Some("live")));
        assert_eq!(
            deletion_handling_key(&MaybeTombstone::Object(obj.clone()))
                .unwrap()
                .as_str(),
            "ns/live"
        );
        let t = MaybeTombstone::DeletedFinalStateUnknown {
            key: ObjectKey::new(Some("ns"), "other"),
            obj,
        };
        assert!(t.is_tombstone());
        assert_eq!(deletion_handling_key(&t).unwrap().as_str(), "ns/other");
    }
}
