//! [`ManagerError`]: why a manager could not be set up, or why its run ended
//! abnormally.

use std::sync::Arc;

use crate::controller::ControllerError;
use crate::events::EventError;
use crate::leader_election::LeaderElectionError;
#[cfg(feature = "metrics-server")]
use crate::metrics::MetricsError;
#[cfg(feature = "webhooks")]
use crate::webhooks::WebhookError;

/// Errors of the manager module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// The leader election could not be set up (an invalid lease name or timing,
    /// no host name for the identity) or run (already running elsewhere). Not
    /// retryable: fix the configuration, or stop the other run.
    #[error("leader election")]
    LeaderElection(#[source] LeaderElectionError),
    /// A controller could not start, or ended with an error (its informers did not
    /// sync in time, reconciles had to be aborted at shutdown, ...); the manager shut
    /// everything else down in order. Retryable as the controller's error says.
    #[error("controller {controller}")]
    Controller {
        /// The controller's name.
        controller: String,
        /// What it ended with.
        #[source]
        source: ControllerError,
    },
    /// The SIGINT/SIGTERM listeners could not be installed; nothing started. Not
    /// retryable.
    #[error("cannot listen for termination signals")]
    Signal(#[source] Arc<std::io::Error>),
    /// The event recorder could not be made (an invalid name, or no tokio runtime).
    /// Not retryable: fix the name, or make it inside the runtime.
    #[error("event recorder")]
    Events(#[source] EventError),
    /// The `/metrics` server could not bind its address, or failed while serving.
    /// Retryable once the address is free.
    #[cfg(feature = "metrics-server")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics-server")))]
    #[error("metrics server")]
    Metrics(#[source] MetricsError),
    /// The webhook server could not start (its certificate could not be made or
    /// read, its address bound) or failed while serving; the manager shut down.
    /// Retryable as the [`WebhookError`] says.
    #[cfg(feature = "webhooks")]
    #[cfg_attr(docsrs, doc(cfg(feature = "webhooks")))]
    #[error("webhook server")]
    Webhooks(#[source] WebhookError),
}
