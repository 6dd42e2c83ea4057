//! [`Entry`]: one item a [`Fifo`](super::Fifo) hands its consumer; [`Popped`]: an
//! entry in a popped batch, with its key.

use std::fmt;
use std::sync::Arc;

use super::Deltas;
use crate::object::ObjectKey;

/// One item of a [`Fifo`](super::Fifo), as client-go's `Deltas` (a DeltaFIFO's
/// item) or a `RealFIFO`'s `Delta`.
///
/// [`Entry::Deltas`] holds changes to one object: in the
/// [in-order](super::QueueMode::InOrder) mode one change, in the
/// [per-key](super::QueueMode::PerKey) mode every change since the key was queued.
/// The other entries come only in the in-order mode: a relist is one
/// [`Entry::ReplacedAll`], a resync one [`Entry::SyncAll`], and each watch bookmark
/// (or the end of a first list streamed page by page) an [`Entry::Bookmark`].
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::fifo::{DeltaType, Entry, Fifo};
///
/// let fifo = Fifo::<ConfigMap>::default();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// fifo.add(Arc::new(cm.clone())).unwrap();
/// fifo.replace(vec![Arc::new(cm)], "7").unwrap();
/// let first = fifo.pop(|entry, _| entry).await.unwrap();
/// assert!(matches!(first, Entry::Deltas(d) if d[0].delta_type == DeltaType::Added));
/// let second = fifo.pop(|entry, _| entry).await.unwrap();
/// assert!(matches!(second, Entry::ReplacedAll { objects, .. } if objects.len() == 1));
/// # }
/// ```
#[non_exhaustive]
pub enum Entry<K> {
    /// Changes to one object, oldest first (never empty): watch events (`Added`,
    /// `Updated`, `Deleted`); listed objects (`Replaced`, or `Sync` in the per-key
    /// mode unless [`emit_replaced`](super::Fifo::emit_replaced)); a relist's inferred
    /// deletions (`Deleted` with a
    /// [`DeletedFinalStateUnknown`](crate::object::MaybeTombstone::DeletedFinalStateUnknown)
    /// tombstone); a resync's re-deliveries (`Sync`).
    Deltas(Deltas<K>),
    /// A whole list, to be applied at once: the cache then holds exactly `objects`
    /// (transformed already), a state that existed at `resource_version`.
    #[doc(alias = "ReplacedAllInfo")]
    ReplacedAll {
        /// The listed objects, in list order.
        objects: Vec<Arc<K>>,
        /// The list's resource version.
        resource_version: String,
    },
    /// A resync: every cached object is re-delivered as it is when this entry is
    /// processed.
    #[doc(alias = "SyncAllInfo")]
    SyncAll,
    /// A watch bookmark, or the end of a first list streamed page by page: every
    /// entry before it brings the cache up to `resource_version`.
    #[doc(alias = "BookmarkInfo")]
    Bookmark {
        /// The bookmark's (or the list's) resource version.
        resource_version: String,
    },
}

impl<K> Entry<K> {
    /// The changes of an [`Entry::Deltas`]; `None` for the other entries.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use reflector::fifo::{Delta, DeltaType, Deltas, Entry};
    /// let entry = Entry::Deltas(Deltas::from(vec![Delta::new(DeltaType::Added, Arc::new(1))]));
    /// assert_eq!(entry.deltas().map(|d| d.len()), Some(1));
    /// assert!(Entry::<u32>::SyncAll.deltas().is_none());
    /// ```
    #[must_use]
    pub fn deltas(&self) -> Option<&Deltas<K>> {
        match self {
            Entry::Deltas(d) => Some(d),
            _ => None,
        }
    }

    /// Whether this entry may share a batch with its neighbours: changes to objects
    /// and bookmarks may, a whole list or resync is processed alone. client-go's
    /// `PopBatch` also takes a bookmark alone; here it rides with the changes before
    /// it.
    pub(super) fn is_batchable(&self) -> bool {
        matches!(self, Entry::Deltas(_) | Entry::Bookmark { .. })
    }
}

impl<K> Clone for Entry<K> {
    fn clone(&self) -> Self {
        match self {
            Entry::Deltas(d) => Entry::Deltas(d.clone()),
            Entry::ReplacedAll {
                objects,
                resource_version,
            } => Entry::ReplacedAll {
                objects: objects.clone(),
                resource_version: resource_version.clone(),
            },
            Entry::SyncAll => Entry::SyncAll,
            Entry::Bookmark { resource_version } => Entry::Bookmark {
                resource_version: resource_version.clone(),
            },
        }
    }
}

impl<K: fmt::Debug> fmt::Debug for Entry<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Deltas(d) => f.debug_tuple("Deltas").field(d).finish(),
            Entry::ReplacedAll {
                objects,
                resource_version,
            } => f
                .debug_struct("ReplacedAll")
                .field("objects", objects)
                .field("resource_version", resource_version)
                .finish(),
            Entry::SyncAll => f.write_str("SyncAll"),
            Entry::Bookmark { resource_version } => f
                .debug_struct("Bookmark")
                .field("resource_version", resource_version)
                .finish(),
        }
    }
}

impl<K: PartialEq> PartialEq for Entry<K> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Entry::Deltas(a), Entry::Deltas(b)) => a == b,
            (
                Entry::ReplacedAll {
                    objects: a,
                    resource_version: ra,
                },
                Entry::ReplacedAll {
                    objects: b,
                    resource_version: rb,
                },
            ) => a == b && ra == rb,
            (Entry::SyncAll, Entry::SyncAll) => true,
            (
                Entry::Bookmark {
                    resource_version: a,
                },
                Entry::Bookmark {
                    resource_version: b,
                },
            ) => a == b,
            _ => false,
        }
    }
}

/// One entry of a popped batch: what the informer applies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Popped<K> {
    /// The key of an [`Entry::Deltas`]'s object (a tombstone's own key); `None` for
    /// the other entries.
    pub(crate) key: Option<ObjectKey>,
    /// The entry.
    pub(crate) entry: Entry<K>,
    /// Whether the entry belongs to the first list (popped before the queue synced),
    /// as client-go's `isInInitialList`.
    pub(crate) is_in_initial_list: bool,
}
