//! Errors of the DeltaFifo.

use crate::object::KeyError;

/// Why a [`DeltaFifo`](super::DeltaFifo) operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FifoError {
    /// The FIFO was closed and every queued item has been popped, as client-go's
    /// `ErrFIFOClosed`. Not retryable: the consumer loop should exit.
    #[error("DeltaFifo: manipulating with closed queue")]
    Closed,
    /// The key function failed for an object. Not retryable: the object is
    /// malformed.
    #[error("cannot compute the object's key")]
    Key(#[source] KeyError),
    /// A key was asked of an empty [`Deltas`](super::Deltas), as client-go's
    /// `ErrZeroLengthDeltasObject`. Not retryable: the FIFO never hands out empty
    /// `Deltas`, so the caller built one.
    #[error("0 length Deltas object; can't get key")]
    EmptyDeltas,
}

impl From<KeyError> for FifoError {
    fn from(e: KeyError) -> Self {
        FifoError::Key(e)
    }
}
