//! The work queue's locked state: the ready queue, the dirty and processing sets
//! and the heap of delayed items, with the transitions made under the queue's lock.

use std::cmp::Ordering;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::Priority;
use super::metrics::QueueMetrics;
use super::queue::QueueItem;

/// How often the "unfinished work" gauges are refreshed from `get`/`done`
/// (500 ms, as client-go's `updateUnfinishedWorkLoop` period).
const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// Everything guarded by `Inner::state`.
pub(super) struct State<T> {
    /// Items ready for a worker, by priority. Each is also a key of `dirty` (whose
    /// entry names its live place here) and never a key of `processing`. Guarded
    /// by `Inner::state`.
    pub(super) ready: Ready<T>,
    /// Items that need processing (queued, or added again while being
    /// processed): their priority, the sequence number of their live `ready` entry,
    /// and their add time when metrics are on. Guarded by `Inner::state`.
    pub(super) dirty: HashMap<T, Dirty>,
    /// Items handed to a worker and not yet done, with their priority and their
    /// start time when metrics are on. Guarded by `Inner::state`.
    pub(super) processing: HashMap<T, (Priority, Option<Instant>)>,
    /// Delayed items: the earliest ready time of each, the sequence number of its
    /// live heap entry, and the priority it is queued at. Guarded by `Inner::state`.
    pub(super) waiting: HashMap<T, (Instant, u64, Priority)>,
    /// Min-heap of waiting entries by ready time. Entries whose sequence
    /// number no longer matches `waiting` are stale and skipped. Guarded by
    /// `Inner::state`.
    pub(super) heap: BinaryHeap<WaitEntry<T>>,
    /// Next sequence number, of heap and `ready` entries alike. Guarded by
    /// `Inner::state`.
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

/// A dirty item: its priority, where it is queued, since when.
#[derive(Clone, Copy)]
pub(super) struct Dirty {
    pub(super) priority: Priority,
    /// The sequence number of its live `ready` entry (meaningless while the item is
    /// processed: it is queued again, with a new one, by `done`).
    pub(super) seq: u64,
    /// When it was added, with metrics on.
    pub(super) added: Option<Instant>,
}

/// The items ready for a worker: a FIFO per priority, the highest first. Raising a
/// queued item's priority queues it again in the higher FIFO; the entry left behind
/// is stale (its sequence number is no longer the item's `Dirty::seq`) and skipped.
pub(super) struct Ready<T> {
    /// By priority, highest first; in each, `(seq, item)` in the order queued.
    lanes: Vec<(Priority, VecDeque<(u64, T)>)>,
    /// How many entries are live: the number of items ready.
    live: usize,
}

impl<T: QueueItem> Ready<T> {
    fn new() -> Self {
        Ready {
            lanes: Vec::new(),
            live: 0,
        }
    }

    /// How many items are ready.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// Whether no item is ready.
    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Queues `item` at `priority` as entry `seq`; `replaces` says it stands for an
    /// entry of the same item queued before (which is stale now).
    fn push(&mut self, priority: Priority, seq: u64, item: T, replaces: bool) {
        let at = self.lanes.partition_point(|(p, _)| *p > priority);
        if self.lanes.get(at).is_none_or(|(p, _)| *p != priority) {
            self.lanes.insert(at, (priority, VecDeque::new()));
        }
        self.lanes[at].1.push_back((seq, item));
        if !replaces {
            self.live += 1;
        }
    }

    /// Takes the first live entry of the highest priority: one whose sequence number
    /// is its item's in `dirty`.
    fn pop(&mut self, dirty: &HashMap<T, Dirty>) -> Option<T> {
        while let Some((_, lane)) = self.lanes.first_mut() {
            match lane.pop_front() {
                Some((seq, item)) => {
                    if dirty.get(&item).is_some_and(|d| d.seq == seq) {
                        self.live -= 1;
                        return Some(item);
                    }
                }
                None => {
                    self.lanes.remove(0);
                }
            }
        }
        None
    }
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
            ready: Ready::new(),
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

