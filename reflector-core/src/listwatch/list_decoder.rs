//! A streamed list's items, decoded off the reading task on every core.
//!
//! The [`ListScanner`](super::list_scanner::ListScanner) finds each item's bytes as the
//! body arrives; decoding them into objects is the expensive part (serde over ~1.4 KiB
//! per ConfigMap). An [`ItemDecoder`] gathers the item bytes of the chunks read into a
//! batch and hands each batch to tokio's blocking pool, one task per batch and at most
//! one batch per core in flight, so items decode on every core while the reading task
//! goes on reading. Batches come back in the order they were handed out, so the list's
//! order is kept whichever batch finishes first.
//!
//! Memory stays bounded: while every core is busy, the bytes of newly read items wait
//! in one batch of at most [`MAX_PENDING_BYTES`] (plus the items of the chunk that
//! filled it), and the reading task stops reading until the oldest batch is done. The
//! decoder is owned by its [`ListStream`](super::list_stream::ListStream): dropping it
//! tells every batch still in flight to stop before its next item, and their results
//! are discarded.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

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

/// Items handed out together, as bytes.
#[derive(Debug, Default)]
struct Batch {
    /// The list index of the first item.
    first: usize,
    /// The items' bytes, one after another.
    bytes: Vec<u8>,
    /// Where each item ends in `bytes`.
    ends: Vec<usize>,
}

impl Batch {
    /// Decodes every item, in order. Stops at the first item that does not decode
    /// (naming its list index), or with what it has once `stop` is set (the decoder
    /// was dropped; nobody reads the result).
    fn decode<K>(
        &self,
        decode: ItemDecodeFn<K>,
        filter: Option<&FieldFilter>,
        stop: &AtomicBool,
    ) -> Result<Vec<K>, ListWatchError> {
        let mut items = Vec::with_capacity(self.ends.len());
        let mut start = 0;
        for (offset, &end) in self.ends.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let item = decode(&self.bytes[start..end], filter).map_err(|source| {
                ListWatchError::DecodeItem {
                    index: self.first + offset,
                    source,
                }
            })?;
            items.push(item);
            start = end;
        }
        Ok(items)
    }
}

/// Decodes a streamed list's items on the blocking pool, batch by batch, handing the
/// decoded batches back in list order.
pub(crate) struct ItemDecoder<K> {
    decode: ItemDecodeFn<K>,
    /// The object paths skipped while decoding.
    filter: Option<Arc<FieldFilter>>,
    /// The items read but not yet handed to the pool.
    pending: Batch,
    /// The batches handed to the pool, oldest first.
    in_flight: VecDeque<JoinHandle<Result<Vec<K>, ListWatchError>>>,
    /// Set when the decoder is dropped or has failed: the batches in flight stop
    /// before their next item.
    stop: Arc<AtomicBool>,
}

impl<K> ItemDecoder<K> {
    /// A decoder of items with `decode`, skipping `filter`'s paths.
    pub(crate) fn new(decode: ItemDecodeFn<K>, filter: Option<Arc<FieldFilter>>) -> Self {
        ItemDecoder {
            decode,
            filter,
            pending: Batch::default(),
            in_flight: VecDeque::new(),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Adds item `index` (its bytes) to the batch being gathered. Items must come in
    /// list order.
    pub(crate) fn push(&mut self, index: usize, bytes: &[u8]) {
        if self.pending.ends.is_empty() {
            self.pending.first = index;
        }
        self.pending.bytes.extend_from_slice(bytes);
        self.pending.ends.push(self.pending.bytes.len());
    }

    /// Whether the reading task must wait for the oldest batch before it reads on:
    /// every core is decoding and the gathered batch is full.
    pub(crate) fn is_full(&self) -> bool {
        self.in_flight.len() >= max_in_flight() && self.pending.bytes.len() >= MAX_PENDING_BYTES
    }

    /// Whether the oldest batch in flight is decoded (so [`ItemDecoder::next_done`]
    /// will not wait).
    pub(crate) fn front_is_done(&self) -> bool {
        self.in_flight.front().is_some_and(JoinHandle::is_finished)
    }

    /// Drops every batch gathered or in flight (those decoding stop before their next
    /// item): the list has failed.
    pub(crate) fn abort(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.in_flight.clear();
        self.pending = Batch::default();
    }
}

impl<K: Send + 'static> ItemDecoder<K> {
    /// Hands the gathered batch to the blocking pool if a core is free for it, or
    /// whatever the cores do when `force` is set (the body has ended).
    pub(crate) fn dispatch(&mut self, force: bool) {
        if self.pending.ends.is_empty() || (!force && self.in_flight.len() >= max_in_flight()) {
            return;
        }
        let batch = std::mem::take(&mut self.pending);
        let (decode, filter, stop) = (self.decode, self.filter.clone(), self.stop.clone());
        self.in_flight
            .push_back(tokio::task::spawn_blocking(move || {
                batch.decode(decode, filter.as_deref(), &stop)
            }));
    }

    /// The oldest batch in flight once it is decoded, `None` when none is in flight.
    /// After an error, every other batch is dropped ([`ItemDecoder::abort`]).
    ///
    /// # Cancel safety
    /// Cancel-safe: the batch stays in flight until it is returned.
    pub(crate) async fn next_done(&mut self) -> Option<Result<Vec<K>, ListWatchError>> {
        let front = self.in_flight.front_mut()?;
        let joined = front.await;
        self.in_flight.pop_front();
        let result = match joined {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The blocking pool shuts down with the runtime.
            Err(_) => Err(ListWatchError::Decode {
                what: "list",
                source: serde_json::Error::custom("the runtime shut down while decoding"),
            }),
        };
        if result.is_err() {
            self.abort();
        }
        Some(result)
    }
}

impl<K> Drop for ItemDecoder<K> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
