//! [`Shutdown`]: what starts a controller's graceful shutdown.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::error::ControllerError;
use super::signal::Signals;

/// A future that resolves to start the graceful shutdown.
pub(crate) type Trigger = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The `graceful_shutdown_on` trigger and, with `shutdown_on_signal`, SIGINT and
/// SIGTERM: whichever comes first starts the graceful shutdown.
pub(crate) struct Shutdown {
    trigger: Option<Trigger>,
    signals: Option<Signals>,
}

impl Shutdown {
    /// `trigger`, and the signal listeners if `on_signal` (installed now, so a
    /// signal that arrives before the controller is polled is not lost).
    ///
    /// # Errors
    /// [`ControllerError::Signal`] if the listeners cannot be installed.
    pub(crate) fn install(
        trigger: Option<Trigger>,
        on_signal: bool,
    ) -> Result<Self, ControllerError> {
        let signals = on_signal
            .then(Signals::install)
            .transpose()
            .map_err(|e| ControllerError::Signal(Arc::new(e)))?;
        Ok(Shutdown { trigger, signals })
    }

    /// Drives `work` to its end, cancelling `graceful` when a trigger fires first
    /// (the work then winds down and ends).
    ///
    /// # Cancel safety
    /// Dropping the future drops `work`.
    pub(crate) async fn drive<T>(
        mut self,
        work: impl Future<Output = T>,
        graceful: &CancellationToken,
    ) -> T {
        let mut work = std::pin::pin!(work);
        tokio::select! {
            biased;
            out = &mut work => return out,
            () = self.triggered() => graceful.cancel(),
        }
        work.await
    }

    /// Resolves when the trigger or a signal fires; never without either.
    ///
    /// # Cancel safety
    /// Cancel-safe: a signal is kept for the next call, and the trigger is polled
    /// where it stands.
    async fn triggered(&mut self) {
        let trigger = async {
            match self.trigger.as_mut() {
                Some(trigger) => trigger.await,
                None => std::future::pending().await,
            }
        };
        match self.signals.as_mut() {
            Some(signals) => tokio::select! {
                () = trigger => {}
                () = signals.recv() => {}
            },
            None => trigger.await,
        }
    }
}
