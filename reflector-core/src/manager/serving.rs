//! The manager's `/metrics`, `/healthz` and `/readyz` server (feature
//! `metrics-server`): bound when configured, served from the start of `run` until
//! everything else has stopped.

use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::registry::Registry;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::metrics::{Health, MetricsError, MetricsServer};

use super::{Manager, ManagerError};

impl Manager {
    /// Serves `GET /metrics` (the manager's registry), `/healthz` and `/readyz`
    /// (its [`health`](Self::health)) on `addr` while it runs, on every replica:
    /// bound now (port 0 picks a free port: see
    /// [`metrics_addr`](Self::metrics_addr)), served from the start of `run` until
    /// everything else has stopped. In a pod, `0.0.0.0:8080`. Default: no server.
    ///
    /// # Errors
    /// [`ManagerError::Metrics`] if `addr` cannot be bound.
    pub fn metrics_server(mut self, addr: SocketAddr) -> Result<Self, ManagerError> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|source| ManagerError::Metrics(MetricsError::Bind { addr, source }))?;
        self.listener = Some(listener);
        Ok(self)
    }

    /// The address the server is bound to, if [`metrics_server`](Self::metrics_server)
    /// bound one.
    #[must_use]
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().and_then(|l| l.local_addr().ok())
    }
}

/// The server while it runs; dropping it stops it at once.
pub(super) struct Serving {
    stop: CancellationToken,
    task: JoinSet<Result<(), MetricsError>>,
}

impl Serving {
    /// Starts serving on `listener`, if there is one.
    ///
    /// # Errors
    /// [`ManagerError::Metrics`] if the listener cannot be handed to tokio.
    pub(super) fn start(
        listener: Option<std::net::TcpListener>,
        registry: Registry,
        health: Health,
    ) -> Result<Self, ManagerError> {
        let stop = CancellationToken::new();
        let mut task = JoinSet::new();
        if let Some(listener) = listener {
            let server = MetricsServer::from_listener(listener, Arc::new(registry), health)
                .map_err(ManagerError::Metrics)?;
            if let Ok(addr) = server.local_addr() {
                tracing::info!(%addr, "serving /metrics, /healthz and /readyz");
            }
            task.spawn(server.run(stop.clone()));
        }
        Ok(Serving { stop, task })
    }

    /// Stops serving (open requests finish) and waits for the server.
    ///
    /// # Errors
    /// [`ManagerError::Metrics`] if serving failed.
    pub(super) async fn stop(mut self) -> Result<(), ManagerError> {
        self.stop.cancel();
        let mut result = Ok(());
        while let Some(joined) = self.task.join_next().await {
            match joined {
                Ok(Err(e)) => result = Err(ManagerError::Metrics(e)),
                Err(e) => tracing::error!(error = %e, "the metrics server's task failed"),
                Ok(Ok(())) => {}
            }
        }
        result
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
