//! The informer's consumer: popping its queue in batches, applying each batch to
//! the cache under one write lock, and handing its notifications to the listeners.

use std::sync::PoisonError;

use crate::fifo::{Fifo, FifoError, Popped};
use crate::object::Object;
use crate::store::Writer;

use super::super::notification::{Batch, Notification};
use super::super::process::apply_batch;
use super::{POP_BATCH, SharedIndexInformer};

impl<K: Object> SharedIndexInformer<K> {
    /// Pops `queue` until it is closed and drained, applying every batch through
    /// `writer`.
    ///
    /// # Cancel safety
    /// Cancel safe between batches: a batch is popped and applied after the last
    /// `.await` of its round.
    pub(super) async fn apply_queue(
        &self,
        queue: &Fifo<K>,
        writer: &mut Writer<K>,
        popped_key_is_cache_key: bool,
    ) {
        // Reused by every batch, so its memory stays in this thread's cache.
        let mut out = Vec::new();
        loop {
            let popped = queue
                .pop_batch(POP_BATCH, |batch, watermark| {
                    self.commit_batch(writer, batch, watermark, popped_key_is_cache_key, &mut out);
                })
                .await;
            match popped {
                Ok(()) => {}
                Err(FifoError::Closed) => break,
                Err(e) => tracing::error!(error = %e, "cannot pop from the informer's queue"),
            }
        }
    }

    /// Applies a popped batch to the cache under one write lock (readers see the
    /// batch whole, before its handlers run; an empty batch takes no lock), moves the
    /// cache's resource version to `watermark` (waking whoever waits for it) before
    /// any handler hears of the batch, and hands the notifications to the listeners
    /// once per batch: a whole list is in the cache before any handler hears of it.
    /// Runs inside the queue's pop and holds `block_deltas` until the batch is handed
    /// to the listeners, so a handler added meanwhile sees each object either in its
    /// initial adds or in a later batch.
    ///
    /// `out` is an empty buffer, left empty, for the notifications.
    fn commit_batch(
        &self,
        writer: &mut Writer<K>,
        batch: Vec<Popped<K>>,
        watermark: Option<String>,
        popped_key_is_cache_key: bool,
        out: &mut Vec<Notification<K>>,
    ) {
        let _block = self
            .inner
            .block_deltas
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !batch.is_empty() {
            let indexer = &self.inner.indexer;
            writer.write_batch(|cache| {
                apply_batch(indexer, batch, popped_key_is_cache_key, cache, out);
            });
        }
        if let Some(rv) = watermark {
            writer.reached(&rv);
        }
        if !out.is_empty() {
            // Moved straight into the shared slice (one allocation, exact size).
            let batch: Batch<K> = out.drain(..).collect();
            self.inner.processor.distribute_batch(&batch);
        }
    }
}
