//! Informers: one watch per resource type, shared by every handler and lister.
//!
//! A [`SharedIndexInformer`] owns a [`Reflector`](crate::reflector::Reflector)
//! feeding a [`Fifo`](crate::fifo::Fifo) — in order by default, or per key
//! ([`QueueMode`](crate::fifo::QueueMode) says what each guarantees, and why the
//! in-order queue is the default); its task pops the queue in batches, applies them
//! to the cache through the cache's one [`Writer`](crate::store::Writer) and notifies
//! every registered [`EventHandler`], as client-go's `sharedIndexInformer`. Everyone
//! else reads the cache through read-only handles
//! ([`indexer`](SharedIndexInformer::indexer), [`lister`](SharedIndexInformer::lister)).
//!
//! - With the default queue, changes reach handlers in the order the watch
//!   delivered them, and a relist or a resync is applied to the cache whole before
//!   handlers are told of it (the per-key queue groups changes per object instead).
//! - `Sync`, `Replaced`, `Added` and `Updated` changes update the cache and become
//!   `on_update(old, new)` when the key was cached, else `on_add(obj, initial)`;
//!   `Deleted` changes remove it and become `on_delete` with the object or its
//!   tombstone. An update that leaves the resource version unchanged is a resync and
//!   goes only to handlers whose resync period is due.
//! - Each handler has its own unbounded buffer and task ([`Registration`] is its
//!   handle), so a slow handler never delays another; a panicking handler is logged
//!   and its listener goes on after a second.
//! - A handler added after start first receives an add for every cached object; its
//!   own [`Registration::has_synced`] turns true once those are handled.
//! - [`InformerOptions`] configure an informer, built over a lister-watcher of your
//!   own ([`SharedIndexInformer::with_options`]) or by an [`InformerFactory`], which
//!   shares one informer per type, namespace and selectors.
//!
//! Handlers are plain synchronous callbacks: keep them short (enqueue a key into a
//! [`workqueue`](crate::workqueue) and return).

mod change;
mod error;
mod event_handler;
mod factory;
mod informer_options;
mod notification;
mod process;
mod processor_listener;
mod reflector_collector;
mod registration;
mod scope;
mod shared_index_informer;
mod shared_processor;
mod transform;

#[cfg(test)]
mod tests;

pub use change::Change;
pub use error::InformerError;
pub use event_handler::EventHandler;
pub use factory::InformerFactory;
pub use informer_options::InformerOptions;
pub(crate) use reflector_collector::ReflectorCollector;
pub use registration::Registration;
pub use scope::InformerScope;
pub use shared_index_informer::{MINIMUM_RESYNC_PERIOD, SharedIndexInformer};
pub use transform::strip_managed_fields;