    /// The next sequence number.
    pub(super) fn seq_locked(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        seq
    }

    /// Marks `item` dirty at `priority` and queues it unless it is being processed;
    /// an item already dirty at a lower priority is raised to `priority` (and moves
    /// ahead if queued). Returns whether an item was made ready.
    pub(super) fn add_locked(
        &mut self,
        item: T,
        priority: Priority,
        now: Option<Instant>,
        metrics: Option<&Arc<dyn QueueMetrics>>,
    ) -> bool {
        if self.is_shutting_down {
            return false;
        }
        let seq = self.seq_locked();
        let processing = self.processing.contains_key(&item);
        match self.dirty.entry(item) {
            Entry::Occupied(mut slot) => {
                let dirty = slot.get_mut();
                if priority <= dirty.priority {
                    return false;
                }
                if let Some(m) = metrics {
                    m.reprioritized(dirty.priority, priority);
                }
                dirty.priority = priority;
                if !processing {
                    dirty.seq = seq;
                    let item = slot.key().clone();
                    self.ready.push(priority, seq, item, true);
                }
                false
            }
            Entry::Vacant(slot) => {
                let item = slot.key().clone();
                slot.insert(Dirty {
                    priority,
                    seq,
                    added: now,
                });
                if let Some(m) = metrics {
                    m.add(priority);
                }
                if processing {
                    return false;
                }
                self.ready.push(priority, seq, item, false);
                true
            }
        }
    }

    /// Queues again an item that was added while it was processed, at its priority.
    pub(super) fn requeue_dirty_locked(&mut self, item: &T) -> bool {
        let seq = self.seq_locked();
        let Some(dirty) = self.dirty.get_mut(item) else {
            return false;
        };
        dirty.seq = seq;
        let priority = dirty.priority;
        self.ready.push(priority, seq, item.clone(), false);
        true
    }

    /// The priority `item` has if it is queued, delayed or being processed.
    pub(super) fn priority_locked(&self, item: &T) -> Option<Priority> {
        let dirty = self.dirty.get(item).map(|d| d.priority);
        let processing = self.processing.get(item).map(|(p, _)| *p);
        let waiting = self.waiting.get(item).map(|(_, _, p)| *p);
        dirty.max(processing).max(waiting)
    }

    /// Moves every waiting item whose ready time is `<= now` into the queue
    /// (through the dirty set). Returns how many were made ready.
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
                .is_some_and(|&(_, seq, _)| seq == entry.seq);
            if !live {
                continue;
            }
            let Some((_, _, priority)) = self.waiting.remove(&entry.item) else {
                continue;
            };
            let stamp = metrics.map(|_| now);
            if self.add_locked(entry.item, priority, stamp, metrics) {
                pushed += 1;
            }
        }
        pushed
    }

    /// Takes the next item for a worker, if any: the first queued of the highest
    /// priority.
    pub(super) fn take_locked(&mut self, metrics: Option<&Arc<dyn QueueMetrics>>) -> Take<T> {
        let now = if metrics.is_some() || !self.heap.is_empty() {
            Some(Instant::now())
        } else {
            None
        };
        if let Some(now) = now {
            self.promote_due_locked(now, metrics);
        }
        match self.ready.pop(&self.dirty) {
            Some(item) => {
                let dirty = self.dirty.remove(&item);
                let priority = dirty.map_or(Priority::DEFAULT, |d| d.priority);
                if let (Some(m), Some(now)) = (metrics, now) {
                    let added = dirty.and_then(|d| d.added);
                    m.get(
                        priority,
                        added.map_or(Duration::ZERO, |at| now.saturating_duration_since(at)),
                    );
                }
                self.processing
                    .insert(item.clone(), (priority, now.filter(|_| metrics.is_some())));
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
        for started in self
            .processing
            .values()
            .filter_map(|(_, started)| started.as_ref())
        {
            let running = now.saturating_duration_since(*started);
            total = total.saturating_add(running);
            longest = longest.max(running);
        }
        metrics.unfinished_work(total, longest);
        self.last_unfinished_update = Some(now);
    }
}
