//! The informer's consumer: popping its queue in batches, applying each batch to
//! the cache under one write lock, and handing its notifications to the listeners.

use std::sync::PoisonError;

use crate::fifo::{PoppedEntry, PoppedItem};
use crate::object::Object;
use crate::store::{BatchWriter, StoreError};

use super::super::notification::{Batch, Notification};
use super::super::process_deltas::process_deltas;
use super::super::process_entries::{cached_before, process_entries};
use super::super::queue::Queue;
use super::{POP_BATCH, SharedIndexInformer};

impl<K: Object> SharedIndexInformer<K> {
    /// Pops `queue` until it is closed and drained, applying every batch.
    ///
    /// # Cancel safety
    /// Cancel safe between batches: a batch is popped and applied after the last
    /// `.await` of its round.
    pub(super) async fn apply_queue(&self, queue: &Queue<K>, popped_key_is_cache_key: bool) {
        // Reused by every batch, so its memory stays in this thread's cache.
        let mut out = Vec::new();
        loop {
            let popped = match queue {
                Queue::Delta(fifo) => {
                    fifo.pop_batch(POP_BATCH, |items, watermark| {
                        self.handle_batch(items, watermark, popped_key_is_cache_key, &mut out);
                    })
                    .await
                }
                Queue::InOrder(fifo) => {
                    fifo.pop_batch(POP_BATCH, |entries, watermark| {
                        self.handle_entries(entries, watermark, popped_key_is_cache_key, &mut out);
                    })
                    .await
                }
            };
            match popped {
                Ok(()) => {}
                Err(StoreError::Closed) => break,
                Err(e) => tracing::error!(error = %e, "cannot pop from the informer's queue"),
            }
        }
    }

    /// Applies popped DeltaFifo items to the cache in order and notifies every
    /// listener once per batch (see [`commit_batch`](Self::commit_batch)).
    /// `watermark` is the DeltaFifo's conservative one: the version handed over,
    /// once the queue is drained.
    ///
    /// `out` is an empty buffer, left empty, for the notifications.
    fn handle_batch(
        &self,
        items: Vec<PoppedItem<K>>,
        watermark: Option<String>,
        popped_key_is_cache_key: bool,
        out: &mut Vec<Notification<K>>,
    ) {
        let empty = items.is_empty();
        self.commit_batch(empty, watermark, out, |cache, out| {
            for item in items {
                process_deltas(
                    &self.inner.indexer,
                    item,
                    popped_key_is_cache_key,
                    cache,
                    out,
                );
            }
        });
    }

    /// Applies popped in-order entries to the cache in order and notifies every
    /// listener once per batch: a whole list is in the cache before any handler
    /// hears of it. `watermark` (exact for this queue) is the version the cache
    /// reaches with this batch.
    fn handle_entries(
        &self,
        entries: Vec<PoppedEntry<K>>,
        watermark: Option<String>,
        popped_key_is_cache_key: bool,
        out: &mut Vec<Notification<K>>,
    ) {
        let indexer = &self.inner.indexer;
        let empty = entries.is_empty();
        let before = cached_before(indexer, &entries);
        self.commit_batch(empty, watermark, out, |cache, out| {
            process_entries(
                indexer,
                entries,
                popped_key_is_cache_key,
                before,
                cache,
                out,
            );
        });
    }

    /// Runs `apply` under one write lock of the cache (readers see the batch whole,
    /// before its handlers run; an `empty` batch takes no lock), moves the cache's
    /// resource version to `watermark` (waking whoever waits for it) before any
    /// handler hears of the batch, and hands the notifications to the listeners.
    /// Runs inside the queue's pop
    /// and holds `block_deltas` until the batch is handed to the listeners, so a
    /// handler added meanwhile sees each object either in its initial adds or in a
    /// later batch.
    fn commit_batch(
        &self,
        empty: bool,
        watermark: Option<String>,
        out: &mut Vec<Notification<K>>,
        apply: impl FnOnce(&mut BatchWriter<'_, K>, &mut Vec<Notification<K>>),
    ) {
        let _block = self
            .inner
            .block_deltas
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !empty {
            self.inner.indexer.write_batch(|cache| apply(cache, out));
        }
        if let Some(rv) = watermark {
            self.inner.indexer.version().set(&rv);
        }
        if !out.is_empty() {
            // Moved straight into the shared slice (one allocation, exact size).
            let batch: Batch<K> = out.drain(..).collect();
            self.inner.processor.distribute_batch(&batch);
        }
    }
}
