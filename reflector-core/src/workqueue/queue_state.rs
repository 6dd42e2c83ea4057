//! The work queue's locked state: the ready queue, the dirty and processing sets
//! and the heap of delayed items, with the transitions made under the queue's lock.

use std::cmp::Ordering;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::metrics::QueueMetrics;
use super::queue::QueueItem;

/// How often the "unfinished work" gauges are refreshed from `get`/`done`
/// (500 ms, as client-go's `updateUnfinishedWorkLoop` period).
const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// Everything guarded by `Inner::state`.
pub(super) struct State<T> {
    /// Items ready for a worker, oldest first. Each is also a key of `dirty`
    /// and never a key of `processing`. Guarded by `Inner::state`.
    pub(super) queue: VecDeque<T>,
    /// Items that need processing (queued, or added again while being
    /// processed), with their add time when metrics are on. Guarded by
    /// `Inner::state`.
    pub(super) dirty: HashMap<T, Option<Instant>>,
    /// Items handed to a worker and not yet done, with their start time when
    /// metrics are on. Guarded by `Inner::state`.
    pub(super) processing: HashMap<T, Option<Instant>>,
    /// Delayed items: the earliest ready time of each and the sequence number
    /// of its live heap entry. Guarded by `Inner::state`.
    pub(super) waiting: HashMap<T, (Instant, u64)>,
    /// Min-heap of waiting entries by ready time. Entries whose sequence
    /// number no longer matches `waiting` are stale and skipped. Guarded by
    /// `Inner::state`.
    pub(super) heap: BinaryHeap<WaitEntry<T>>,
    /// Next heap sequence number. Guarded by `Inner::state`.
    pub(super) next_seq: u64,
    /// Set by either shutdown; never cleared. Guarded by `Inner::state`.
    pub(super) is_shutting_down: bool,
    /// Set by `shutdown_with_drain`, cleared by `shutdown`. Guarded by
    /// `Inner::state`.
    pub(super) drain: bool,
    /// When the unfinished-work gauges were last refreshed. Guarded by
    /// `Inner::state`.
    pub(super) last_unfinished_update: Option<Instant>,
}

/// One delayed item in the heap, ordered so that the earliest ready time (then
/// the earliest insertion) is on top of the max-heap.
pub(super) struct WaitEntry<T> {
    pub(super) ready: Instant,
    pub(super) seq: u64,
    pub(super) item: T,
}

impl<T> PartialEq for WaitEntry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ready == other.ready && self.seq == other.seq
    }
}

impl<T> Eq for WaitEntry<T> {}

impl<T> PartialOrd for WaitEntry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for WaitEntry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .ready
            .cmp(&self.ready)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Outcome of one attempt to take an item.
pub(super) enum Take<T> {
    Item(T),
    ShutDown,
    /// Nothing to take now; the earliest time a waiting item becomes due.
    Empty(Option<Instant>),
}

impl<T: QueueItem> State<T> {
    pub(super) fn new() -> Self {
        State {
            queue: VecDeque::new(),
            dirty: HashMap::new(),
            processing: HashMap::new(),
            waiting: HashMap::new(),
            heap: BinaryHeap::new(),
            next_seq: 0,
            is_shutting_down: false,
            drain: false,
            last_unfinished_update: None,
        }
    }

    /// Marks `item` dirty and queues it unless it is being processed. Returns
    /// whether it was pushed onto `queue`.
    pub(super) fn add_locked(
        &mut self,
        item: T,
        now: Option<Instant>,
        metrics: Option<&Arc<dyn QueueMetrics>>,
    ) -> bool {
        if self.is_shutting_down {
            return false;
        }
        let item = match self.dirty.entry(item) {
            Entry::Occupied(_) => return false,
            Entry::Vacant(slot) => {
                let item = slot.key().clone();
                slot.insert(now);
                item
            }
        };
        if let Some(m) = metrics {
            m.add();
        }
        if self.processing.contains_key(&item) {
            return false;
        }
        self.queue.push_back(item);
        true
    }

    /// Moves every waiting item whose ready time is `<= now` into the queue
    /// (through the dirty set). Returns how many were pushed onto `queue`.
    pub(super) fn promote_due_locked(
        &mut self,
        now: Instant,
        metrics: Option<&Arc<dyn QueueMetrics>>,
    ) -> usize {
        let mut pushed = 0;
        while self.heap.peek().is_some_and(|top| top.ready <= now) {
            let Some(entry) = self.heap.pop() else { break };
            let live = self
                .waiting
                .get(&entry.item)
                .is_some_and(|&(_, seq)| seq == entry.seq);
            if !live {
                continue;
            }
            self.waiting.remove(&entry.item);
            let stamp = metrics.map(|_| now);
            if self.add_locked(entry.item, stamp, metrics) {
                pushed += 1;
            }
        }
        pushed
    }

    /// Takes the next item for a worker, if any.
    pub(super) fn take_locked(&mut self, metrics: Option<&Arc<dyn QueueMetrics>>) -> Take<T> {
        let now = if metrics.is_some() || !self.heap.is_empty() {
            Some(Instant::now())
        } else {
            None
        };
        if let Some(now) = now {
            self.promote_due_locked(now, metrics);
        }
        match self.queue.pop_front() {
            Some(item) => {
                let added = self.dirty.remove(&item).flatten();
                if let (Some(m), Some(now)) = (metrics, now) {
                    m.get(added.map_or(Duration::ZERO, |at| now.saturating_duration_since(at)));
                }
                self.processing
                    .insert(item.clone(), now.filter(|_| metrics.is_some()));
                if let (Some(m), Some(now)) = (metrics, now) {
                    self.maybe_update_unfinished_locked(m, now);
                }
                Take::Item(item)
            }
            None if self.is_shutting_down => Take::ShutDown,
            None => Take::Empty(self.heap.peek().map(|top| top.ready)),
        }
    }

    /// Refreshes the unfinished-work gauges if the last refresh is older than
    /// [`UNFINISHED_WORK_UPDATE_PERIOD`].
    pub(super) fn maybe_update_unfinished_locked(
        &mut self,
        metrics: &Arc<dyn QueueMetrics>,
        now: Instant,
    ) {
        let due = self
            .last_unfinished_update
            .is_none_or(|at| now.saturating_duration_since(at) >= UNFINISHED_WORK_UPDATE_PERIOD);
        if due {
            self.update_unfinished_locked(metrics, now);
        }
    }

    /// Reports the summed and the longest running time of the items being processed.
    pub(super) fn update_unfinished_locked(
        &mut self,
        metrics: &Arc<dyn QueueMetrics>,
        now: Instant,
    ) {
        let mut total = Duration::ZERO;
        let mut longest = Duration::ZERO;
        for started in self.processing.values().flatten() {
            let running = now.saturating_duration_since(*started);
            total = total.saturating_add(running);
            longest = longest.max(running);
        }
        metrics.unfinished_work(total, longest);
        self.last_unfinished_update = Some(now);
    }
}
