//! [`ObjectRef`]: an object's key with its kind in the type.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use kube::Resource;

use super::{KeyError, ObjectKey, meta_namespace_key, short_type_name};

/// The key of one object of kind `K`: its namespace (none when cluster-scoped) and
/// name, with the kind known at compile time, as kube-runtime's `ObjectRef`.
///
/// The key users handle: every user-facing API takes or answers it. A controller of
/// `K` reconciles `ObjectRef<K>`s, and the mappers given to
/// [`Controller::watches`](crate::controller::Controller::watches) return them, so a
/// mapper cannot enqueue a key of another kind; a
/// [`Lister::index_keys`](crate::lister::Lister::index_keys) and the
/// `#[derive(Reflect)]` `*_keys` queries answer them. It displays as the kind and
/// the client-go key (`ConfigMap demo/web`) and converts, for free, into the untyped
/// [`ObjectKey`] the stores, the FIFO and the work queue hold (and back, with
/// [`ObjectRef::from_key`]).
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::object::{ObjectKey, ObjectRef};
///
/// let web = ObjectRef::<ConfigMap>::new(Some("demo"), "web");
/// assert_eq!(web.to_string(), "ConfigMap demo/web");
/// assert_eq!((web.namespace(), web.name()), (Some("demo"), "web"));
/// assert_eq!(web.key(), &ObjectKey::new(Some("demo"), "web"));
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("demo".into());
/// cm.metadata.name = Some("web".into());
/// assert_eq!(ObjectRef::from_obj(&cm).unwrap(), web);
/// ```
pub struct ObjectRef<K> {
    key: ObjectKey,
    kind: PhantomData<fn() -> K>,
}

impl<K> ObjectRef<K> {
    /// The reference to the object `name` in `namespace` (`None` or empty:
    /// cluster-scoped).
    #[must_use]
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        Self::from_key(ObjectKey::new(namespace, name))
    }

    /// The reference to the object cached under `key`.
    #[must_use]
    pub fn from_key(key: ObjectKey) -> Self {
        ObjectRef {
            key,
            kind: PhantomData,
        }
    }

    /// The namespace, or `None` for a cluster-scoped object.
    #[must_use]
    pub fn namespace(&self) -> Option<&str> {
        self.key.namespace()
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.key.name()
    }

    /// The untyped cache key (`ns/name` or `name`).
    #[must_use]
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The untyped cache key, by value.
    #[must_use]
    pub fn into_key(self) -> ObjectKey {
        self.key
    }
}

impl<K: Resource> ObjectRef<K> {
    /// The reference to `obj`.
    ///
    /// # Errors
    /// [`KeyError::MissingName`] when `metadata.name` is unset or empty.
    pub fn from_obj(obj: &K) -> Result<Self, KeyError> {
        meta_namespace_key(obj).map(Self::from_key)
    }
}

impl<K> From<ObjectRef<K>> for ObjectKey {
    fn from(r: ObjectRef<K>) -> Self {
        r.key
    }
}

impl<K> Clone for ObjectRef<K> {
    fn clone(&self) -> Self {
        Self::from_key(self.key.clone())
    }
}

impl<K> PartialEq for ObjectRef<K> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<K> Eq for ObjectRef<K> {}

impl<K> Hash for ObjectRef<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key.hash(state);
    }
}

impl<K> PartialOrd for ObjectRef<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for ObjectRef<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

impl<K> fmt::Display for ObjectRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", short_type_name::<K>(), self.key)
    }
}

impl<K> fmt::Debug for ObjectRef<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ObjectRef<{}>({:?})",
            short_type_name::<K>(),
            self.key.as_str()
        )
    }
}
