//! [`WebhookServer::run`]: the certificates made or read, then HTTPS served until
//! the stop token fires; then no new connection is accepted and the requests in
//! flight are answered.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::certs::{Resolver, Served, service_dns_names};
use super::hook::{Answer, Handler, conversion_path};
use super::{WebhookError, WebhookServer, ca_bundle};

/// How long a connection may take to complete its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long requests in flight are awaited once the server stops: 30 s, the
/// longest `timeoutSeconds` the API server allows a webhook.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest review accepted: an admission review carries an object and its old
/// version (each up to etcd's 1.5 MiB), a conversion review a list's page.
const BODY_LIMIT: usize = 32 * 1024 * 1024;

impl WebhookServer {
    /// Makes or reads the certificate, then serves HTTPS until `stop` fires; then
    /// stops accepting connections, answers the requests in flight (for at most
    /// 30 s, the longest webhook timeout the API server allows) and returns. While
    /// it serves, the certificate is kept current and, with
    /// [`keep_ca_bundle`](Self::keep_ca_bundle), the caBundles too.
    ///
    /// # Errors
    /// - [`WebhookError::Generate`], [`WebhookError::Read`] or
    ///   [`WebhookError::Certificate`] if the first certificate cannot be made or read;
    /// - [`WebhookError::Bind`] if the default address cannot be bound;
    /// - [`WebhookError::Serve`] or [`WebhookError::Tls`] if serving cannot start.
    ///
    /// # Cancel safety
    /// Cancelling `stop` is the clean stop; dropping the future closes every
    /// connection at once.
    pub async fn run(self, stop: CancellationToken) -> Result<(), WebhookError> {
        let namespace = self.namespace_or("default").to_owned();
        let names = service_dns_names(&self.service, &namespace);
        let keeper = self.certificates.start(names, &self.served).await?;
        let listener = listen(self.listener)?;
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, service = %self.service, "serving webhooks");
        }
        let tls = TlsAcceptor::from(Arc::new(tls_config(&self.served)?));
        let router = router(&self.hooks, &self.conversions);

        let background = CancellationToken::new();
        let mut tasks = JoinSet::new();
        tasks.spawn(keeper.run(self.served.clone(), background.clone()));
        if let Some(client) = self.keeper {
            let targets = ca_bundle::Targets::of(&self.service, &self.hooks, &self.conversions);
            tasks.spawn(ca_bundle::keep(
                client,
                targets,
                self.served.ca(),
                background.clone(),
            ));
        }
        let served = accept(listener, tls, router, &stop).await;
        background.cancel();
        while tasks.join_next().await.is_some() {}
        tracing::info!(service = %self.service, "webhooks stopped");
        served
    }
}

/// The listener: the one bound, or `0.0.0.0:9443`.
fn listen(bound: Option<std::net::TcpListener>) -> Result<TcpListener, WebhookError> {
    let listener = match bound {
        Some(listener) => listener,
        None => {
            let addr = SocketAddr::from(([0, 0, 0, 0], super::server::DEFAULT_PORT));
            std::net::TcpListener::bind(addr)
                .map_err(|source| WebhookError::Bind { addr, source })?
        }
    };
    listener
        .set_nonblocking(true)
        .map_err(WebhookError::Serve)?;
    TcpListener::from_std(listener).map_err(WebhookError::Serve)
}

/// TLS 1.2 and 1.3 (ring), HTTP/1.1, the certificate `served` holds now.
fn tls_config(served: &Arc<Served>) -> Result<ServerConfig, WebhookError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(WebhookError::Tls)?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(Resolver(served.clone())));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Every hook on its path, answering `POST`s.
fn router(
    hooks: &[super::hook::AdmissionHook],
    conversions: &[super::conversion::ConversionRoute],
) -> Router {
    let mut router = Router::new();
    let routes = hooks.iter().map(|h| (h.path(), h.handler.clone())).chain(
        conversions
            .iter()
            .map(|c| (conversion_path(&c.hub), c.handler.clone())),
    );
    for (path, handler) in routes {
        router = router.route(&path, post(move |body: Bytes| answer(handler, body)));
    }
    router.layer(DefaultBodyLimit::max(BODY_LIMIT))
}

/// Answers `body` with `handler` on tokio's blocking pool: a hook is the user's
/// synchronous code, and may take its time without holding up other connections.
async fn answer(handler: Handler, body: Bytes) -> Response {
    let text = |status, message: String| {
        (
            status,
            [(CONTENT_TYPE, "text/plain; charset=utf-8")],
            message,
        )
            .into_response()
    };
    match tokio::task::spawn_blocking(move || handler(&body)).await {
        Ok(Answer::Review(review)) => axum::Json(review).into_response(),
        Ok(Answer::BadRequest(message)) => text(StatusCode::BAD_REQUEST, message),
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the webhook failed: {e}"),
        ),
    }
}

/// Accepts connections until `stop` fires, then drains them.
async fn accept(
    listener: TcpListener,
    tls: TlsAcceptor,
    router: Router,
    stop: &CancellationToken,
) -> Result<(), WebhookError> {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    connections.spawn(connection(tcp, tls.clone(), router.clone(), stop.clone()));
                }
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was
                    // accepted: the listener itself is fine.
                    tracing::warn!(error = %e, "cannot accept a webhook connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            ?DRAIN_TIMEOUT,
            "webhook requests still in flight at the deadline; closing them"
        );
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
    Ok(())
}

/// One connection: the TLS handshake, then HTTP/1.1 until the client closes it or
/// `stop` fires (then the request in flight is answered and the connection closed).
async fn connection(tcp: TcpStream, tls: TlsAcceptor, router: Router, stop: CancellationToken) {
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "webhook TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!("webhook TLS handshake timed out");
            return;
        }
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new());
    let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router));
    let mut conn = std::pin::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        () = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(error = %e, "webhook connection ended with an error");
    }
}
