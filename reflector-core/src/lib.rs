//! The runtime of reflector: client-go's informer machinery for async Rust.
//!
//! The modules follow the data path, in order:
//!
//! - [`object`]: keys (`ns/name`), key functions and the deletion tombstone;
//! - [`listwatch`]: listing and watching through `kube::Api` (or any source);
//! - [`Reflector`]: the list-then-watch loop that keeps a store in step (its
//!   types are at the crate root);
//! - [`fifo`]: the queue between the reflector and the informer, in order or per key;
//! - [`store`]: the cache's one `Writer`, its read-only `Indexer`s, and the `Store`
//!   contract of a cache of your own;
//! - [`informer`]: the shared informer, its handlers and the informer factory;
//! - [`lister`]: typed read-only views of an informer's cache;
//! - [`workqueue`]: the work queue that feeds workers (dedup, delayed adds, per-item
//!   rate limits, in one type);
//! - [`controller`]: workers that take keys from a queue and reconcile them;
//! - [`leader_election`]: Lease leader election, so one replica reconciles at a time;
//! - `sharding` (feature `sharding`): one controller split across replicas: Lease
//!   membership and rendezvous-hashed assignment labels;
//! - [`events`]: the Event recorder (`kubectl describe`'s Events), with client-go's
//!   series and spam filter;
//! - [`metrics`]: controller-runtime's and client-go's metrics, and their exposition;
//! - `webhooks` (feature `webhooks`): defaulting, validating and conversion webhooks
//!   typed from the kinds, over HTTPS with certificates that look after themselves.
//!
//! [`reflect`] holds what `#[derive(Reflect)]` builds on: the [`reflect::Reflect`]
//! trait, whose derive also generates typed index queries.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod backoff;
pub mod controller;
pub mod events;
pub mod fifo;
pub mod informer;
pub mod leader_election;
pub mod lister;
pub mod listwatch;
pub mod manager;
pub mod metrics;
pub mod object;
mod random;
pub mod reflect;
mod reflector;
#[cfg(feature = "sharding")]
#[cfg_attr(docsrs, doc(cfg(feature = "sharding")))]
pub mod sharding;
pub mod store;
#[cfg(test)]
mod test_support;
#[cfg(feature = "webhooks")]
#[cfg_attr(docsrs, doc(cfg(feature = "webhooks")))]
pub mod webhooks;
pub mod workqueue;

pub use reflector::{Reflector, ReflectorError, ReflectorOptions, ReflectorStats};

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
