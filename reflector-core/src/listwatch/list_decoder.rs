//! Items of a streamed body, decoded off the reading task on every core.
//!
//! The [`ListScanner`](super::list_scanner::ListScanner) finds each list item's bytes
//! as the body arrives, and the watch decoder finds each event's line; decoding them
//! into objects is the expensive part (serde over ~1.4 KiB per ConfigMap). An
//! [`ItemDecoder`] gathers the item bytes read into batches of about [`BATCH_BYTES`]
//! and queues them for its workers: tasks on tokio's blocking pool, at most one per
//! core, each taking the oldest queued batch as soon as it is done with the last, so
//! no core waits for the reading task to hand it work. Batches come back in the order
//! they were queued, so the body's order is kept whichever batch finishes first. What
//! decoding one item means is a [`DecodeItem`]: a list's item ([`ListItems`]), or a
//! watch line ([`WatchDecoder`](super::watch_decoder::WatchDecoder)).
//!
//! Memory stays bounded: once the bytes queued, being decoded or decoded and not yet
//! handed back reach [`MAX_UNDELIVERED_BYTES`], the decoder is full and the reading
//! task stops reading until the oldest batch is handed back. A batch's byte buffers
//! are reused for a later batch. The decoder is owned by its stream
//! ([`ListStream`](super::list_stream::ListStream), the watch decoder's line stream):
//! dropping it drops the batches still queued and tells those being decoded to stop
//! before their next item; their results are discarded, and the workers end.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use serde::de::Error as _;
use serde_field_filter::FieldFilter;
use tokio::sync::oneshot;

use super::ListWatchError;
use super::list_stream::ItemDecodeFn;

/// The item bytes of one batch: a batch is queued once it holds this much (64 KiB:
/// ~45 ConfigMaps of ~1.4 KiB, a quarter of a millisecond of decoding, far more than
/// a worker's hand-off), or when the reading task has nothing more to add for now.
pub(crate) const BATCH_BYTES: usize = 64 * 1024;

/// The item bytes gathered, queued, being decoded or decoded and not yet handed back,
/// at which the decoder is full and the reading task stops reading (1 MiB: sixteen
/// batches, enough to keep every core busy while the reading task hands a decoded
/// batch on, and ~2 MB of objects at most waiting to be handed back).
pub(crate) const MAX_UNDELIVERED_BYTES: usize = 1024 * 1024;

/// The most workers decoding at once: one per core (`available_parallelism`), at least
/// 2 so that items decode beside the reading task even on one core's worth of quota.
fn max_workers() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .clamp(2, 16)
    })
}

/// Emptied batches kept for their buffers (more are rarely alive at once: the
/// reading task seals one at a time, and a worker decodes one).
const MAX_SPARE: usize = 8;

/// Decodes one item of a batch, on a blocking-pool thread: what an [`ItemDecoder`]
/// does with each item's bytes, producing a `T`.
pub(crate) trait DecodeItem<T>: Send + Sync + 'static {
    /// Decodes item `index` (its position in the body) from its bytes. An error fails
    /// the item's whole batch, and the decoder after it ([`ItemDecoder::next_done`]).
    fn decode(&self, index: usize, bytes: &[u8]) -> Result<T, ListWatchError>;

    /// Whether nothing after `item` is to be decoded: the batch stops after it (its
    /// reader ends the stream there). None by default.
    fn is_last(_item: &T) -> bool {
        false
    }

    /// What the items are, for the error when the runtime shuts down mid-batch.
    const WHAT: &'static str = "list";
}

/// A list's items: each decoded into `K` by a plain function, skipping the filter's
/// paths; an item that does not decode is [`ListWatchError::DecodeItem`], naming its
/// index.
pub(crate) struct ListItems<K> {
    decode: ItemDecodeFn<K>,
    /// The object paths skipped while decoding.
    filter: Option<Arc<FieldFilter>>,
}

impl<K: Send + 'static> DecodeItem<K> for ListItems<K> {
    fn decode(&self, index: usize, bytes: &[u8]) -> Result<K, ListWatchError> {
        (self.decode)(bytes, self.filter.as_deref())
            .map_err(|source| ListWatchError::DecodeItem { index, source })
    }
}

/// Items handed out together, as bytes.
#[derive(Debug, Default)]
struct Batch {
    /// The body index of the first item.
    first: usize,
    /// The items' bytes, one after another.
    bytes: Vec<u8>,
    /// Where each item ends in `bytes`.
    ends: Vec<usize>,
}

impl Batch {
    /// Decodes every item, in order. Stops at the first item that does not decode, after
    /// an item that is the last ([`DecodeItem::is_last`]), or with what it has once
    /// `stop` is set (the decoder was dropped or has failed; nobody reads the result).
    fn decode<T, D: DecodeItem<T>>(
        &self,
        decoder: &D,
        stop: &AtomicBool,
    ) -> Result<Vec<T>, ListWatchError> {
        let mut items = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for (offset, &end) in self.ends.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let item = decoder.decode(self.first + offset, &self.bytes[start..end])?;
            let last = D::is_last(&item);
            items.push(item);
            if last {
                break;
            }
            start = end;
        }
        Ok(items)
    }

    /// Empties the batch, keeping its buffers' capacity for the next one.
    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }
}

