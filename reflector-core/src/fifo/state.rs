//! A [`Fifo`](super::Fifo)'s state under its lock: the queued entries, where each
//! key's entry is (per-key mode), the first list's lifecycle, and the resource
//! versions the consumer's cache reaches as entries are applied.

use std::collections::{HashMap, HashSet, VecDeque};

use foldhash::fast::RandomState;

use super::{Deltas, Entry, Popped};
use crate::object::ObjectKey;

/// Queue capacity above which a drained queue frees its room (a relist of more
/// entries than this). Small enough to matter, large enough that watch traffic,
/// whose queue stays short, never shrinks and regrows it.
pub(super) const SHRINK_ABOVE: usize = 4096;

/// A version's numeric form before any version: 0 is never an object's.
pub(super) const NO_VERSION: u64 = 0;
/// A version's numeric form when it is not an integer (compared as text then).
pub(super) const OPAQUE: u64 = u64::MAX;

/// `rv`'s numeric form: the integer, or [`OPAQUE`].
fn numeric(rv: &str) -> u64 {
    match rv.parse::<u64>() {
        Ok(n) if n != NO_VERSION && n != OPAQUE => n,
        _ => OPAQUE,
    }
}

/// Where a queue stands in its life. Every field is guarded by the queue's lock.
pub(super) struct Lifecycle {
    /// Whether the first list was queued, or an `add`/`update`/`delete` came before
    /// any.
    pub(super) populated: bool,
    /// Entries of the first list not yet processed.
    pub(super) initial_population_count: usize,
    /// Latched `populated && initial_population_count == 0`: set once, by
    /// [`check_synced_locked`](Lifecycle::check_synced_locked), whose caller then
    /// wakes `wait_synced`.
    pub(super) synced: bool,
    /// Set by `close`: pops fail with `Closed` once the queue is drained, writes fail
    /// at once.
    pub(super) closed: bool,
    /// A first list is coming in page by page (a first page was taken into an empty
    /// queue); ending the list ends it, a `replace` or a refused first page cancels
    /// it.
    pub(super) streaming: bool,
}

impl Lifecycle {
    /// Latches `synced` once the initial population is processed; returns whether it
    /// was set just now, so the caller wakes `wait_synced` after unlocking. Called
    /// whenever `populated` or `initial_population_count` change.
    pub(super) fn check_synced_locked(&mut self) -> bool {
        let now = self.populated && self.initial_population_count == 0;
        let flipped = now && !self.synced;
        self.synced |= now;
        flipped
    }

    /// After a write of changes (`add`, `update`, `delete`, a watch run): one before
    /// any list populates the queue, as client-go's; one while a first list is
    /// streamed in (a deletion among a watch-list's initial events) belongs to that
    /// list, which populates the queue when it ends. Returns whether the queue
    /// synced just now.
    pub(super) fn written_locked(&mut self) -> bool {
        if !self.streaming {
            self.populated = true;
        }
        self.check_synced_locked()
    }

    /// Whether a list page is queued as part of a streamed first list: a first page
    /// starts one only into a queue never populated, `idle_and_uncached` (nothing
    /// queued or being processed, nothing in the consumer's cache); a later page
    /// follows a first page taken.
    pub(super) fn stream_page_locked(
        &mut self,
        first_page: bool,
        idle_and_uncached: impl FnOnce() -> bool,
    ) -> bool {
        if first_page {
            self.streaming = !self.populated && idle_and_uncached();
        }
        self.streaming
    }
}

/// One queued entry, with the key of its object (for an [`Entry::Deltas`]).
pub(super) struct Queued<K> {
    pub(super) key: Option<ObjectKey>,
    pub(super) entry: Entry<K>,
    /// The numeric form of the version the consumer's cache reaches once every entry
    /// queued before this one is applied ([`NO_VERSION`]: none yet). It never
    /// changes, not even when later changes of its key join a per-key entry: what
    /// is queued behind it comes after it.
    pub(super) since: u64,
}

/// A queue's state. Every field is guarded by the queue's lock.
pub(super) struct State<K> {
    /// Entries in the order they were queued. In the per-key mode each key has at
    /// most one, which gathers the key's changes until it is popped.
    pub(super) queue: VecDeque<Queued<K>>,
    /// Per-key mode: where each queued key's entry is, counted from the first entry
    /// ever queued (`head` is where `queue[0]` is). Empty in the in-order mode.
    /// Hashed with foldhash (randomly seeded), as each add and pop hashes the key
    /// (measured with the `informer` bench's pipeline).
    pub(super) positions: HashMap<ObjectKey, u64, RandomState>,
    /// How many entries were ever popped: the position of `queue[0]`.
    pub(super) head: u64,
    /// The first list (the first `replace`, or a streamed one) and closing.
    pub(super) life: Lifecycle,
    /// Entries popped whose processing has not returned yet: the queue is idle only
    /// when this is zero too.
    pub(super) in_flight: usize,
    /// The version the consumer's cache reaches once everything queued is applied:
    /// the last watch event's, bookmark's or list's handed over. Empty before the
    /// first.
    pub(super) queued: String,
    /// `queued`'s numeric form ([`NO_VERSION`], a number, or [`OPAQUE`]).
    pub(super) queued_num: u64,
    /// The numeric form of the watermark a batch pop answered last ([`OPAQUE`]: the
    /// text in `answered`); a watermark is answered only when it moves.
    pub(super) answered_num: u64,
    /// The last watermark answered that was not an integer.
    pub(super) answered: String,
}

