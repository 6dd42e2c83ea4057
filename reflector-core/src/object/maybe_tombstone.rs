//! [`MaybeTombstone`]: an object, or the tombstone left for a delete that was missed.

use std::sync::Arc;

use super::ObjectKey;

/// An object, or the tombstone a relist leaves for an object whose delete was
/// missed, as client-go's `interface{}` holding an object or a
/// `DeletedFinalStateUnknown`.
///
/// Every [`Delta`](crate::fifo::Delta) carries one, and so does every delete
/// notification ([`Change::Deleted`](crate::informer::Change::Deleted),
/// [`EventHandler::on_delete`](crate::informer::EventHandler::on_delete)): the
/// deleted object's final state, or a tombstone when the watch was down during the
/// delete and a relist found the object gone. [`object`](MaybeTombstone::object)
/// gives the object either way.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::object::{MaybeTombstone, ObjectKey};
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// let cm = Arc::new(cm);
///
/// let observed = MaybeTombstone::Object(Arc::clone(&cm));
/// let missed = MaybeTombstone::DeletedFinalStateUnknown {
///     key: ObjectKey::new(None, "a"),
///     obj: Arc::clone(&cm),
/// };
/// assert!(!observed.is_tombstone() && missed.is_tombstone());
/// assert_eq!(missed.object().metadata.name.as_deref(), Some("a"));
/// ```
#[derive(Debug)]
pub enum MaybeTombstone<K> {
    /// The object: its state after the change (its final state for a delete).
    Object(Arc<K>),
    /// A delete inferred from a relist, as client-go's `DeletedFinalStateUnknown`:
    /// the object was gone, so its final state is unknown.
    DeletedFinalStateUnknown {
        /// The key the object was cached under.
        key: ObjectKey,
        /// The last state the cache (or the FIFO) knew.
        obj: Arc<K>,
    },
}

impl<K> MaybeTombstone<K> {
    /// The object: the carried state, or the tombstone's last known state.
    #[must_use]
    pub fn object(&self) -> &Arc<K> {
        match self {
            MaybeTombstone::Object(obj) | MaybeTombstone::DeletedFinalStateUnknown { obj, .. } => {
                obj
            }
        }
    }

    /// The object, taken: the carried state, or the tombstone's last known state.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::object::MaybeTombstone;
    /// let cm = Arc::new(ConfigMap::default());
    /// let taken = MaybeTombstone::Object(Arc::clone(&cm)).into_object();
    /// assert!(Arc::ptr_eq(&taken, &cm));
    /// ```
    #[must_use]
    pub fn into_object(self) -> Arc<K> {
        match self {
            MaybeTombstone::Object(obj) | MaybeTombstone::DeletedFinalStateUnknown { obj, .. } => {
                obj
            }
        }
    }

    /// Whether this is a [`DeletedFinalStateUnknown`](MaybeTombstone::DeletedFinalStateUnknown)
    /// tombstone.
    #[must_use]
    pub fn is_tombstone(&self) -> bool {
        matches!(self, MaybeTombstone::DeletedFinalStateUnknown { .. })
    }
}

impl<K> Clone for MaybeTombstone<K> {
    fn clone(&self) -> Self {
        match self {
            MaybeTombstone::Object(obj) => MaybeTombstone::Object(Arc::clone(obj)),
            MaybeTombstone::DeletedFinalStateUnknown { key, obj } => {
                MaybeTombstone::DeletedFinalStateUnknown {
                    key: key.clone(),
                    obj: Arc::clone(obj),
                }
            }
        }
    }
}

/// Compares the objects by value (and the tombstone keys), as client-go's tests
/// compare deltas with `reflect.DeepEqual`.
impl<K: PartialEq> PartialEq for MaybeTombstone<K> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (MaybeTombstone::Object(a), MaybeTombstone::Object(b)) => a == b,
            (
                MaybeTombstone::DeletedFinalStateUnknown { key: ka, obj: a },
                MaybeTombstone::DeletedFinalStateUnknown { key: kb, obj: b },
            ) => ka == kb && a == b,
            _ => false,
        }
    }
}

impl<K> From<Arc<K>> for MaybeTombstone<K> {
    fn from(obj: Arc<K>) -> Self {
        MaybeTombstone::Object(obj)
    }
}