/// A decoded batch, or the panic of a decode (resumed where the batch is handed back).
type Decoded<T> = std::thread::Result<Result<Vec<T>, ListWatchError>>;

/// A batch queued for the workers, and where its result goes.
struct Job<T> {
    batch: Batch,
    done: oneshot::Sender<Decoded<T>>,
}

/// The workers' side of a decoder, under [`Shared::work`]'s lock.
struct Work<T> {
    /// The batches queued and not yet taken by a worker, oldest first.
    queue: VecDeque<Job<T>>,
    /// The workers running (each takes queued batches until none is left).
    workers: usize,
    /// Emptied batches whose buffers the next batches reuse.
    spare: Vec<Batch>,
}

/// What a decoder shares with its workers.
struct Shared<T> {
    /// Set when the decoder is dropped or has failed: a batch being decoded stops
    /// before its next item. Read without a lock.
    stop: AtomicBool,
    /// The queue, the worker count and the spare batches; held only to change them,
    /// never while decoding.
    work: Mutex<Work<T>>,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Work<T>> {
        // A poisoned lock still holds a consistent queue: nothing panics while holding it.
        self.work.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A batch queued or being decoded, as its decoder waits for it.
struct Pending<T> {
    done: oneshot::Receiver<Decoded<T>>,
    /// Its item bytes.
    bytes: usize,
}

/// The items of an [`ItemDecoder`] not yet handed back.
struct Queue<T> {
    /// The items read but not yet queued.
    gathering: Batch,
    /// The batches queued or being decoded, oldest first.
    in_flight: VecDeque<Pending<T>>,
    /// The oldest batch's result, when [`ItemDecoder::front_is_done`] found it.
    front: Option<Decoded<T>>,
}

/// Decodes items on the blocking pool, batch by batch, handing the decoded batches back
/// in body order. `D` decodes one item into a `T`; by default a list's items.
pub(crate) struct ItemDecoder<T, D = ListItems<T>> {
    /// Shared with the workers.
    decoder: Arc<D>,
    /// The items gathered and the batches in flight (boxed: a list stream holds the
    /// decoder in one variant of its source).
    queue: Box<Queue<T>>,
    /// The stop flag, the queue of batches and the workers' count, shared with them.
    shared: Arc<Shared<T>>,
}

impl<K> ItemDecoder<K> {
    /// A decoder of a list's items with `decode`, skipping `filter`'s paths.
    pub(crate) fn new(decode: ItemDecodeFn<K>, filter: Option<Arc<FieldFilter>>) -> Self {
        ItemDecoder::with(Arc::new(ListItems { decode, filter }))
    }
}

impl<T, D> ItemDecoder<T, D> {
    /// A decoder of items with `decoder`.
    pub(crate) fn with(decoder: Arc<D>) -> Self {
        ItemDecoder {
            decoder,
            queue: Box::new(Queue {
                gathering: Batch::default(),
                in_flight: VecDeque::new(),
                front: None,
            }),
            shared: Arc::new(Shared {
                stop: AtomicBool::new(false),
                work: Mutex::new(Work {
                    queue: VecDeque::new(),
                    workers: 0,
                    spare: Vec::new(),
                }),
            }),
        }
    }

    /// The bytes of the items gathered and not yet queued.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.queue.gathering.bytes.len()
    }

    /// Whether no item is gathered or in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.queue.in_flight.is_empty() && self.queue.gathering.ends.is_empty()
    }

    /// Whether the reading task must wait for the oldest batch before it reads on: the
    /// items not yet handed back hold [`MAX_UNDELIVERED_BYTES`].
    pub(crate) fn is_full(&self) -> bool {
        let in_flight: usize = self.queue.in_flight.iter().map(|batch| batch.bytes).sum();
        in_flight + self.queue.gathering.bytes.len() >= MAX_UNDELIVERED_BYTES
    }

    /// Whether the oldest batch in flight is decoded (so [`ItemDecoder::next_done`]
    /// will not wait).
    pub(crate) fn front_is_done(&mut self) -> bool {
        if self.queue.front.is_some() {
            return true;
        }
        let Some(front) = self.queue.in_flight.front_mut() else {
            return false;
        };
        match front.done.try_recv() {
            Ok(decoded) => {
                self.queue.front = Some(decoded);
                true
            }
            Err(oneshot::error::TryRecvError::Empty) => false,
            Err(oneshot::error::TryRecvError::Closed) => true,
        }
    }

    /// Drops every batch gathered, queued or in flight (those being decoded stop before
    /// their next item): the body has failed, or its reader stops.
    pub(crate) fn abort(&mut self) {
        self.stop();
        self.queue.in_flight.clear();
        self.queue.front = None;
        self.queue.gathering = Batch::default();
    }

