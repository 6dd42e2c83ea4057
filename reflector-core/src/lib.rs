//! The runtime of reflector: client-go's informer machinery for async Rust.
//!
//! The modules follow the data path, in order:
//!
//! - [`listwatch`]: listing and watching through `kube::Api` (or any source);
//! - [`object`]: keys (`ns/name`), key functions and the deletion tombstone;
//! - [`reflector`]: the list-then-watch loop that keeps a store in step;
//! - [`store`]: the `Store` contract, the thread-safe store and the `Indexer`;
//! - [`fifo`]: the `DeltaFIFO` between the reflector and the informer;
//! - [`workqueue`]: the dedup, delaying and rate-limited queues that feed workers.

pub mod backoff;
pub mod fifo;
pub mod listwatch;
pub mod object;
pub mod reflector;
pub mod store;
pub mod workqueue;
