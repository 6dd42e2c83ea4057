//! Errors returned by the testkit's own API (starting the server, direct state access).

/// An error from the testkit's Rust API (not an HTTP error: those are `Status` responses).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestkitError {
    /// Binding or serving the loopback listener failed. Retryable only if the cause was
    /// transient (for example a port that is briefly in use).
    #[error("could not bind or serve the API server listener")]
    Io(#[source] std::io::Error),
    /// Building a `kube::Client` for the server failed. Not retryable.
    #[error("could not build a kube client for the server")]
    Client(#[source] kube::Error),
    /// An object could not be converted to or from JSON. Not retryable.
    #[error("object is not valid JSON for its resource")]
    Json(#[source] serde_json::Error),
    /// The object's resource type was never registered. Not retryable: register it first.
    #[error("resource {0} is not registered with the server")]
    UnknownResource(String),
    /// The object was rejected (missing name, wrong namespace scope, ...). Not retryable.
    #[error("invalid object: {0}")]
    Invalid(String),
    /// A `User-Agent` that is not a valid HTTP header value (control characters,
    /// non-visible ASCII). Not retryable.
    #[error("not a valid User-Agent header value: {0:?}")]
    InvalidUserAgent(String),
}
