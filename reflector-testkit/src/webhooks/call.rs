//! One webhook call: where a `clientConfig` points (`url`, or a `service` mapped to a local
//! address with [`ApiServerBuilder::webhook_service`]), and a JSON `POST` over HTTPS/1.1
//! verified against its `caBundle`, with a deadline, failing with the real client's words
//! (`Post "https://...?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused`).
//!
//! [`ApiServerBuilder::webhook_service`]: crate::ApiServerBuilder::webhook_service

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::status::go_quote;

/// Local addresses of the services webhooks name, by `(namespace, name)`.
pub(crate) type Services = BTreeMap<(String, String), SocketAddr>;

/// A webhook's `clientConfig` (admission webhooks' and CRD conversion's share the shape).
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientConfig {
    /// `url`.
    url: Option<String>,
    /// `service`: namespace, name, path, port (default 443).
    service: Option<(String, String, String, u16)>,
    /// `caBundle`, base64-decoded (PEM).
    pub ca_bundle: Vec<u8>,
}

impl ClientConfig {
    pub(crate) fn from_value(value: &Value) -> Self {
        let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(str::to_owned);
        let service = value.get("service").map(|s| {
            let port = s.get("port").and_then(Value::as_u64).unwrap_or(443);
            (
                text(s, "namespace").unwrap_or_default(),
                text(s, "name").unwrap_or_default(),
                text(s, "path").unwrap_or_default(),
                u16::try_from(port).unwrap_or(443),
            )
        });
        let ca_bundle = text(value, "caBundle")
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        Self {
            url: text(value, "url"),
            service,
            ca_bundle,
        }
    }
}

/// Where one call goes.
struct Endpoint {
    /// The URL as the real client prints it (with its `?timeout=` parameter).
    url: String,
    /// `host:port` to connect to.
    connect: String,
    /// The name the certificate must be valid for.
    server_name: ServerName<'static>,
    /// `Host` header.
    authority: String,
    /// Request path and query.
    path_and_query: String,
}

/// Why a call failed: the text after `failed to call webhook: ` in the real message.
pub(crate) type CallError = String;

/// `POST`s `body` to the webhook `config` names and returns the answer's body; a
/// timeout, a refused connection, a certificate `caBundle` does not verify, or an answer
/// other than 2xx are call failures, worded as the real server's client words them.
/// `timeout` is sent as the `timeout` query parameter, as the real server does.
///
/// # Cancel safety
/// Cancel safe: dropping it drops the connection.
pub(crate) async fn post(
    config: &ClientConfig,
    services: &Services,
    timeout: Duration,
    body: Vec<u8>,
    cancel: &CancellationToken,
) -> Result<Bytes, CallError> {
    let endpoint = endpoint(config, timeout)?;
    let target = |reason: String| format!("Post {}: {reason}", go_quote(&endpoint.url));
    let connect = match &config.service {
        Some((namespace, name, _, _)) => {
            let addr = services
                .get(&(namespace.clone(), name.clone()))
                .ok_or_else(|| target(format!("service {} not found", go_quote(name))))?;
            addr.to_string()
        }
        None => endpoint.connect.clone(),
    };
    let tls = super::tls::client_config(&config.ca_bundle)
        .map_err(|e| format!("could not get REST client: {e}"))?;
    let exchange = exchange(&endpoint, &connect, tls, body);
    tokio::select! {
        result = tokio::time::timeout(timeout, exchange) => match result {
            Ok(answer) => answer.map_err(|e| match e {
                Failure::Transport(reason) => target(reason),
                Failure::Status(message) => message,
            }),
            Err(_) => Err(target("context deadline exceeded".to_owned())),
        },
        () = cancel.cancelled() => Err(target("context canceled".to_owned())),
    }
}

/// How an exchange failed: before an answer (worded after `Post "url": `), or with an
/// answer that is not a success (worded as the real client's status error).
enum Failure {
    Transport(String),
    Status(String),
}

