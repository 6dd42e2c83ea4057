//! The DeltaFifo's state under its lock, and the guard that counts popped items
//! out of the initial population.

use std::collections::{HashMap, VecDeque};

use foldhash::fast::RandomState;

use super::DeltaFifo;
use crate::fifo::Deltas;
use crate::fifo::queue_core::{HasLifecycle, Lifecycle};
use crate::object::ObjectKey;

/// Queue capacity above which a drained FIFO frees its room (a relist of more keys
/// than this). Small enough to matter, large enough that watch traffic, whose queue
/// stays short, never shrinks and regrows it.
pub(super) const SHRINK_ABOVE: usize = 4096;

/// The FIFO's state. Every field is guarded by `DeltaFifo::core`'s lock.
pub(super) struct State<K> {
    /// Key to its pending deltas. Guarded by `DeltaFifo::core`'s lock. Every entry holds at
    /// least one delta; a key is here if and only if it is in `queue`. Hashed with
    /// foldhash (randomly seeded, as hashbrown's default), as each add+pop hashes the
    /// key twice (measured with the `informer` bench's pipeline).
    pub(super) items: HashMap<ObjectKey, Deltas<K>, RandomState>,
    /// Keys in first-enqueue order, each at most once. Guarded by `DeltaFifo::core`'s lock.
    pub(super) queue: VecDeque<ObjectKey>,
    /// The first list (the first `replace`, or a streamed one) and closing. Guarded
    /// by `DeltaFifo::core`'s lock.
    pub(super) life: Lifecycle,
    /// The resource version through which the reflector has handed everything over:
    /// its last list's, or the last event's or bookmark's of its last watch run;
    /// empty before the first. Guarded by `DeltaFifo::core`'s lock.
    pub(super) handed_rv: String,
    /// `handed_rv` changed since a batch pop last answered it as the consumer's
    /// watermark. Guarded by `DeltaFifo::core`'s lock.
    pub(super) watermark_due: bool,
}

impl<K> HasLifecycle for State<K> {
    fn life(&mut self) -> &mut Lifecycle {
        &mut self.life
    }
}

/// Items a `pop` took, in its callback's hands; dropped when the callback returns
/// (or unwinds), which counts them out of the initial population.
pub(super) struct Popped<'a, K> {
    pub(super) fifo: &'a DeltaFifo<K>,
    pub(super) count: usize,
}

impl<K> Drop for Popped<'_, K> {
    fn drop(&mut self) {
        self.fifo.finish_processing(self.count);
    }
}
