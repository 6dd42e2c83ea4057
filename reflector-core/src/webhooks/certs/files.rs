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

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &std::path::Path, name: &str) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.join(KEY_FILE), key.serialize_pem()).unwrap();
        std::fs::write(dir.join(CERT_FILE), cert.pem()).unwrap();
    }

    fn leaf(served: &Served) -> Vec<u8> {
        served.current().expect("a certificate").cert[0].to_vec()
    }

    #[tokio::test(start_paused = true)]
    async fn changed_files_are_served_at_the_next_poll_and_bad_ones_are_not() {
        let dir = std::env::temp_dir().join(format!("reflector-certs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, "one.example");
        let certs = CertDir {
            dir: dir.clone(),
            poll: Duration::from_secs(10),
        };
        let served = Arc::new(Served::new());
        let last = certs.load(&served).await.unwrap();
        let first = leaf(&served);
        assert!(served.ca().borrow().is_none(), "no ca.crt, no CA");
        let stop = CancellationToken::new();
        let task = tokio::spawn(certs.watch(served.clone(), last, stop.clone()));

        write(&dir, "two.example");
        std::fs::write(dir.join(CA_FILE), "CA PEM").unwrap();
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert_eq!(leaf(&served), first, "read before the poll");
        tokio::time::sleep(Duration::from_secs(2)).await;
        let second = leaf(&served);
        assert_ne!(second, first, "the changed files were not served");
        assert_eq!(served.ca().borrow().as_deref(), Some("CA PEM"));

        // A key that does not match: the last good certificate stays.
        std::fs::write(
            dir.join(KEY_FILE),
            rcgen::KeyPair::generate().unwrap().serialize_pem(),
        )
        .unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(leaf(&served), second);

        stop.cancel();
        task.await.unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn missing_files_are_an_error() {
        let certs = CertDir {
            dir: "/nonexistent/reflector-certs".into(),
            poll: Duration::from_secs(10),
        };
        let err = certs.load(&Served::new()).await.unwrap_err();
        assert!(matches!(err, WebhookError::Read { .. }), "{err:?}");
    }
}
