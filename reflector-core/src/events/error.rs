//! [`EventError`]: what publishing an Event, or writing it, can meet.

/// Errors of the event recorder.
///
/// [`Recorder::publish`](super::Recorder::publish) returns the first two kinds; the
/// writes the recorder's background task makes are never returned to the caller
/// (publishing does not wait for them): their errors are logged with `tracing` and the
/// Events they drop are counted in `reflector_events_dropped_total`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// The Event is not one the API server would accept (an empty or too long
    /// `reason`/`action`, a `note` over 1 kB, a `regarding` reference without a name).
    /// Not retryable: fix the Event.
    #[error("invalid event: {field} {problem}")]
    InvalidEvent {
        /// The offending field (`reason`, `action`, `note`, `regarding.name`).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The recorder's configuration cannot work (an empty reporting controller, a burst
    /// or buffer of zero, ...). Not retryable: fix the configuration.
    #[error("invalid event recorder configuration: {field} {problem}")]
    InvalidConfig {
        /// The offending setting.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The recorder was created outside a tokio runtime, so its writer task cannot be
    /// started. Not retryable: create it inside the runtime.
    #[error("the event recorder needs a tokio runtime for its writer task")]
    NoRuntime,
    /// The recorder's writer task has stopped (its cancellation token fired); nothing
    /// more is written. Not retryable.
    #[error("the event recorder has stopped")]
    Stopped,
    /// The API server did not take a new Event. Retryable when the cause is a
    /// connection error (the writer retries it); an answer from the server (a `Status`)
    /// is not retried, as in client-go.
    #[error("cannot create Event {name}")]
    Create {
        /// The Event's name.
        name: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The API server did not take a series update (`series.count`,
    /// `series.lastObservedTime`). Retryable as [`EventError::Create`]; a 404 (the
    /// Event expired) makes the writer create it again.
    #[error("cannot update the series of Event {name}")]
    UpdateSeries {
        /// The Event's name.
        name: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
}

impl EventError {
    pub(crate) fn invalid_event(field: &'static str, problem: impl Into<String>) -> Self {
        EventError::InvalidEvent {
            field,
            problem: problem.into(),
        }
    }

    pub(crate) fn invalid_config(field: &'static str, problem: impl Into<String>) -> Self {
        EventError::InvalidConfig {
            field,
            problem: problem.into(),
        }
    }

    /// Whether the writer should try the write again: only when the server never
    /// answered (client-go retries only those too).
    pub(crate) fn is_retryable(&self) -> bool {
        match self {
            EventError::Create { source, .. } | EventError::UpdateSeries { source, .. } => {
                !matches!(source, kube::Error::Api(_))
            }
            _ => false,
        }
    }
}
