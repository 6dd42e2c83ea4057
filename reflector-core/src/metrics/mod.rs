//! Metrics: controller-runtime's and client-go's names, in `prometheus-client`.
//!
//! A process registers one [`Metrics`] in its [`Registry`] (re-exported here, as is
//! the whole [`prometheus_client`] crate for metrics of your own: no direct
//! dependency needed) and gives a clone to each
//! [`Controller`](crate::controller::Controller). Each controller then reports,
//! labelled with its name:
//!
//! - `controller_runtime_reconcile_total{controller,result}`,
//!   `controller_runtime_reconcile_errors_total`,
//!   `controller_runtime_reconcile_time_seconds`, `controller_runtime_active_workers`
//!   and the rest of controller-runtime's controller metrics, so its dashboards work;
//! - the `workqueue_*` metrics of its queue (client-go's names), the queue named after
//!   the controller;
//! - the counters of the reflectors under its informers, read at scrape time
//!   (`reflector_lists_total{name}`, `reflector_watches_total`,
//!   `reflector_watch_events_total`, `reflector_errors_total{name,reason}`, ...; see
//!   [`Metrics::informer`] for the whole list).
//!
//! A [`LeaderElection`](crate::leader_election::LeaderElection) given the bundle
//! (`LeaderElectionConfig::metrics`) reports `leader_election_master_status{name}`
//! (client-go's gauge: 1 while leading) and counts lost races and failed requests
//! on its lease; [`Health::leader_election`] puts its state in `/readyz`.
//!
//! With the `sharding` feature, a `Sharder` and a sharded controller given the
//! bundle report their ring's `reflector_sharding_*` families (assignments, moves,
//! drains started and acknowledged, ring members), labelled `ring`.
//!
//! Each subsystem owns its families (the work queue's
//! [`WorkQueueMetrics`](crate::workqueue::WorkQueueMetrics), the event recorder's
//! [`EventMetrics`](crate::events::EventMetrics), the informers' reflector
//! counters, ...); this module gathers them into the [`Metrics`] bundle, which every
//! setter taking metrics accepts, and serves them.
//!
//! [`render_metrics`] encodes a registry in the text exposition format; with the
//! `metrics-server` feature, `MetricsServer` serves it on `GET /metrics`, with
//! `/healthz` and `/readyz` answered from a [`Health`].
//!
//! ```
//! use reflector::metrics::{render_metrics, Metrics, Registry};
//! use reflector::workqueue::{QueueConfig, WorkQueue};
//!
//! let mut registry = Registry::default();
//! let metrics = Metrics::registered(&mut registry);
//! let queue: WorkQueue<String> = WorkQueue::with_config(
//!     std::sync::Arc::new(reflector::workqueue::DefaultRateLimiter::default()),
//!     QueueConfig::default().name("widgets").metrics(&metrics),
//! );
//! queue.add("ns/a".to_string());
//! let text = render_metrics(&registry);
//! assert!(text.contains("workqueue_adds_total{name=\"widgets\"} 1"));
//! ```

mod bundle;
#[cfg(feature = "metrics-server")]
mod error;
mod health;
mod leader_election_metrics;
mod reconcile_metrics;
mod render;
#[cfg(feature = "metrics-server")]
mod server;
#[cfg(feature = "sharding")]
mod sharding_metrics;

pub(crate) use crate::informer::ReflectorCollector;
pub use bundle::Metrics;
/// The metrics endpoint's error, with the endpoint (feature `metrics-server`).
#[cfg(feature = "metrics-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics-server")))]
pub use error::MetricsError;
pub use health::Health;
/// The `prometheus-client` crate the metrics are built with, for registering metrics
/// of your own in the same [`Registry`] (the same version, no direct dependency).
pub use prometheus_client;
/// The registry metrics are registered in and encoded from (`prometheus-client`'s).
///
/// ```
/// use reflector::metrics::{Metrics, Registry};
/// let mut registry = Registry::default();
/// let metrics = Metrics::registered(&mut registry);
/// # let _ = metrics;
/// ```
pub use prometheus_client::registry::Registry;
pub(crate) use reconcile_metrics::{ControllerRecorder, ReconcileMetrics, ReconcileResult};
pub use render::{METRICS_CONTENT_TYPE, render_metrics};
#[cfg(feature = "metrics-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics-server")))]
pub use server::MetricsServer;
