//! [`FifoError`]: what a [`Fifo`](super::Fifo) refuses.

use crate::object::KeyError;
use crate::store::SinkError;

/// Errors of the fifo module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FifoError {
    /// The key function failed for an object. Not retryable: the object is malformed.
    #[error("cannot compute the object's key")]
    Key(#[source] KeyError),
    /// The queue was closed: a write to it, or a `pop` once every queued entry has
    /// been popped (client-go's `ErrFIFOClosed`). Not retryable: the consumer loop
    /// should exit.
    #[error("the queue is closed")]
    Closed,
}

impl From<KeyError> for FifoError {
    fn from(e: KeyError) -> Self {
        FifoError::Key(e)
    }
}

/// What the reflector is told when the queue refuses a write.
impl From<FifoError> for SinkError {
    fn from(e: FifoError) -> Self {
        match e {
            FifoError::Key(e) => e.into(),
            FifoError::Closed => SinkError::Closed,
        }
    }
}
