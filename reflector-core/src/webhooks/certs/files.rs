//! Certificates from files (a mounted Secret: cert-manager's `tls.crt`, `tls.key`
//! and `ca.crt`), read again when they change.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use super::resolver::{Served, certified_key};
use crate::webhooks::WebhookError;

/// The serving certificate chain's file in the directory (a `kubernetes.io/tls`
/// Secret's key).
pub(crate) const CERT_FILE: &str = "tls.crt";
/// The private key's file.
pub(crate) const KEY_FILE: &str = "tls.key";
/// The CA's file, when the Secret has one (cert-manager writes it).
pub(crate) const CA_FILE: &str = "ca.crt";

/// The files' contents as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Contents {
    cert: Vec<u8>,
    key: Vec<u8>,
    ca: Option<Vec<u8>>,
}

/// A directory holding `tls.crt`, `tls.key` and maybe `ca.crt`.
#[derive(Debug, Clone)]
pub(crate) struct CertDir {
    pub(crate) dir: PathBuf,
    pub(crate) poll: Duration,
}

impl CertDir {
    /// Reads the three files.
    ///
    /// # Errors
    /// [`WebhookError::Read`] if `tls.crt` or `tls.key` cannot be read (a missing
    /// `ca.crt` is no error).
    async fn read(&self) -> Result<Contents, WebhookError> {
        let read = |name: &str| {
            let path = self.dir.join(name);
            async move {
                tokio::fs::read(&path)
                    .await
                    .map_err(|source| WebhookError::Read { path, source })
            }
        };
        let cert = read(CERT_FILE).await?;
        let key = read(KEY_FILE).await?;
        let ca = match read(CA_FILE).await {
            Ok(ca) => Some(ca),
            Err(WebhookError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                None
            }
            Err(e) => return Err(e),
        };
        Ok(Contents { cert, key, ca })
    }

    /// Reads the files and serves them.
    ///
    /// # Errors
    /// [`WebhookError::Read`] or [`WebhookError::Certificate`]: the files are
    /// missing or unusable; nothing changed.
    pub(crate) async fn load(&self, served: &Served) -> Result<Contents, WebhookError> {
        let contents = self.read().await?;
        apply(&contents, served)?;
        Ok(contents)
    }

    /// Reads the files every poll interval until `stop` fires, and serves them
    /// when they changed since `last`. Files that cannot be read or used are
    /// logged and the current certificate kept (a Secret is updated whole, through
    /// a symbolic link, but a half-written file can be seen elsewhere): the next
    /// poll tries again.
    ///
    /// # Cancel safety
    /// Cancel-safe: a certificate is swapped in whole or not at all.
    pub(crate) async fn watch(
        self,
        served: Arc<Served>,
        mut last: Contents,
        stop: CancellationToken,
    ) {
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + self.poll, self.poll);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let contents = match self.read().await {
                Ok(contents) if contents == last => continue,
                Ok(contents) => contents,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the webhook certificate; serving the last one");
                    continue;
                }
            };
            match apply(&contents, &served) {
                Ok(()) => {
                    tracing::info!(dir = %self.dir.display(), "serving the changed webhook certificate");
                    last = contents;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the changed webhook certificate is unusable; serving the last one")
                }
            }
        }
    }
}

/// Serves `contents`.
fn apply(contents: &Contents, served: &Served) -> Result<(), WebhookError> {
    let key = certified_key(&contents.cert, &contents.key)?;
    let ca = match &contents.ca {
        Some(ca) => Some(
            std::str::from_utf8(ca)
                .map_err(|_| WebhookError::Certificate(format!("{CA_FILE} is not PEM text")))?
                .to_owned(),
        ),
        None => None,
    };
    served.set(key);
    served.set_ca(ca.as_deref());
    Ok(())
}
