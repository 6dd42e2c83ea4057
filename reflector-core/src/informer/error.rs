//! [`InformerError`]: what an informer could not do.

use crate::store::StoreError;

/// Errors of the informer module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// The informer has stopped; no handler can be added. Not retryable.
    #[error("handler was not added to the informer because it has stopped already")]
    Stopped,
    /// The informer stopped (or was dropped) before it synced, so a wait for its
    /// sync or for a resource version cannot end well. Not retryable.
    #[error("informer stopped before it synced")]
    StoppedBeforeSync,
    /// A resource version to wait for is not the integer an etcd3-backed API server
    /// hands out, so it could never be reached. Not retryable.
    #[error("resource version {0:?} is not an integer")]
    InvalidResourceVersion(String),
    /// The indexer rejected new indexers (a name conflict). Not retryable.
    #[error("cannot add indexers")]
    Store(#[source] StoreError),
}