impl<K> State<K> {
    /// An empty queue that has seen nothing.
    pub(super) fn new() -> Self {
        State {
            queue: VecDeque::new(),
            positions: HashMap::default(),
            head: 0,
            life: Lifecycle {
                populated: false,
                initial_population_count: 0,
                synced: false,
                closed: false,
                streaming: false,
            },
            in_flight: 0,
            queued: String::new(),
            queued_num: NO_VERSION,
            answered_num: NO_VERSION,
            answered: String::new(),
        }
    }

    /// Notes that everything queued so far brings the cache to `rv` (an empty `rv`
    /// changes nothing). Returns whether it changed.
    pub(super) fn note_version_locked(&mut self, rv: &str) -> bool {
        if rv.is_empty() || self.queued == rv {
            return false;
        }
        rv.clone_into(&mut self.queued);
        self.queued_num = numeric(rv);
        true
    }

    /// Queues `deltas` of `key` after everything else, or, with `merge` (the per-key
    /// mode), appends them to the key's queued entry if it has one; returns whether a
    /// new entry was queued.
    pub(super) fn push_deltas_locked(
        &mut self,
        key: ObjectKey,
        delta: super::Delta<K>,
        since: u64,
        merge: bool,
    ) -> bool {
        if merge {
            let end = self.head + self.queue.len() as u64;
            match self.positions.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => {
                    let index = usize::try_from(*e.get() - self.head).unwrap_or(usize::MAX);
                    if let Some(Queued {
                        entry: Entry::Deltas(deltas),
                        ..
                    }) = self.queue.get_mut(index)
                    {
                        deltas.push_dedup(delta);
                    }
                    return false;
                }
                std::collections::hash_map::Entry::Vacant(e) => {
                    let key = e.key().clone();
                    e.insert(end);
                    self.push_locked(Some(key), Entry::Deltas(Deltas::one(delta)), since);
                    return true;
                }
            }
        }
        self.push_locked(Some(key), Entry::Deltas(Deltas::one(delta)), since);
        true
    }

    /// Queues `entry` after everything else.
    pub(super) fn push_locked(&mut self, key: Option<ObjectKey>, entry: Entry<K>, since: u64) {
        self.queue.push_back(Queued { key, entry, since });
    }

    /// Whether nothing is queued and nothing is being processed.
    pub(super) fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.in_flight == 0
    }

    /// The keys with a queued entry.
    pub(super) fn queued_keys_locked(&self) -> HashSet<&ObjectKey, RandomState> {
        self.queue.iter().filter_map(|q| q.key.as_ref()).collect()
    }

    /// Takes up to `max` entries off the front (at least one if any; `max` 0 counts
    /// as 1), as client-go's `PopBatch`: a run of changes and bookmarks, or one whole
    /// list or resync alone; a batch never mixes entries of the first list with later
    /// ones, nor, in order (`unique_keys` false), holds two changes to one object
    /// (the second starts the next batch).
    pub(super) fn take_batch_locked(&mut self, max: usize, unique_keys: bool) -> Vec<Popped<K>> {
        let is_in_initial_list = !self.life.synced;
        let mut limit = max.max(1);
        if self.life.initial_population_count > 0 {
            limit = limit.min(self.life.initial_population_count);
        }
        let mut batch = Vec::with_capacity(limit.min(self.queue.len()));
        let mut keys: HashSet<ObjectKey, RandomState> = HashSet::default();
        while batch.len() < limit {
            let Some(front) = self.queue.front() else {
                break;
            };
            if !batch.is_empty() && !front.entry.is_batchable() {
                break;
            }
            if !unique_keys
                && limit > 1
                && let Some(key) = &front.key
                && !keys.insert(key.clone())
            {
                break;
            }
            let Some(queued) = self.queue.pop_front() else {
                break;
            };
            self.head += 1;
            if unique_keys && let Some(key) = &queued.key {
                self.positions.remove(key);
            }
            let alone = !queued.entry.is_batchable();
            batch.push(Popped {
                key: queued.key,
                entry: queued.entry,
                is_in_initial_list,
            });
            if alone {
                break;
            }
        }
        if self.queue.is_empty() && self.queue.capacity() > SHRINK_ABOVE {
            // A list's worth of entries went through; give the room back rather
            // than keep it for the life of the informer.
            self.queue.shrink_to_fit();
            self.positions.shrink_to_fit();
        }
        self.in_flight = batch.len();
        batch
    }

    /// Whether a batch of no entries would answer a watermark: the version
    /// everything handed over brings the cache to was not answered yet. Asked with
    /// nothing queued.
    pub(super) fn has_news_locked(&self) -> bool {
        match self.queued_num {
            NO_VERSION => false,
            OPAQUE => self.answered_num != OPAQUE || self.answered != self.queued,
            n => n != self.answered_num,
        }
    }

    /// The consumer's new watermark, once the entries taken off the front are
    /// applied: everything before the front entry (its `since`), or, with nothing
    /// queued, everything handed over (`queued`). `None` if it did not move since
    /// last answered, or cannot be told (a version that is not an integer, with
    /// entries still queued); otherwise it counts as answered.
    pub(super) fn take_watermark_locked(&mut self) -> Option<String> {
        let reached = match self.queue.front() {
            Some(front) if front.since == OPAQUE => return None,
            Some(front) => front.since,
            None => self.queued_num,
        };
        match reached {
            NO_VERSION => None,
            OPAQUE if self.answered_num == OPAQUE && self.answered == self.queued => None,
            OPAQUE => {
                self.answered_num = OPAQUE;
                self.queued.clone_into(&mut self.answered);
                Some(self.queued.clone())
            }
            n if n == self.answered_num => None,
            n => {
                self.answered_num = n;
                Some(n.to_string())
            }
        }
    }
}
