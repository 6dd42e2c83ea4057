//! The consumer side: one pop loop for both modes, handing out batches of
//! [`Popped`] entries and the consumer's watermark.

use super::{Entry, Fifo, FifoError, Popped};
use crate::object::Object;

impl<K: Object> Fifo<K> {
    /// Waits for a queued entry, removes it and runs `process` on it and on whether
    /// it belongs to the first list (popped before the queue synced), as client-go's
    /// `Pop` and `PopProcessFunc(obj, isInInitialList)`. Entries come out in the order
    /// they were queued (per key: the order their keys were first queued).
    ///
    /// Where writes consult the cache (see [`QueueMode`](super::QueueMode)), whatever
    /// `process` updates (the consumer's cache) changes atomically with the queue for
    /// those writes and [`has_synced`](Fifo::has_synced), which wait for a running
    /// `process`; `add` and `update` never do, so a reflector queues the next events
    /// while the consumer applies the previous ones. `process` must be quick and must
    /// not call this queue's `pop`, `delete`, `replace` or `resync` (the processing
    /// lock is not reentrant: that deadlocks). If it panics, the entry is lost and the
    /// panic propagates; the queue stays usable.
    ///
    /// # Errors
    /// [`FifoError::Closed`] once the queue is closed **and** drained: entries queued
    /// before `close` are still handed out.
    ///
    /// # Cancel safety
    /// Cancel safe. The entry is removed and `process` runs within a single
    /// synchronous section, after the last `.await`; a `pop` dropped while waiting
    /// takes nothing, and a wake-up it received passes to another waiting `pop`.
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::fifo::{Fifo, FifoError, QueueMode};
    ///
    /// let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// fifo.add(Arc::new(cm)).unwrap();
    /// fifo.close();
    /// let n = fifo.pop(|entry, initial| (entry.deltas().unwrap().len(), initial)).await.unwrap();
    /// assert_eq!(n, (1, false));
    /// assert_eq!(fifo.pop(|_, _| ()).await, Err(FifoError::Closed));
    /// # }
    /// ```
    pub async fn pop<R>(&self, process: impl FnOnce(Entry<K>, bool) -> R) -> Result<R, FifoError> {
        self.pop_some(1, false, |mut batch, _| {
            let popped = batch.pop();
            popped.map(|p| process(p.entry, p.is_in_initial_list))
        })
        .await?
        .ok_or(FifoError::Closed)
    }

    /// As [`pop`](Fifo::pop), for up to `max` entries at once (`max` 0 counts as 1),
    /// as client-go's `PopBatch`: `process` gets them in queue order, under the
    /// processing lock if any, as if popped one after another with nothing queued in
    /// between; a batch never mixes entries of the first list with later ones, and a
    /// whole list or resync comes alone. Handing entries over in batches lets a
    /// consumer pay its own per-round costs (locks, wake-ups of downstream tasks)
    /// once per batch.
    ///
    /// `process` also gets the consumer's new **watermark** when the batch moves it:
    /// the resource version through which everything the reflector handed over
    /// (lists, watch events, bookmarks) is applied once this batch is — the version
    /// handed over last before the oldest change still queued, or, with nothing
    /// queued, the last one. A version handed over while nothing is queued comes in
    /// a batch of no entries.
    ///
    /// # Errors
    /// [`FifoError::Closed`] once the queue is closed and drained.
    ///
    /// # Cancel safety
    /// Cancel safe, as [`pop`](Fifo::pop).
    pub(crate) async fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(Vec<Popped<K>>, Option<String>) -> R,
    ) -> Result<R, FifoError> {
        self.pop_some(max, true, process).await
    }

    /// Waits for a queued entry (or, if `watermark`, news for the consumer's
    /// watermark) and hands `process` up to `max` entries and, if `watermark`, the
    /// consumer's new watermark. Without `watermark` the batch is never empty.
    async fn pop_some<R>(
        &self,
        max: usize,
        watermark: bool,
        process: impl FnOnce(Vec<Popped<K>>, Option<String>) -> R,
    ) -> Result<R, FifoError> {
        let (processing, mut state) = self.wait_ready(watermark).await?;
        let batch = state.take_batch_locked(max, self.per_key());
        let reached = if watermark {
            state.take_watermark_locked()
        } else {
            None
        };
        drop(state);
        // The entries count as processed (for `has_synced`) only once `process`
        // returned, or unwound.
        let done = Processed {
            fifo: self,
            count: batch.len(),
        };
        let result = process(batch, reached);
        drop(done);
        drop(processing);
        Ok(result)
    }
}

/// A popped batch in its callback's hands: when the callback returns (or unwinds),
/// the batch counts as processed (for `has_synced` and the queue being idle).
struct Processed<'a, K> {
    fifo: &'a Fifo<K>,
    count: usize,
}

impl<K> Drop for Processed<'_, K> {
    fn drop(&mut self) {
        let flipped = {
            let mut state = self.fifo.lock();
            state.in_flight = 0;
            let life = &mut state.life;
            life.initial_population_count =
                life.initial_population_count.saturating_sub(self.count);
            life.check_synced_locked()
        };
        self.fifo.announce_synced(flipped);
    }
}
