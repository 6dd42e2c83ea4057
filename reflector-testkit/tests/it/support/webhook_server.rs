//! A webhook server for the webhook suites: axum over rustls on 127.0.0.1, its
//! certificate issued by a throwaway CA made with rcgen (the CA's PEM is the
//! configurations' `caBundle`), answering every `POST` with what a test's handler makes
//! of the review it received, and keeping every review it received.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use base64::Engine;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A test's answer to one review: `(path, review) -> response body`.
pub type Handler = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

/// The CA and the server certificate it issued.
pub struct Certificates {
    /// The CA certificate, PEM (what `caBundle` holds, base64-encoded).
    pub ca_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: Vec<u8>,
}

/// A CA, and a server certificate it issued for `names` (DNS names or IP addresses).
pub fn certificates(names: &[&str]) -> Certificates {
    let ca_key = KeyPair::generate().expect("a CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "testkit webhook CA");
    let ca_cert = ca.self_signed(&ca_key).expect("the CA certificate");
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("a server key");
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let params = CertificateParams::new(names).expect("server parameters");
    let cert = params
        .signed_by(&key, &issuer)
        .expect("the server certificate");
    Certificates {
        ca_pem: ca_cert.pem(),
        chain: vec![cert.der().clone()],
        key: key.serialize_der(),
    }
}

/// A running webhook server. Dropping it stops it.
pub struct WebhookServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its CA's PEM.
    pub ca_pem: String,
    reviews: Arc<Mutex<Vec<(String, Value)>>>,
    token: CancellationToken,
    task: JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.token.cancel();
        self.task.abort();
    }
}

impl WebhookServer {
    /// Serves `handler` with a certificate for `127.0.0.1`, `localhost` and the service
    /// name `hooks.webhooks.svc`.
    pub async fn start(handler: impl Fn(&str, &Value) -> Value + Send + Sync + 'static) -> Self {
        let certs = certificates(&["127.0.0.1", "localhost", "hooks.webhooks.svc"]);
        Self::start_with(certs, Duration::ZERO, Arc::new(handler)).await
    }

    /// Serves `handler` with `certs`, answering each review `delay` late.
    pub async fn start_with(certs: Certificates, delay: Duration, handler: Handler) -> Self {
        rustls::crypto::ring::default_provider()
            .install_default()
            .ok();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certs.key.clone()));
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs.chain.clone(), key)
            .expect("a server TLS configuration");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("an address");
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let recorded = reviews.clone();
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri, body: Bytes| {
            let handler = handler.clone();
            let recorded = recorded.clone();
            async move {
                let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                recorded
                    .lock()
                    .unwrap()
                    .push((uri.path().to_owned(), review.clone()));
                tokio::time::sleep(delay).await;
                axum::Json(handler(uri.path(), &review))
            }
        });
        let token = CancellationToken::new();
        let stop = token.clone();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let (tcp, _) = tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(_) => continue,
                    },
                    () = stop.cancelled() => break,
                };
                let acceptor = acceptor.clone();
                let service = hyper_util::service::TowerToHyperService::new(app.clone());
                connections.spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            ca_pem: certs.ca_pem,
            reviews,
            token,
            task,
        }
    }

    /// The `caBundle` of its CA (base64 of the PEM).
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// `https://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// Every review received so far, with its path.
    pub fn reviews(&self) -> Vec<(String, Value)> {
        self.reviews.lock().unwrap().clone()
    }

    /// The `request`s of the reviews received on `path`.
    pub fn requests_on(&self, path: &str) -> Vec<Value> {
        self.reviews()
            .into_iter()
            .filter(|(p, _)| p == path)
            .map(|(_, review)| review["request"].clone())
            .collect()
    }
}

/// The `AdmissionReview` answering `review`: allowed, or denied with `status`, with an
/// optional JSONPatch (base64, as Go sends `[]byte`) and warnings.
pub fn admission_answer(
    review: &Value,
    denied: Option<Value>,
    patch: Option<Value>,
    warnings: &[&str],
) -> Value {
    let mut response = json!({
        "uid": review["request"]["uid"],
        "allowed": denied.is_none(),
    });
    if let Some(status) = denied {
        response["status"] = status;
    }
    if let Some(patch) = patch {
        let bytes = serde_json::to_vec(&patch).unwrap();
        response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
        response["patchType"] = json!("JSONPatch");
    }
    if !warnings.is_empty() {
        response["warnings"] = json!(warnings);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}
