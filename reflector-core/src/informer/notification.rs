//! What travels from the informer to each listener.

use std::sync::Arc;

use crate::object::MaybeTombstone;

use super::EventHandler;

/// One notification for a listener, as client-go's add/update/deleteNotification.
pub(crate) enum Notification<K> {
    Add {
        obj: Arc<K>,
        is_in_initial_list: bool,
    },
    Update {
        old: Arc<K>,
        new: Arc<K>,
        /// A resync (delivered only to listeners due for one): every `Sync` delta,
        /// and a relisted object whose resource version did not change.
        is_sync: bool,
    },
    Delete(MaybeTombstone<K>),
}

/// Notifications of one popped batch, shared by every listener.
pub(crate) type Batch<K> = std::sync::Arc<[Notification<K>]>;

/// What a listener's buffer holds.
pub(crate) enum Message<K> {
    /// One notification (initial adds for a late handler).
    One(Notification<K>),
    /// A batch, and whether this listener takes its resync entries.
    Batch { items: Batch<K>, syncing: bool },
}

impl<K: 'static> Message<K> {
    /// The notifications of this message the listener takes: a single one; of a
    /// batch, the resync entries only when `syncing`.
    pub(crate) fn taken(&self) -> impl Iterator<Item = &Notification<K>> {
        let (items, syncing): (&[Notification<K>], bool) = match self {
            Message::One(n) => (std::slice::from_ref(n), true),
            Message::Batch { items, syncing } => (items, *syncing),
        };
        items.iter().filter(move |n| syncing || !n.is_sync())
    }

    /// How many of [`taken`](Self::taken) are initial-list adds.
    pub(crate) fn initial_adds(&self) -> usize {
        self.taken().filter(|n| n.is_initial_add()).count()
    }
}

impl<K> Notification<K> {
    /// What writing `new` to the cache tells listeners, given the object it
    /// replaced: an update of `old` (a resync if `is_sync(old, new)`), or an add if
    /// nothing was cached under its key.
    #[inline]
    pub(crate) fn of_upsert(
        old: Option<Arc<K>>,
        new: Arc<K>,
        is_in_initial_list: bool,
        is_sync: impl FnOnce(&K, &K) -> bool,
    ) -> Self {
        match old {
            Some(old) => {
                let is_sync = is_sync(&old, &new);
                Notification::Update { old, new, is_sync }
            }
            None => Notification::Add {
                obj: new,
                is_in_initial_list,
            },
        }
    }
}

impl<K: 'static> Notification<K> {
    /// Whether this is a resync, which goes only to listeners due for one.
    pub(crate) fn is_sync(&self) -> bool {
        matches!(self, Notification::Update { is_sync: true, .. })
    }

    /// Whether this is an add from the initial list (tracked for the handler's
    /// `has_synced`).
    pub(crate) fn is_initial_add(&self) -> bool {
        matches!(
            self,
            Notification::Add {
                is_in_initial_list: true,
                ..
            }
        )
    }

    /// Calls the matching method of `handler`.
    pub(crate) fn dispatch(&self, handler: &dyn EventHandler<K>) {
        match self {
            Notification::Add {
                obj,
                is_in_initial_list,
            } => handler.on_add(obj, *is_in_initial_list),
            Notification::Update { old, new, .. } => handler.on_update(old, new),
            Notification::Delete(d) => handler.on_delete(d),
        }
    }
}
