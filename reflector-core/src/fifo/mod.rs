//! The queue between a reflector and an informer's cache: one [`Fifo`] type with a
//! [`QueueMode`] — every change in the order it came (client-go 1.36's `RealFIFO`,
//! the default), or changes accumulated per object key (client-go's `DeltaFIFO`).
//! [`QueueMode`] states what each mode guarantees.
//!
//! A reflector writes every watch event, list and resync into the queue; an
//! informer pops [`Entry`]s from it, in batches, and applies them to its cache in
//! one place.
//!
//! - [`DeltaType`], [`Delta`], [`Deltas`]: changes to one object. A `Deleted` delta
//!   inferred from a relist carries a
//!   [`MaybeTombstone::DeletedFinalStateUnknown`](crate::object::MaybeTombstone::DeletedFinalStateUnknown)
//!   tombstone.
//! - [`Entry`]: what a pop hands over: an object's [`Deltas`], or in order a whole
//!   list, a resync or a bookmark.
//! - [`Fifo`] (configured by its builder methods): the queue.
//!
//! The semantics are client-go's `tools/cache/delta_fifo.go` and
//! `the_real_fifo.go`: per key, consecutive deletes collapse, `replace` tombstones
//! what disappeared, `resync` only re-delivers objects with nothing pending; in order
//! a relist and a resync are one entry each; in both, `pop` runs its callback
//! atomically with respect to the writes that consult the cache, and
//! [`has_synced`](Fifo::has_synced) turns true once the first list is popped. One
//! departure: the pages of a first list into an empty queue can be queued as they
//! arrive (the reflector offers each page to the queue).

mod delta;
mod entry;
mod error;
mod mode;
mod pop;
mod queue;
mod sink;
mod state;
mod write;

#[cfg(test)]
mod tests;

pub use delta::{Delta, DeltaType, Deltas};
pub use entry::Entry;
pub(crate) use entry::Popped;
pub use error::FifoError;
pub use mode::QueueMode;
pub use queue::Fifo;
pub(crate) use queue::TransformFunc;
