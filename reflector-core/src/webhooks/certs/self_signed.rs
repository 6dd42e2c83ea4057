//! Self-signed certificates: a CA made once, when the server starts, and a serving
//! certificate for the Service's DNS names signed by it, renewed before it expires.
//! The CA outlives every serving certificate it signs, so the `caBundle` the API
//! server trusts stays valid across renewals.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::resolver::{Served, certified_key};
use crate::webhooks::WebhookError;

/// How long the CA is valid: ten years, far beyond any serving certificate, so that
/// only a restart (which makes a new CA) changes the `caBundle`.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// How far back a certificate's validity starts, for clocks that lag ours.
const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);
/// How long to wait before retrying a renewal that failed.
const RETRY: Duration = Duration::from_secs(10);

/// The DNS names a Service `name` in `namespace` answers to, as the API server
/// calls it (`name.namespace.svc`) and as other clients may.
pub(crate) fn service_dns_names(name: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}.svc.cluster.local"),
        format!("{name}.{namespace}"),
        name.to_owned(),
    ]
}

/// A CA and what it signs serving certificates for.
pub(crate) struct Issuer {
    ca: CertifiedIssuer<'static, KeyPair>,
    names: Vec<String>,
    validity: Duration,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer")
            .field("names", &self.names)
            .field("validity", &self.validity)
            .finish_non_exhaustive()
    }
}

impl Issuer {
    /// A new CA, named after the first of `names`, signing serving certificates for
    /// `names` valid for `validity`.
    ///
    /// # Errors
    /// [`WebhookError::Generate`] if a name is not a valid DNS name.
    pub(crate) fn new(names: Vec<String>, validity: Duration) -> Result<Self, WebhookError> {
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(WebhookError::Generate)?;
        let common_name = format!("{} CA", names.first().map_or("webhook", String::as_str));
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let now = SystemTime::now();
        params.not_before = (now - CLOCK_SKEW).into();
        params.not_after = (now + CA_VALIDITY).into();
        let key = KeyPair::generate().map_err(WebhookError::Generate)?;
        let ca = CertifiedIssuer::self_signed(params, key).map_err(WebhookError::Generate)?;
        Ok(Issuer {
            ca,
            names,
            validity,
        })
    }

    /// The CA's certificate, PEM.
    pub(crate) fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// A new serving certificate (new key), valid from now for the validity.
    ///
    /// # Errors
    /// [`WebhookError::Generate`] if it cannot be made.
    pub(crate) fn issue(&self) -> Result<rustls::sign::CertifiedKey, WebhookError> {
        let mut params =
            CertificateParams::new(self.names.clone()).map_err(WebhookError::Generate)?;
        if let Some(name) = self.names.first() {
            params
                .distinguished_name
                .push(DnType::CommonName, name.clone());
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let now = SystemTime::now();
        params.not_before = (now - CLOCK_SKEW).into();
        params.not_after = (now + self.validity).into();
        let key = KeyPair::generate().map_err(WebhookError::Generate)?;
        let cert = params
            .signed_by(&key, &*self.ca)
            .map_err(WebhookError::Generate)?;
        certified_key(cert.pem().as_bytes(), key.serialize_pem().as_bytes())
    }

    /// Serves a new certificate each time two thirds of the current one's validity
    /// have passed (cert-manager's default: renew with a third of the lifetime
    /// left), until `stop` fires. A failed renewal is retried every 10 s; the
    /// current certificate is served meanwhile.
    ///
    /// # Cancel safety
    /// Cancel-safe: a certificate is swapped in whole or not at all.
    pub(crate) async fn rotate(self: Arc<Self>, served: Arc<Served>, stop: CancellationToken) {
        let renew_after = self.validity.mul_f64(2.0 / 3.0);
        let mut due = Instant::now() + renew_after;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep_until(due) => {}
            }
            match self.issue() {
                Ok(key) => {
                    served.set(key);
                    tracing::info!(valid_for = ?self.validity, "serving a renewed webhook certificate");
                    due = Instant::now() + renew_after;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot renew the webhook certificate; retrying");
                    due = Instant::now() + RETRY;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(served: &Served) -> Vec<u8> {
        served.current().expect("a certificate").cert[0].to_vec()
    }

    #[tokio::test(start_paused = true)]
    async fn renews_at_two_thirds_of_the_validity_from_the_same_ca() {
        let validity = Duration::from_secs(3 * 3600);
        let issuer = Arc::new(Issuer::new(service_dns_names("hooks", "ns"), validity).unwrap());
        let ca = issuer.ca_pem();
        let served = Arc::new(Served::new());
        served.set(issuer.issue().unwrap());
        let first = leaf(&served);
        let stop = CancellationToken::new();
        let task = tokio::spawn(issuer.clone().rotate(served.clone(), stop.clone()));

        tokio::time::sleep(Duration::from_secs(2 * 3600 - 1)).await;
        assert_eq!(
            leaf(&served),
            first,
            "renewed before two thirds of its validity"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        let second = leaf(&served);
        assert_ne!(second, first, "not renewed at two thirds of its validity");
        tokio::time::sleep(Duration::from_secs(2 * 3600)).await;
        assert_ne!(leaf(&served), second, "renewed once only");
        assert_eq!(issuer.ca_pem(), ca, "the CA changed");

        stop.cancel();
        task.await.unwrap();
    }

    #[test]
    fn the_certificate_names_the_service() {
        let names = service_dns_names("hooks", "ns");
        assert_eq!(
            names,
            [
                "hooks.ns.svc",
                "hooks.ns.svc.cluster.local",
                "hooks.ns",
                "hooks"
            ]
        );
    }
}
