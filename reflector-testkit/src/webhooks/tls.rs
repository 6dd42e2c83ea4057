//! The TLS side of a webhook call: a rustls client (the `ring` provider, as kube's) that
//! trusts exactly the PEM certificates of the configuration's `caBundle`, and the real
//! server's wording for a certificate it refuses.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{CertificateError, RootCertStore};

/// A client configuration trusting the certificates of `ca_bundle` (PEM). Without a
/// bundle no certificate is trusted (this server has no system roots to fall back on),
/// so every call fails verification. Errors: the bundle holds no certificate, or one that
/// does not parse (the real server's wording).
pub(crate) fn client_config(ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    if !ca_bundle.is_empty() {
        let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(ca_bundle)
            .collect::<Result<_, _>>()
            .map_err(|_| "unable to load root certificates: unable to parse bytes as PEM block")?;
        if certificates.is_empty() {
            return Err(
                "unable to load root certificates: unable to parse bytes as PEM block".to_owned(),
            );
        }
        for certificate in certificates {
            roots
                .add(certificate)
                .map_err(|e| format!("unable to load root certificates: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A handshake failure as Go's `crypto/tls` words it (`tls: failed to verify certificate:
/// x509: certificate signed by unknown authority`, ...).
pub(crate) fn describe(error: &std::io::Error) -> String {
    let Some(tls) = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return error.to_string();
    };
    let x509 = match tls {
        rustls::Error::InvalidCertificate(certificate) => match certificate {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                "x509: certificate signed by unknown authority".to_owned()
            }
            CertificateError::NotValidForNameContext {
                expected,
                presented,
            } => format!(
                "x509: certificate is valid for {}, not {}",
                presented.join(", "),
                server_name(expected)
            ),
            CertificateError::NotValidForName => {
                "x509: certificate is not valid for the requested name".to_owned()
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => {
                "x509: certificate has expired or is not yet valid".to_owned()
            }
            other => format!("x509: {other:?}"),
        },
        other => return format!("remote error: tls: {other}"),
    };
    format!("tls: failed to verify certificate: {x509}")
}

fn server_name(name: &rustls::pki_types::ServerName<'_>) -> String {
    match name {
        rustls::pki_types::ServerName::DnsName(dns) => dns.as_ref().to_owned(),
        rustls::pki_types::ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        other => format!("{other:?}"),
    }
}
