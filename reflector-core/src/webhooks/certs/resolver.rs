//! The serving certificate the TLS handshakes use, swapped in place when it is
//! rotated or reloaded: a rustls `ResolvesServerCert` over the current
//! `Arc<CertifiedKey>`.

use std::sync::{Arc, RwLock};

use rustls::crypto::ring::sign::any_supported_type;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::sync::watch;

use crate::webhooks::WebhookError;

/// The certificate served now, and the CA that signed it: shared by the TLS
/// handshakes, the task that rotates or reloads the certificate, and the caBundle
/// keeper.
#[derive(Debug)]
pub(crate) struct Served {
    /// The certificate each new handshake gets; a handshake holds its own `Arc`,
    /// so a swap never disturbs one in flight. Guarded by this lock, held only to
    /// clone or replace the `Arc`.
    current: RwLock<Option<Arc<CertifiedKey>>>,
    /// The CA's certificates (PEM), for a `caBundle`; `None` until known (or when
    /// mounted files carry no `ca.crt`).
    ca: watch::Sender<Option<Arc<str>>>,
}

impl Served {
    pub(crate) fn new() -> Self {
        Served {
            current: RwLock::new(None),
            ca: watch::Sender::new(None),
        }
    }

    /// Serves `key` from the next handshake on.
    pub(crate) fn set(&self, key: CertifiedKey) {
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        *current = Some(Arc::new(key));
    }

    /// The certificate served now.
    pub(crate) fn current(&self) -> Option<Arc<CertifiedKey>> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Publishes the CA's PEM, if it changed.
    pub(crate) fn set_ca(&self, pem: Option<&str>) {
        self.ca.send_if_modified(|ca| {
            if ca.as_deref() == pem {
                return false;
            }
            *ca = pem.map(Arc::from);
            true
        });
    }

    /// The CA's PEM, now and as it changes.
    pub(crate) fn ca(&self) -> watch::Receiver<Option<Arc<str>>> {
        self.ca.subscribe()
    }
}

/// Resolves every handshake to the current certificate.
#[derive(Debug)]
pub(crate) struct Resolver(pub(crate) Arc<Served>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.current()
    }
}

/// A certificate chain (PEM, leaf first) and its private key (PEM: PKCS#8, PKCS#1
/// or SEC1) as rustls serves them.
///
/// # Errors
/// [`WebhookError::Certificate`] if the PEM holds no certificate, no key, a key of
/// an unsupported type, or a key that does not match the certificate.
pub(crate) fn certified_key(
    chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<CertifiedKey, WebhookError> {
    let bad = |what: String| WebhookError::Certificate(what);
    let chain = CertificateDer::pem_slice_iter(chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("the certificate PEM: {e}")))?;
    if chain.is_empty() {
        return Err(bad("the certificate PEM holds no certificate".into()));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| bad(format!("the key PEM: {e}")))?;
    let key = any_supported_type(&key).map_err(|e| bad(format!("the private key: {e}")))?;
    let certified = CertifiedKey::new(chain, key);
    certified
        .keys_match()
        .map_err(|e| bad(format!("the key does not match the certificate: {e}")))?;
    Ok(certified)
}
