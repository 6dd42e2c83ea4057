//! The DeltaFifo's state under its lock, and the guard that counts popped items
//! out of the initial population.

use std::collections::{HashMap, VecDeque};

use foldhash::fast::RandomState;

use super::DeltaFifo;
use crate::fifo::Deltas;
use crate::object::ObjectKey;

/// Queue capacity above which a drained FIFO frees its room (a relist of more keys
/// than this). Small enough to matter, large enough that watch traffic, whose queue
/// stays short, never shrinks and regrows it.
pub(super) const SHRINK_ABOVE: usize = 4096;

/// The FIFO's state. Every field is guarded by `DeltaFifo::state`.
pub(super) struct State<K> {
    /// Key to its pending deltas. Guarded by `DeltaFifo::state`. Every entry holds at
    /// least one delta; a key is here if and only if it is in `queue`. Hashed with
    /// foldhash (randomly seeded, as hashbrown's default), as each add+pop hashes the
    /// key twice (measured with the `informer` bench's pipeline).
    pub(super) items: HashMap<ObjectKey, Deltas<K>, RandomState>,
    /// Keys in first-enqueue order, each at most once. Guarded by `DeltaFifo::state`.
    pub(super) queue: VecDeque<ObjectKey>,
    /// Whether the first `replace` happened, or an `add`/`update`/`delete` came
    /// first. Guarded by `DeltaFifo::state`.
    pub(super) populated: bool,
    /// Items of the first `replace` not yet popped. Guarded by `DeltaFifo::state`.
    pub(super) initial_population_count: usize,
    /// Latched `populated && initial_population_count == 0`: set once, by
    /// `check_synced_locked`, whose caller then wakes `wait_synced`. Guarded by
    /// `DeltaFifo::state`.
    pub(super) synced: bool,
    /// Set by `close`; pops fail with `Closed` once the queue is drained, writes fail
    /// at once. Guarded by `DeltaFifo::state`.
    pub(super) closed: bool,
    /// A first list is coming in page by page (`stream_list_page` took its first
    /// page into an empty FIFO); `finish_list_stream` ends it, `replace` or a
    /// refused first page cancels it. Guarded by `DeltaFifo::state`.
    pub(super) streaming: bool,
    /// The resource version through which the reflector has handed everything over:
    /// its last list's, or the last event's or bookmark's of its last watch run;
    /// empty before the first. Guarded by `DeltaFifo::state`.
    pub(super) handed_rv: String,
    /// `handed_rv` changed since a batch pop last answered it as the consumer's
    /// watermark. Guarded by `DeltaFifo::state`.
    pub(super) watermark_due: bool,
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
