//! The runtime of reflector: client-go's informer machinery for async Rust.
//!
//! The modules follow the data path, in order:
//!
//! - [`object`]: keys (`ns/name`), key functions and the deletion tombstone;
//! - [`store`]: the `Store` contract, the thread-safe store and the `Indexer`;
//! - [`fifo`]: the `DeltaFIFO` between the reflector and the informer;
//! - [`workqueue`]: the dedup, delaying and rate-limited queues that feed workers.

pub mod fifo;
pub mod object;
pub mod store;
