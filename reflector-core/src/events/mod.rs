//! Events: what a controller did, written as `events.k8s.io/v1` Events for
//! `kubectl describe` and `kubectl events`, with client-go's `tools/events`
//! correlation (series keyed as client-go keys them), a per-object spam filter, and
//! without ever making a reconcile wait.
//!
//! - [`Recorder`]: the handle reconciles publish through; one background writer task;
//! - [`Event`]: what is published (Normal or Warning, reason, action, note, related);
//! - [`RecorderConfig`]: spam filter, buffer, series window, retries, metrics;
//! - [`EventMetrics`]: the recorders' metric family;
//! - [`EventError`]: what publishing or writing can meet.
//!
//! ```no_run
//! # async fn f(client: kube::Client, cm: k8s_openapi::api::core::v1::ConfigMap) -> Result<(), reflector::events::EventError> {
//! use reflector::events::{Event, Recorder};
//!
//! let recorder = Recorder::new(client, "widget-controller")?;
//! recorder.publish(&cm, Event::normal("Reconciled", "Reconcile"))?;
//! # Ok(()) }
//! ```

mod config;
mod error;
mod event;
mod metrics;
mod object_id;
mod recorder;
mod reference;
mod series;
mod spam_filter;
mod writer;

pub use config::RecorderConfig;
pub use error::EventError;
pub use event::Event;
pub use metrics::EventMetrics;
pub use recorder::Recorder;
