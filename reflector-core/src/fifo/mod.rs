//! The queues between a reflector and an informer: the [`DeltaFifo`] (per-key
//! accumulation) and the [`InOrderFifo`] (every change in the order it came, as
//! client-go 1.36's `RealFIFO`; see its docs). The rest of this page is about the
//! DeltaFifo.
//!
//! A reflector writes every watch event and every relist into a [`DeltaFifo`]
//! through the [`Store`](crate::store::Store) methods; an informer
//! [`pop`](DeltaFifo::pop)s it. The FIFO keeps, per object key, the list of
//! [`Deltas`] that happened since the key was last popped, and queues each key once,
//! in the order it was first enqueued — so a burst of updates to one object is
//! handled in one go, and no object starves another.
//!
//! - [`DeltaType`], [`Delta`], [`Deltas`]: what a popped item holds. A `Deleted`
//!   delta inferred from a relist carries a
//!   [`MaybeTombstone::DeletedFinalStateUnknown`](crate::object::MaybeTombstone::DeletedFinalStateUnknown)
//!   tombstone.
//! - [`DeltaFifo`] (configured by its builder methods): the queue; `pop` hands out
//!   one key's [`Deltas`] at a time.
//!
//! The semantics are client-go's `tools/cache/delta_fifo.go`: consecutive deletes
//! collapse, `replace` tombstones what disappeared, `resync` only re-delivers
//! objects with nothing pending, `pop` runs its callback atomically with respect
//! to `delete`, `replace` and `resync` (under a processing lock; `add` and `update`
//! go on meanwhile), and [`has_synced`](DeltaFifo::has_synced) (or
//! [`wait_synced`](DeltaFifo::wait_synced)) turns true once the first list is
//! popped. One departure: the pages of a first list into an empty FIFO can be
//! queued as they arrive (the reflector offers each page to the FIFO).

mod delta;
mod delta_fifo;
mod in_order_fifo;
mod queue_core;
mod queue_options;
mod sink;

#[cfg(test)]
mod tests;

pub use delta::{Delta, DeltaType, Deltas};
pub use delta_fifo::DeltaFifo;
pub(crate) use delta_fifo::PoppedItem;
pub(crate) use in_order_fifo::PoppedEntry;
pub use in_order_fifo::{Entry, InOrderFifo};
use queue_options::QueueOptions;
pub(crate) use queue_options::TransformFunc;
pub(crate) use sink::sink_for;
