//! [`InformerError`]: misuse of an informer's lifecycle.

use crate::store::StoreError;

/// Errors of the informer module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// The informer has started; this setting must be made before. Not retryable.
    #[error("informer has already started")]
    AlreadyStarted,
    /// The informer has stopped; no handler can be added. Not retryable.
    #[error("handler was not added to the informer because it has stopped already")]
    Stopped,
    /// The indexer rejected new indexers (a name conflict). Not retryable.
    #[error("cannot add indexers")]
    Store(#[source] StoreError),
}
