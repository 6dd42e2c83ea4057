//! [`ControllerError`]: why a controller's `run` ended abnormally.

use std::sync::Arc;
use std::time::Duration;

use crate::informer::InformerError;
use crate::leader_election::LeaderElectionError;

/// Errors of the controller module.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// An event handler could not be added to an informer (it has stopped). Not
    /// retryable with the same informer.
    #[error("cannot watch informer {informer}")]
    Informer {
        /// The label of the informer (`<controller>/<Kind>`).
        informer: String,
        /// What the informer answered.
        #[source]
        source: InformerError,
    },
    /// The informers did not sync within the cache-sync timeout; no reconcile ran.
    /// Retryable: run the controller again once the informers can sync.
    #[error("timed out after {timeout:?} waiting for the caches of {unsynced:?} to sync")]
    CacheSyncTimeout {
        /// The timeout that elapsed.
        timeout: Duration,
        /// The informers that had not synced.
        unsynced: Vec<String>,
    },
    /// Some reconciles were still running when the graceful-shutdown timeout
    /// elapsed; they were aborted. Not retryable: the controller has stopped.
    #[error(
        "{aborted} reconcile(s) still running after the graceful shutdown timeout of {timeout:?} were aborted"
    )]
    GracefulShutdownTimeout {
        /// The timeout that elapsed.
        timeout: Duration,
        /// How many workers were aborted mid-reconcile.
        aborted: usize,
    },
    /// The SIGINT/SIGTERM handlers asked for with `shutdown_on_signal` could not be
    /// installed; the controller did not start. Not retryable.
    #[error("cannot listen for termination signals")]
    Signal(#[source] Arc<std::io::Error>),
    /// A sharded controller's ring could not run its membership lease (it is
    /// already running elsewhere); the controller did not start. Not retryable
    /// while the other run lasts.
    #[error("cannot run the leader election")]
    LeaderElection(#[source] LeaderElectionError),
    /// A controller given to `sharded` would not watch only its shard's share (an
    /// informer that does not select the shard's label), or is leader-elected too;
    /// the controller did not start. Not retryable: fix the wiring.
    #[cfg(feature = "sharding")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sharding")))]
    #[error("cannot run sharded{}: {reason}", informer.as_ref().map(|i| format!(" ({i})")).unwrap_or_default())]
    Sharding {
        /// The informer at fault (`<controller>/<Kind>`), if one is.
        informer: Option<String>,
        /// What is wrong.
        reason: &'static str,
    },
}
