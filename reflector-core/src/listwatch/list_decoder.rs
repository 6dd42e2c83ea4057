//! Items of a streamed body, decoded off the reading task on every core.
//!
//! The [`ListScanner`](super::list_scanner::ListScanner) finds each list item's bytes
//! as the body arrives, and the watch decoder finds each event's line; decoding them
//! into objects is the expensive part (serde over ~1.4 KiB per ConfigMap). An
//! [`ItemDecoder`] gathers the item bytes read into a batch and hands each batch to
//! tokio's blocking pool, one task per batch and at most one batch per core in flight,
//! so items decode on every core while the reading task goes on reading. Batches come
//! back in the order they were handed out, so the body's order is kept whichever batch
//! finishes first. What decoding one item means is a [`DecodeItem`]: a list's item
//! ([`ListItems`]), or a watch line
//! ([`WatchDecoder`](super::watch_decoder::WatchDecoder)).
//!
//! Memory stays bounded: while every core is busy, the bytes of newly read items wait
//! in one batch of at most [`MAX_PENDING_BYTES`] (plus the items of the chunk that
//! filled it), and the reading task stops reading until the oldest batch is done. A
//! batch's byte buffers come back with its items and are reused for a later batch. The
//! decoder is owned by its stream ([`ListStream`](super::list_stream::ListStream), the
//! watch decoder's line stream): dropping it tells every batch still in flight to stop
//! before its next item, and their results are discarded.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::de::Error as _;
use serde_field_filter::FieldFilter;
use tokio::task::JoinHandle;

use super::ListWatchError;
use super::list_stream::ItemDecodeFn;

/// The item bytes that wait in the batch being gathered while every core decodes one
/// (256 KiB: ~180 ConfigMaps of ~1.4 KiB, about a millisecond of decoding each, so a
/// batch costs far more than the hand-off to the blocking pool).
pub(crate) const MAX_PENDING_BYTES: usize = 256 * 1024;

/// The most batches in flight: one per core (`available_parallelism`), at least 2
/// so that items decode beside the reading task even on one core's worth of quota.
fn max_in_flight() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .clamp(2, 16)
    })
}

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

/// What a decoder shares with its batches in flight.
#[derive(Debug, Default)]
struct Shared {
    /// Set when the decoder is dropped or has failed: the batches in flight stop
    /// before their next item.
    stop: AtomicBool,
    /// Emptied batches whose buffers the next batches reuse (at most one per core:
    /// more are never in use at once). A batch's task puts its batch back here when it
    /// is done. Guarded by its own mutex, held only to push or pop.
    spare: Mutex<Vec<Batch>>,
}

/// The items of an [`ItemDecoder`] not yet handed back.
#[derive(Debug)]
struct Queue<T> {
    /// The items read but not yet handed to the pool.
    pending: Batch,
    /// The batches handed to the pool, oldest first.
    in_flight: VecDeque<JoinHandle<Result<Vec<T>, ListWatchError>>>,
}

/// Decodes items on the blocking pool, batch by batch, handing the decoded batches back
/// in body order. `D` decodes one item into a `T`; by default a list's items.
pub(crate) struct ItemDecoder<T, D = ListItems<T>> {
    /// Shared with the batches in flight.
    decoder: Arc<D>,
    /// The items gathered and the batches in flight (boxed: a list stream holds the
    /// decoder in one variant of its source).
    queue: Box<Queue<T>>,
    /// The stop flag and the spare batches, shared with the batches in flight.
    shared: Arc<Shared>,
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
                pending: Batch::default(),
                in_flight: VecDeque::new(),
            }),
            shared: Arc::default(),
        }
    }

    /// Adds item `index` (its bytes) to the batch being gathered. Items must come in
    /// body order.
    pub(crate) fn push(&mut self, index: usize, bytes: &[u8]) {
        if self.queue.pending.ends.is_empty() {
            self.queue.pending.first = index;
        }
        self.queue.pending.bytes.extend_from_slice(bytes);
        self.queue.pending.ends.push(self.queue.pending.bytes.len());
    }

    /// The bytes of the items gathered and not yet handed to the pool.
    pub(crate) fn pending_bytes(&self) -> usize {
        self.queue.pending.bytes.len()
    }

    /// Whether no item is gathered or in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.queue.in_flight.is_empty() && self.queue.pending.ends.is_empty()
    }

    /// Whether the reading task must wait for the oldest batch before it reads on:
    /// every core is decoding and the gathered batch is full.
    pub(crate) fn is_full(&self) -> bool {
        self.queue.in_flight.len() >= max_in_flight()
            && self.queue.pending.bytes.len() >= MAX_PENDING_BYTES
    }

    /// Whether the oldest batch in flight is decoded (so [`ItemDecoder::next_done`]
    /// will not wait).
    pub(crate) fn front_is_done(&self) -> bool {
        self.queue
            .in_flight
            .front()
            .is_some_and(JoinHandle::is_finished)
    }

    /// Drops every batch gathered or in flight (those decoding stop before their next
    /// item): the body has failed, or its reader stops.
    pub(crate) fn abort(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.queue.in_flight.clear();
        self.queue.pending = Batch::default();
    }
}

impl<T: Send + 'static, D: DecodeItem<T>> ItemDecoder<T, D> {
    /// Hands the gathered batch to the blocking pool if a core is free for it, or
    /// whatever the cores do when `force` is set (the body has ended).
    pub(crate) fn dispatch(&mut self, force: bool) {
        if self.queue.pending.ends.is_empty()
            || (!force && self.queue.in_flight.len() >= max_in_flight())
        {
            return;
        }
        let next = lock(&self.shared.spare).pop().unwrap_or_default();
        let mut batch = std::mem::replace(&mut self.queue.pending, next);
        let (decoder, shared) = (self.decoder.clone(), self.shared.clone());
        self.queue
            .in_flight
            .push_back(tokio::task::spawn_blocking(move || {
                let result = batch.decode(&*decoder, &shared.stop);
                batch.clear();
                let mut spare = lock(&shared.spare);
                if spare.len() < max_in_flight() {
                    spare.push(batch);
                }
                result
            }));
    }

    /// The oldest batch in flight once it is decoded, `None` when none is in flight.
    /// After an error, every other batch is dropped ([`ItemDecoder::abort`]).
    ///
    /// # Cancel safety
    /// Cancel-safe: the batch stays in flight until it is returned.
    pub(crate) async fn next_done(&mut self) -> Option<Result<Vec<T>, ListWatchError>> {
        let front = self.queue.in_flight.front_mut()?;
        let joined = front.await;
        self.queue.in_flight.pop_front();
        let result = match joined {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The blocking pool shuts down with the runtime.
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

/// Locks the spare batches (a poisoned lock still holds usable, emptied batches).
fn lock(spare: &Mutex<Vec<Batch>>) -> std::sync::MutexGuard<'_, Vec<Batch>> {
    spare
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<T, D> Drop for ItemDecoder<T, D> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
