//! [`Certificates`]: where the webhook server's serving certificate comes from —
//! made by the server itself (self-signed), or mounted files — and how it is kept
//! current without a restart.

mod files;
mod resolver;
mod self_signed;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub(crate) use resolver::{Resolver, Served};
pub(crate) use self_signed::service_dns_names;

use files::{CertDir, Contents};
use self_signed::Issuer;

use super::WebhookError;

/// Default validity of a self-signed serving certificate: 90 days, cert-manager's
/// default `duration`.
const DEFAULT_VALIDITY: Duration = Duration::from_secs(90 * 24 * 3600);
/// The shortest validity accepted (shorter is raised to it).
const MIN_VALIDITY: Duration = Duration::from_secs(1);
/// Default poll interval of mounted files: 10 s, controller-runtime's certwatcher.
const DEFAULT_POLL: Duration = Duration::from_secs(10);
/// The shortest poll interval accepted (shorter is raised to it).
const MIN_POLL: Duration = Duration::from_secs(1);

/// Where a [`WebhookServer`](super::WebhookServer)'s serving certificate comes from.
///
/// - [`self_signed`](Self::self_signed) (the default): when the server starts it
///   makes a CA and a serving certificate for the Service's DNS names
///   (`NAME.NAMESPACE.svc`, `NAME.NAMESPACE.svc.cluster.local`, `NAME.NAMESPACE`,
///   `NAME`), and serves a new certificate from the same CA each time two thirds of
///   the current one's validity have passed, without a restart and without
///   disturbing a request in flight. The API server must trust the CA: let the
///   server's caBundle keeper write it
///   ([`WebhookServer::keep_ca_bundle`](super::WebhookServer::keep_ca_bundle)). Each
///   process makes its own CA, so with several replicas use mounted files.
/// - [`from_dir`](Self::from_dir): `tls.crt` and `tls.key` (and `ca.crt`, if
///   present) from a directory, a mounted `kubernetes.io/tls` Secret such as
///   cert-manager issues; read again when they change.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::webhooks::Certificates;
///
/// let made = Certificates::self_signed().validity(Duration::from_secs(30 * 24 * 3600));
/// let mounted = Certificates::from_dir("/tmp/k8s-webhook-server/serving-certs")
///     .poll_interval(Duration::from_secs(30));
/// # let _ = (made, mounted);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Certificates {
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    SelfSigned { validity: Duration },
    Dir(CertDir),
}

impl Default for Certificates {
    fn default() -> Self {
        Certificates::self_signed()
    }
}

impl Certificates {
    /// Self-signed: a CA made at start, and serving certificates valid for 90 days
    /// (cert-manager's default), renewed after 60.
    pub fn self_signed() -> Self {
        Certificates {
            source: Source::SelfSigned {
                validity: DEFAULT_VALIDITY,
            },
        }
    }

    /// From `dir`'s `tls.crt` (the chain, leaf first), `tls.key` and, if present,
    /// `ca.crt` (PEM), read at start and every 10 s after (controller-runtime's
    /// certwatcher interval); a change is served from the next handshake on. The
    /// default directory of controller-runtime is
    /// `/tmp/k8s-webhook-server/serving-certs`.
    pub fn from_dir(dir: impl Into<PathBuf>) -> Self {
        Certificates {
            source: Source::Dir(CertDir {
                dir: dir.into(),
                poll: DEFAULT_POLL,
            }),
        }
    }

    /// How long each self-signed serving certificate is valid (at least one
    /// second); it is renewed when two thirds of that have passed. Default 90 days.
    /// No effect on files.
    pub fn validity(mut self, validity: Duration) -> Self {
        if let Source::SelfSigned { validity: v } = &mut self.source {
            *v = validity.max(MIN_VALIDITY);
        }
        self
    }

    /// How often the files are read to see whether they changed (at least 1 s).
    /// Default 10 s. No effect on self-signed certificates.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        if let Source::Dir(dir) = &mut self.source {
            dir.poll = interval.max(MIN_POLL);
        }
        self
    }

    /// The directory the files are read from, if they are.
    pub(crate) fn dir(&self) -> Option<&std::path::Path> {
        match &self.source {
            Source::Dir(dir) => Some(&dir.dir),
            Source::SelfSigned { .. } => None,
        }
    }

    /// Makes or reads the first certificate and serves it (self-signed: for
    /// `names`); then the task that keeps it current.
    ///
    /// # Errors
    /// [`WebhookError::Generate`] for names that are not DNS names;
    /// [`WebhookError::Read`] or [`WebhookError::Certificate`] for missing or
    /// unusable files.
    pub(crate) async fn start(
        &self,
        names: Vec<String>,
        served: &Served,
    ) -> Result<Keeper, WebhookError> {
        match &self.source {
            Source::SelfSigned { validity } => {
                let issuer = Issuer::new(names, *validity)?;
                served.set(issuer.issue()?);
                served.set_ca(Some(&issuer.ca_pem()));
                Ok(Keeper::Rotate(Arc::new(issuer)))
            }
            Source::Dir(dir) => {
                let contents = dir.load(served).await?;
                Ok(Keeper::Watch(dir.clone(), contents))
            }
        }
    }
}

/// What keeps the served certificate current.
#[derive(Debug)]
pub(crate) enum Keeper {
    Rotate(Arc<Issuer>),
    Watch(CertDir, Contents),
}

impl Keeper {
    /// Keeps `served` current until `stop` fires.
    ///
    /// # Cancel safety
    /// Cancel-safe: a certificate is swapped in whole or not at all.
    pub(crate) async fn run(self, served: Arc<Served>, stop: CancellationToken) {
        match self {
            Keeper::Rotate(issuer) => issuer.rotate(served, stop).await,
            Keeper::Watch(dir, last) => dir.watch(served, last, stop).await,
        }
    }
}