    /// Tells the workers to stop, and drops the batches none has taken yet.
    fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let dropped = std::mem::take(&mut self.shared.lock().queue);
        drop(dropped);
    }
}

impl<T: Send + 'static, D: DecodeItem<T>> ItemDecoder<T, D> {
    /// Adds item `index` (its bytes) to the batch being gathered, and queues the batch
    /// once it holds [`BATCH_BYTES`]. Items must come in body order.
    pub(crate) fn push(&mut self, index: usize, bytes: &[u8]) {
        let gathering = &mut self.queue.gathering;
        if gathering.ends.is_empty() {
            gathering.first = index;
        }
        gathering.bytes.extend_from_slice(bytes);
        gathering.ends.push(gathering.bytes.len());
        if gathering.bytes.len() >= BATCH_BYTES {
            self.seal(true);
        }
    }

    /// Queues the items gathered: whenever `force` is set (the body has ended), else
    /// when fewer batches wait for a worker than there are workers, so that no core
    /// goes idle while the gathered items wait (and, while the workers are behind,
    /// the items read meanwhile join fewer, fuller batches).
    pub(crate) fn dispatch(&mut self, force: bool) {
        if !self.queue.gathering.ends.is_empty() {
            self.seal(force);
        }
    }

    /// Queues the gathered batch (unless `force` is unset and the workers already have
    /// a batch each waiting), starting a worker if fewer than one per core run.
    fn seal(&mut self, force: bool) {
        let start_worker = {
            let mut work = self.shared.lock();
            if !force && work.queue.len() >= max_workers() {
                return;
            }
            let (done, waiting) = oneshot::channel();
            let next = work.spare.pop().unwrap_or_default();
            let batch = std::mem::replace(&mut self.queue.gathering, next);
            let bytes = batch.bytes.len();
            work.queue.push_back(Job { batch, done });
            self.queue.in_flight.push_back(Pending {
                done: waiting,
                bytes,
            });
            let start = work.workers < max_workers();
            work.workers += usize::from(start);
            start
        };
        if start_worker {
            let worker = Worker {
                decoder: Arc::clone(&self.decoder),
                shared: Arc::clone(&self.shared),
                ended: false,
            };
            // The worker ends once the queue is empty; dropped unstarted (the runtime
            // shutting down), it drops the queue, and its batches' results say so.
            drop(tokio::task::spawn_blocking(move || worker.run()));
        }
    }

    /// The oldest batch in flight once it is decoded, `None` when none is in flight.
    /// After an error, every other batch is dropped ([`ItemDecoder::abort`]).
    ///
    /// # Cancel safety
    /// Cancel-safe: the batch stays in flight until it is returned.
    pub(crate) async fn next_done(&mut self) -> Option<Result<Vec<T>, ListWatchError>> {
        let decoded = match self.queue.front.take() {
            Some(decoded) => Ok(decoded),
            None => (&mut self.queue.in_flight.front_mut()?.done).await,
        };
        self.queue.in_flight.pop_front()?;
        let result = match decoded {
            Ok(Ok(result)) => result,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            // The worker was dropped with the blocking pool, as the runtime shut down.
            Err(_) => Err(ListWatchError::Decode {
                what: D::WHAT,
                source: serde_json::Error::custom("the runtime shut down while decoding"),
            }),
        };
        if result.is_err() {
            self.abort();
        }
        Some(result)
    }
}

impl<T, D> Drop for ItemDecoder<T, D> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A task on the blocking pool that decodes queued batches until none is left.
struct Worker<T, D> {
    decoder: Arc<D>,
    shared: Arc<Shared<T>>,
    /// Set once it has taken itself off the worker count, as the queue was empty.
    ended: bool,
}

impl<T: Send + 'static, D: DecodeItem<T>> Worker<T, D> {
    /// Decodes the oldest queued batch, and the next, until the queue is empty.
    fn run(mut self) {
        loop {
            let Job { mut batch, done } = {
                let mut work = self.shared.lock();
                match work.queue.pop_front() {
                    Some(job) => job,
                    None => {
                        work.workers -= 1;
                        self.ended = true;
                        return;
                    }
                }
            };
            let decoded = std::panic::catch_unwind(AssertUnwindSafe(|| {
                batch.decode(&*self.decoder, &self.shared.stop)
            }));
            // The decoder may be gone, and its receivers with it.
            let _ = done.send(decoded);
            batch.clear();
            let mut work = self.shared.lock();
            if work.spare.len() < MAX_SPARE {
                work.spare.push(batch);
            }
        }
    }
}

impl<T, D> Drop for Worker<T, D> {
    fn drop(&mut self) {
        if !self.ended {
            // Dropped before it could run: no other worker may be left to take the
            // queued batches, so they are dropped, and their results say so.
            let mut work = self.shared.lock();
            work.workers -= 1;
            let dropped = std::mem::take(&mut work.queue);
            drop(work);
            drop(dropped);
        }
    }
}

#[cfg(test)]
mod tests;
