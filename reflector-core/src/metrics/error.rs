//! [`MetricsError`]: why the metrics endpoint could not serve.

use std::net::SocketAddr;

/// Errors of the metrics module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// The address could not be bound (in use, not local, no permission). Retryable
    /// only once the address is free.
    #[error("cannot bind the metrics endpoint to {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's answer.
        #[source]
        source: std::io::Error,
    },
    /// The server failed while accepting connections. Retryable: bind again.
    #[error("the metrics endpoint failed")]
    Serve(#[source] std::io::Error),
}