fn endpoint(config: &ClientConfig, timeout: Duration) -> Result<Endpoint, CallError> {
    let query = format!("timeout={}s", timeout.as_secs());
    if let Some((namespace, name, path, port)) = &config.service {
        let host = format!("{name}.{namespace}.svc");
        let path = if path.is_empty() { "/" } else { path.as_str() };
        let server_name = ServerName::try_from(host.clone())
            .map_err(|e| format!("could not get REST client: {e}"))?;
        return Ok(Endpoint {
            url: format!("https://{host}:{port}{path}?{query}"),
            connect: format!("{host}:{port}"),
            server_name,
            authority: format!("{host}:{port}"),
            path_and_query: format!("{path}?{query}"),
        });
    }
    let url = config.url.clone().unwrap_or_default();
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("could not get REST client: parse {url:?}: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!(
            "could not get REST client: webhook URL {url:?} must use the https scheme"
        ));
    }
    let host = uri.host().unwrap_or_default();
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(443);
    let server_name = ServerName::try_from(host.clone())
        .map_err(|e| format!("could not get REST client: {e}"))?;
    let path = uri.path();
    let path_and_query = match uri.query() {
        Some(q) => format!("{path}?{q}&{query}"),
        None => format!("{path}?{query}"),
    };
    let authority = uri
        .authority()
        .map_or_else(|| host.clone(), ToString::to_string);
    let connect = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    Ok(Endpoint {
        url: format!("https://{authority}{path_and_query}"),
        connect,
        server_name,
        authority,
        path_and_query,
    })
}

/// Connects, shakes hands and exchanges one request over HTTP/1.1.
///
/// # Cancel safety
/// Cancel safe: dropping it drops the connection.
async fn exchange(
    endpoint: &Endpoint,
    connect: &str,
    tls: std::sync::Arc<rustls::ClientConfig>,
    body: Vec<u8>,
) -> Result<Bytes, Failure> {
    let tcp = tokio::net::TcpStream::connect(connect)
        .await
        .map_err(|e| Failure::Transport(dial_error(connect, &e)))?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(endpoint.server_name.clone(), tcp)
        .await
        .map_err(|e| Failure::Transport(super::tls::describe(&e)))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| Failure::Transport(e.to_string()))?;
    let request = http::Request::post(endpoint.path_and_query.as_str())
        .header(http::header::HOST, endpoint.authority.as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| Failure::Transport(e.to_string()))?;
    let answer = async move {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| Failure::Transport(e.to_string()))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| Failure::Transport(e.to_string()))?
            .to_bytes();
        if status.is_success() {
            Ok(bytes)
        } else {
            Err(Failure::Status(status_error(status.as_u16(), &bytes)))
        }
    };
    tokio::select! {
        biased;
        result = answer => result,
        closed = connection => Err(Failure::Transport(match closed {
            Ok(()) => "EOF".to_owned(),
            Err(e) => e.to_string(),
        })),
    }
}

/// A failed connect as Go's dialer words it.
fn dial_error(addr: &str, error: &std::io::Error) -> String {
    let what = match error.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_owned(),
        _ => error.to_string(),
    };
    format!("dial tcp {addr}: {what}")
}

/// A non-2xx answer as the real REST client reports it: the `message` of a `Status`
/// body, else the generic text for the code.
fn status_error(code: u16, body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<Value>(body)
        && status.get("kind").and_then(Value::as_str) == Some("Status")
        && let Some(message) = status.get("message").and_then(Value::as_str)
    {
        return message.to_owned();
    }
    match code {
        404 => "the server could not find the requested resource".to_owned(),
        500..=599 => {
            let text = String::from_utf8_lossy(body);
            format!(
                "an error on the server ({:?}) has prevented the request from succeeding",
                text.trim()
            )
        }
        _ => format!(
            "the server responded with the status code {code} but did not return more information"
        ),
    }
}
