//! [`Entry`]: one change an [`InOrderFifo`](super::InOrderFifo) hands its consumer.

use std::fmt;
use std::sync::Arc;

use crate::fifo::Delta;

/// One entry of an [`InOrderFifo`](super::InOrderFifo), in the order the reflector
/// handed it over, as a `Delta` of client-go's `RealFIFO`.
///
/// With atomic events (the default), a relist is one [`Entry::ReplacedAll`], a
/// resync one [`Entry::SyncAll`], and each watch bookmark an [`Entry::Bookmark`];
/// every watch event is an [`Entry::Delta`]. Without them (see
/// [`InOrderFifo::atomic`](super::InOrderFifo::atomic)), a relist and a resync
/// become per-object deltas computed against the consumer's cache, and bookmarks are
/// not queued.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::fifo::{DeltaType, Entry, InOrderFifo};
/// use reflector::store::Store;
///
/// let fifo = InOrderFifo::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// fifo.add(Arc::new(cm.clone())).unwrap();
/// fifo.replace(vec![Arc::new(cm)], "7").unwrap();
/// let first = fifo.pop(|entry, _| entry).await.unwrap();
/// assert!(matches!(first, Entry::Delta(d) if d.delta_type == DeltaType::Added));
/// let second = fifo.pop(|entry, _| entry).await.unwrap();
/// assert!(matches!(second, Entry::ReplacedAll { objects, .. } if objects.len() == 1));
/// # }
/// ```
#[non_exhaustive]
pub enum Entry<K> {
    /// A change to one object: a watch event (`Added`, `Updated`, `Deleted`); or,
    /// without atomic events, an object a relist listed (`Replaced`), a relist's
    /// inferred deletion (`Deleted` with a
    /// [`DeletedFinalStateUnknown`](crate::object::MaybeTombstone::DeletedFinalStateUnknown)
    /// tombstone) or a resync's re-delivery (`Sync`); or an object of a first list
    /// streamed page by page (`Replaced`).
    Delta(Delta<K>),
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
    /// Whether this entry may share a batch with its neighbours: per-object deltas
    /// and bookmarks may, a whole list or resync is processed alone. client-go's
    /// `PopBatch` also takes a bookmark alone; here it rides with the deltas before
    /// it, so the batch's watermark is the bookmark's version.
    pub(crate) fn is_batchable(&self) -> bool {
        matches!(self, Entry::Delta(_) | Entry::Bookmark { .. })
    }
}

impl<K> Clone for Entry<K> {
    fn clone(&self) -> Self {
        match self {
            Entry::Delta(d) => Entry::Delta(d.clone()),
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
            Entry::Delta(d) => f.debug_tuple("Delta").field(d).finish(),
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
            (Entry::Delta(a), Entry::Delta(b)) => a == b,
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
