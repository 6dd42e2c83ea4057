//! [`ReflectorError`]: why a list-and-watch round ended.

use crate::listwatch::ListWatchError;
use crate::store::{SinkError, StoreError};

/// Why a list-and-watch round ended. The reflector's run loop retries every one of
/// them after a backoff; each variant says what the next round does.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReflectorError {
    /// The list failed. Retryable: the next round lists again (from `""` if the
    /// resource version was expired or too large).
    #[error("failed to list {resource}")]
    List {
        /// The reflector's name.
        resource: String,
        /// What the server or transport said.
        #[source]
        source: ListWatchError,
    },
    /// A watch could not be started (other than 429 or a refused connection, which
    /// are retried in place). Retryable: the next round relists.
    #[error("failed to watch {resource}")]
    Watch {
        /// The reflector's name.
        resource: String,
        /// What the server or transport said.
        #[source]
        source: ListWatchError,
    },
    /// An open watch ended with an error: an `ERROR` event (410 Expired, 500, ...) or
    /// a line that could not be decoded. Retryable: the next round relists from the
    /// last resource version.
    #[error("watch of {resource} ended with an error")]
    WatchStream {
        /// The reflector's name.
        resource: String,
        /// The error event or decode failure.
        #[source]
        source: ListWatchError,
    },
    /// A watch closed within a second having delivered nothing, which means the server
    /// is misbehaving. Retryable after backoff.
    #[error(
        "very short watch: {resource}: unexpected watch close - watch lasted less than a second and no items received"
    )]
    VeryShortWatch {
        /// The reflector's name.
        resource: String,
    },
    /// The store rejected a list result. Retryable: the next round relists.
    #[error("unable to sync list result of {resource}")]
    Sync {
        /// The reflector's name.
        resource: String,
        /// The store's complaint.
        #[source]
        source: StoreError,
    },
    /// The store's resync failed; the current watch ends. Retryable.
    #[error("resync of {resource} failed")]
    Resync {
        /// The reflector's name.
        resource: String,
        /// The store's complaint.
        #[source]
        source: StoreError,
    },
    /// The queue the reflector feeds was closed: its consumer (an informer) stopped.
    /// Not retryable: the reflector's owner is stopping it too.
    #[error("the queue of {resource} is closed")]
    QueueClosed {
        /// The reflector's name.
        resource: String,
    },
}

impl ReflectorError {
    /// A list (or, with `resync`, a resync) the sink of reflector `resource` refused.
    pub(super) fn of_sink(resource: &str, e: SinkError, resync: bool) -> Self {
        let resource = resource.to_owned();
        match e {
            SinkError::Closed => ReflectorError::QueueClosed { resource },
            SinkError::Store(source) if resync => ReflectorError::Resync { resource, source },
            SinkError::Store(source) => ReflectorError::Sync { resource, source },
        }
    }

    /// The list or watch error underneath, if any.
    #[must_use]
    pub fn list_watch_error(&self) -> Option<&ListWatchError> {
        match self {
            ReflectorError::List { source, .. }
            | ReflectorError::Watch { source, .. }
            | ReflectorError::WatchStream { source, .. } => Some(source),
            _ => None,
        }
    }
}
