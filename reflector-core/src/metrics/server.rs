//! [`MetricsServer`]: a tiny HTTP endpoint serving `GET /metrics`, `/healthz` and
//! `/readyz` (feature `metrics-server`).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use super::{Health, METRICS_CONTENT_TYPE, MetricsError, render_metrics};

/// Serves a registry's metrics on `GET /metrics`, in the text exposition format,
/// liveness on `GET /healthz` and readiness ([`Health`]) on `GET /readyz`.
///
/// The caller chooses the address (bind loopback unless the endpoint must be
/// scraped from elsewhere) and owns the server through the [`CancellationToken`]
/// passed to [`run`](Self::run).
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use prometheus_client::registry::Registry;
/// use reflector::metrics::{Metrics, MetricsServer};
/// use tokio_util::sync::CancellationToken;
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let mut registry = Registry::default();
/// let _metrics = Metrics::registered(&mut registry);
/// let server = MetricsServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(registry)).await.unwrap();
/// let addr = server.local_addr().unwrap();
/// let cancel = CancellationToken::new();
/// let task = tokio::spawn(server.run(cancel.clone()));
/// // ... scrape http://{addr}/metrics ...
/// cancel.cancel();
/// task.await.unwrap().unwrap();
/// # let _ = addr; }
/// ```
#[derive(Debug)]
pub struct MetricsServer {
    listener: tokio::net::TcpListener,
    registry: Arc<Registry>,
    health: Health,
}

/// What the routes read.
#[derive(Clone)]
struct Served {
    registry: Arc<Registry>,
    health: Health,
}

async fn metrics_handler(State(served): State<Served>) -> impl IntoResponse {
    (
        [(CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        render_metrics(&served.registry),
    )
}

/// `GET /healthz`: the process serves HTTP, so it is alive.
async fn healthz_handler() -> impl IntoResponse {
    ([(CONTENT_TYPE, "text/plain; charset=utf-8")], "ok")
}

/// `GET /readyz`: 200 once every readiness check passes, else 503; the body lists
/// the checks.
async fn readyz_handler(State(served): State<Served>) -> impl IntoResponse {
    let (ready, body) = served.health.readiness();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, [(CONTENT_TYPE, "text/plain; charset=utf-8")], body)
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port; see [`local_addr`](Self::local_addr)).
    ///
    /// # Errors
    /// [`MetricsError::Bind`] if the address cannot be bound.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future releases the address.
    pub async fn bind(addr: SocketAddr, registry: Arc<Registry>) -> Result<Self, MetricsError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| MetricsError::Bind { addr, source })?;
        Ok(MetricsServer {
            listener,
            registry,
            health: Health::new(),
        })
    }

    /// Serves on `listener`, bound already (a manager binds its address when told
    /// it, so the address is known, and taken, before it runs).
    ///
    /// # Errors
    /// [`MetricsError::Serve`] if the listener cannot be made non-blocking or
    /// handed to tokio (outside a runtime).
    pub(crate) fn from_listener(
        listener: std::net::TcpListener,
        registry: Arc<Registry>,
        health: Health,
    ) -> Result<Self, MetricsError> {
        listener
            .set_nonblocking(true)
            .map_err(MetricsError::Serve)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(MetricsError::Serve)?;
        Ok(MetricsServer {
            listener,
            registry,
            health,
        })
    }

    /// The readiness checks `GET /readyz` answers from (default: none, so ready).
    /// `GET /healthz` is always served.
    #[must_use]
    pub fn health(mut self, health: Health) -> Self {
        self.health = health;
        self
    }

    /// The bound address.
    ///
    /// # Errors
    /// [`MetricsError::Serve`] if the socket cannot tell its address.
    pub fn local_addr(&self) -> Result<SocketAddr, MetricsError> {
        self.listener.local_addr().map_err(MetricsError::Serve)
    }

    /// Serves until `cancel` fires, then stops accepting, lets open requests finish
    /// and returns.
    ///
    /// # Errors
    /// [`MetricsError::Serve`] if serving fails.
    ///
    /// # Cancel safety
    /// Cancelling the token is the clean stop; dropping the future closes the
    /// listener and every connection at once.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), MetricsError> {
        let app = Router::new()
            .route("/metrics", get(metrics_handler))
            .route("/healthz", get(healthz_handler))
            .route("/readyz", get(readyz_handler))
            .with_state(Served {
                registry: self.registry,
                health: self.health,
            });
        axum::serve(self.listener, app)
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await
            .map_err(MetricsError::Serve)
    }
}
