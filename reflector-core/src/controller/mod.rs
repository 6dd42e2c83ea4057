//! Controllers: workers that take keys from a work queue and reconcile them, as
//! controller-runtime's controller (with kube-runtime's Rust shape).
//!
//! A [`Controller`] is built around the primary resource's
//! [`SharedIndexInformer`](crate::informer::SharedIndexInformer) and told which
//! other informers lead to primary keys:
//!
//! - [`Controller::owns`]: children whose controller owner reference points at a
//!   primary ([`OwnerMapping`], as controller-runtime's `Owns`);
//! - [`Controller::watches`]: any informer, with a function from its objects to
//!   typed primary keys ([`ObjectRef<K>`](crate::object::ObjectRef);
//!   controller-runtime's `Watches` with a map function).
//!
//! [`Controller::run`] then registers an enqueueing handler on each informer, starts
//! the informers nobody started, waits until they have all synced, and runs
//! `concurrency` workers. Each worker takes a key from a
//! [`WorkQueue`](crate::workqueue::WorkQueue), reads the object from
//! the primary's cache, calls `reconcile(Request { key, object }, ctx)`, and files
//! the key back according to the returned [`Action`]:
//!
//! | outcome | queue | `controller_runtime_reconcile_total{result}` |
//! |---|---|---|
//! | `Ok(Action::done())` | `forget` | `success` |
//! | `Ok(Action::requeue_after(d))` | `forget`, `add_after(d)` | `requeue_after` |
//! | `Ok(Action::requeue_rate_limited())` | `add_rate_limited` | `requeue` |
//! | `Err(e)` | as the [`ErrorPolicy`] answers (the default, [`Action::requeue_rate_limited`]: `add_rate_limited`) | `error` |
//!
//! A deleted object is reconciled too, with `object: None`, so cleanup runs through
//! the same path. The queue never hands one key to two workers at once, and a key
//! that changes while it is reconciled is reconciled once more afterwards.
//!
//! Workers run in **terms**. A plain controller has one, from sync to shutdown. A
//! leader-elected one (under a [`Manager`](crate::manager::Manager) with an
//! election) and a sharded one
//! (`Controller::sharded`, feature `sharding`, whose terms are its shard's membership of the ring) hold
//! a lease: each acquisition starts a term (every cached object queued, workers
//! started), each loss ends it (no new reconcile; those in flight may finish until
//! another replica could take the lease over), and on shutdown the lease is released
//! only after the workers drained.
//!
//! Metrics (controller-runtime's and client-go's names) are reported to a shared
//! [`Metrics`](crate::metrics::Metrics) given with [`Controller::metrics`], or to
//! the manager's.

mod action;
mod consistency;
mod constructors;
#[allow(clippy::module_inception)]
mod controller;
mod error;
mod error_policy;
mod event_filter;
mod finalizer;
mod footprint;
mod group_resource;
mod key_gate;
mod kind_key;
mod managed;
mod owner_mapping;
mod recording_api;
mod request;
mod run;
#[cfg(feature = "sharding")]
mod sharded;
mod shutdown;
mod signal;
mod source;
mod term;
mod watching;
mod worker;
mod workers;

pub use action::Action;
pub use controller::{Controller, DEFAULT_CACHE_SYNC_TIMEOUT, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT};
pub use error::ControllerError;
pub use error_policy::ErrorPolicy;
pub use event_filter::EventFilter;
pub use finalizer::{Finalizer, FinalizerError, FinalizerStep};
pub use owner_mapping::OwnerMapping;
pub use recording_api::RecordingApi;
pub use request::Request;

pub(crate) use footprint::KindUse;
pub(crate) use group_resource::GroupResource;
pub(crate) use managed::{Managed, ManagedController, PreparedController};
pub(crate) use shutdown::{Shutdown, Trigger};
