//! An HTTPS client of a webhook server, as the API server is one: it trusts only
//! the CA it is given and checks the certificate against the Service's DNS name.
//! Each request opens its own connection, with a full handshake, so a renewed
//! certificate is seen at once.

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

/// What a POST got: the status, the body, and the certificate the server showed.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
    pub certificate: Vec<u8>,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// A client of the webhook server at `addr`, reached as `dns_name`.
#[derive(Clone)]
pub struct WebhookClient {
    addr: SocketAddr,
    dns_name: ServerName<'static>,
    tls: TlsConnector,
}

impl WebhookClient {
    /// Trusts the certificates of `ca_pem` only.
    pub fn new(addr: SocketAddr, dns_name: &str, ca_pem: &str) -> Self {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots
                .add(cert.expect("a PEM certificate"))
                .expect("a CA certificate");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        // Every connection a full handshake, so it is shown the certificate served
        // now (a resumed TLS connection skips the certificate).
        config.resumption = Resumption::disabled();
        WebhookClient {
            addr,
            dns_name: ServerName::try_from(dns_name.to_owned()).expect("a DNS name"),
            tls: TlsConnector::from(Arc::new(config)),
        }
    }

    /// A new TLS connection, handshake done.
    pub async fn connect(
        &self,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        let tcp = tokio::net::TcpStream::connect(self.addr).await?;
        self.tls.connect(self.dns_name.clone(), tcp).await
    }

    /// POSTs `body` (JSON) to `path` on a new connection.
    pub async fn post(
        &self,
        path: &str,
        body: &[u8],
    ) -> Result<Reply, Box<dyn std::error::Error + Send + Sync>> {
        let tls = self.connect().await?;
        let certificate = tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.to_vec())
            .unwrap_or_default();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        let driver = tokio::spawn(conn);
        let request = hyper::Request::post(path)
            .header("host", "webhook")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::copy_from_slice(body)))?;
        let response = sender.send_request(request).await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes().to_vec();
        drop(sender);
        let _ = driver.await;
        Ok(Reply {
            status,
            body,
            certificate,
        })
    }

    /// POSTs `review` as JSON.
    pub async fn review(&self, path: &str, review: &serde_json::Value) -> Reply {
        let body = serde_json::to_vec(review).expect("JSON");
        self.post(path, &body)
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }
}
