//! The in-order FIFO's state under its lock, and what each queued entry carries.

use std::collections::VecDeque;

use super::Entry;
use crate::fifo::queue_core::{HasLifecycle, Lifecycle};
use crate::object::{Object, ObjectKey};

/// `obj`'s resource version (empty when unset).
pub(super) fn resource_version_of<K: Object>(obj: &K) -> &str {
    obj.meta().resource_version.as_deref().unwrap_or_default()
}

/// Queue capacity above which a drained FIFO frees its room, as the DeltaFifo's.
pub(super) const SHRINK_ABOVE: usize = 4096;

/// Where the resource version an entry brings the consumer's cache up to comes
/// from, once the entry and every one before it is processed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Mark {
    /// None: a listed object (its version says nothing about the others) or a
    /// resync.
    None,
    /// The object's own: a watch event, which the API server delivers in
    /// resource-version order.
    Object,
    /// This version: a bookmark's, or a whole list's.
    Version(String),
}

/// One queued entry, with the key of its object (for a [`Entry::Delta`]) and its
/// [`Mark`].
pub(super) struct Queued<K> {
    pub(super) key: Option<ObjectKey>,
    pub(super) entry: Entry<K>,
    pub(super) mark: Mark,
}

impl<K: Object> Queued<K> {
    /// A per-object delta, keyed.
    pub(super) fn delta(key: ObjectKey, delta: crate::fifo::Delta<K>, mark: Mark) -> Self {
        Queued {
            key: Some(key),
            entry: Entry::Delta(delta),
            mark,
        }
    }

    /// A watch bookmark (or the end of a streamed first list) at `rv`.
    pub(super) fn bookmark(rv: &str) -> Self {
        Queued {
            key: None,
            entry: Entry::Bookmark {
                resource_version: rv.to_owned(),
            },
            mark: Mark::Version(rv.to_owned()),
        }
    }

    /// The resource version this entry brings the cache up to, if any.
    pub(super) fn watermark(&self) -> Option<&str> {
        let rv = match (&self.mark, &self.entry) {
            (Mark::None, _) => return None,
            (Mark::Version(rv), _) => rv.as_str(),
            (Mark::Object, Entry::Delta(d)) => resource_version_of(d.object.object().as_ref()),
            (Mark::Object, _) => return None,
        };
        (!rv.is_empty()).then_some(rv)
    }
}

/// The FIFO's state. Every field is guarded by `InOrderFifo::core`'s lock.
pub(super) struct State<K> {
    /// Entries in the order they were handed over. Guarded by `InOrderFifo::core`'s lock.
    pub(super) queue: VecDeque<Queued<K>>,
    /// The first list (the first `replace`, or a streamed one) and closing. Guarded
    /// by `InOrderFifo::core`'s lock.
    pub(super) life: Lifecycle,
    /// Entries popped whose processing has not returned yet: the queue counts as
    /// drained only when this is zero too. Guarded by `InOrderFifo::core`'s lock.
    pub(super) in_flight: usize,
    /// The resource version of the last queued entry that carries one: what the
    /// consumer's watermark reaches once everything queued is processed, so a
    /// `handed_over` of the same version queues nothing. Empty until the first.
    /// Guarded by `InOrderFifo::core`'s lock.
    pub(super) queued_rv: String,
    /// The watermark a batch pop answered last (answered only when it moves).
    /// Guarded by `InOrderFifo::core`'s lock.
    pub(super) answered_rv: String,
}

impl<K> HasLifecycle for State<K> {
    fn life(&mut self) -> &mut Lifecycle {
        &mut self.life
    }
}

impl<K> State<K> {
    pub(super) fn new() -> Self {
        State {
            queue: VecDeque::new(),
            life: Lifecycle::new(),
            in_flight: 0,
            queued_rv: String::new(),
            answered_rv: String::new(),
        }
    }

    /// Appends `entries` in order, noting the last version they carry.
    pub(super) fn push_all_locked(&mut self, entries: impl IntoIterator<Item = Queued<K>>)
    where
        K: Object,
    {
        for queued in entries {
            if let Some(rv) = queued.watermark() {
                rv.clone_into(&mut self.queued_rv);
            }
            self.queue.push_back(queued);
        }
    }

    /// Whether nothing is queued and nothing is being processed.
    pub(super) fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.in_flight == 0
    }
}
