//! [`WebhookError`]: why a webhook server could not start, serve, or keep its
//! certificates.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Errors of the webhooks module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The address could not be bound. Retryable once the address is free.
    #[error("cannot bind {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The listener failed (it could not be handed to tokio, or accepting failed for
    /// good). Retryable: a new server may bind again.
    #[error("serving webhooks")]
    Serve(#[source] std::io::Error),
    /// A self-signed certificate could not be made. Not retryable: the
    /// names given (the Service's) are not valid DNS names.
    #[error("making a self-signed certificate")]
    Generate(#[source] rcgen::Error),
    /// A certificate or key file could not be read. Retryable: the Secret may not be
    /// mounted yet.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A certificate or key is not usable (no certificate in the PEM, no or an
    /// unsupported private key, a key that does not match). Not retryable until
    /// the files change.
    #[error("unusable certificate or key: {0}")]
    Certificate(String),
    /// The TLS configuration could not be built. Not retryable.
    #[error("TLS configuration")]
    Tls(#[source] rustls::Error),
}
