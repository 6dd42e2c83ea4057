//! [`Signals`]: the termination signals a controller shuts down on.

/// SIGINT and SIGTERM listeners, installed when a controller starts, so a signal
/// that arrives before the first poll is not lost (nor does it kill the process).
pub(crate) struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the listeners.
    ///
    /// # Errors
    /// The operating system's error if a handler cannot be installed.
    pub(crate) fn install() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    /// Resolves on the next SIGINT or SIGTERM (Ctrl+C elsewhere).
    ///
    /// # Cancel safety
    /// Cancel-safe: a signal that arrives while nobody waits is kept for the next
    /// call.
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => tracing::info!("SIGINT received, shutting down"),
                _ = self.terminate.recv() => tracing::info!("SIGTERM received, shutting down"),
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_ok() {
                tracing::info!("Ctrl+C received, shutting down");
            }
        }
    }
}
