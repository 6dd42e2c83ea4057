//! Starting a server: its settings, fixed at start, and the builder that binds the
//! listener and spawns the serve loop.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::serve::ListenerExt;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::error::TestkitError;
use crate::fault::FaultTable;
use crate::server::{ApiServer, Shared};
use crate::state::State;

/// Server settings fixed at start.
#[derive(Debug, Clone)]
pub(crate) struct ServerConfig {
    pub bookmark_interval: Duration,
    pub paginate_rv0: bool,
    pub too_large_rv_wait: Duration,
    pub history_len: usize,
    pub port: u16,
    pub admin: bool,
    pub crd_storage_initialization: Duration,
    /// Local addresses of the services webhooks name (`clientConfig.service`).
    pub webhook_services: crate::webhooks::call::Services,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bookmark_interval: Duration::from_secs(60),
            paginate_rv0: false,
            too_large_rv_wait: Duration::from_secs(3),
            history_len: 10_000,
            port: 0,
            admin: false,
            crd_storage_initialization: Duration::ZERO,
            webhook_services: crate::webhooks::call::Services::new(),
        }
    }
}

/// Builder for [`ApiServer`]; see each setter for its default.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct ApiServerBuilder {
    config: ServerConfig,
}

impl ApiServerBuilder {
    /// The bookmark frequency of watches with `allowWatchBookmarks=true`: each gets a
    /// `BOOKMARK` this long after it started (or after its last one), but no later than 2 s
    /// before its `timeoutSeconds`, where it usually gets two, one tick apart; bookmarks go
    /// out on ticks of a second (of this interval, when shorter) counted from the server's
    /// start, and only once writes have moved the resourceVersion past the watch's start.
    /// Default 1 minute, the real watch cache's: a watch of less than a minute gets its
    /// bookmarks only shortly before it times out. A shorter interval is for tests of a
    /// client's bookmark handling.
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.config.bookmark_interval = interval;
        self
    }

    /// How many writes the event log keeps (like etcd's history before compaction).
    /// Watches and `Exact`/continue lists older than the log answer 410. Default 10,000.
    pub fn history_len(mut self, len: usize) -> Self {
        self.config.history_len = len;
        self
    }

    /// Whether a list with `resourceVersion=0` honours `limit`. The real server serves
    /// RV=0 from its watch cache and ignores `limit` (one page, no `continue`), and so does
    /// this server by default; `true` pages it, so tests can exercise a client's pager on
    /// its first (RV=0) list. Default `false`.
    pub fn paginate_rv0(mut self, paginate: bool) -> Self {
        self.config.paginate_rv0 = paginate;
        self
    }

    /// How long a list at a resourceVersion above the current one waits for it to be
    /// reached before answering 504 `Timeout` (`ResourceVersionTooLarge`,
    /// `Retry-After: 1`). Default 3 s, the real watch cache's wait.
    pub fn too_large_resource_version_wait(mut self, wait: Duration) -> Self {
        self.config.too_large_rv_wait = wait;
        self
    }

    /// Serves the admin API under `/testkit/admin/` (fault injection, dropping watches,
    /// compaction, as JSON; see the crate docs' "Admin API"), for clients in any language.
    /// Default `false`: those paths are then 404 like any unknown path.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = reflector_testkit::ApiServer::builder().admin(true).start().await?;
    /// assert!(server.url().starts_with("http://127.0.0.1:"));
    /// # Ok(()) }
    /// ```
    pub fn admin(mut self, enabled: bool) -> Self {
        self.config.admin = enabled;
        self
    }

    /// For how long after a CRD is created (or its spec changes) the collections of its
    /// kind answer 429 `storage is (re)initializing` (`retryAfterSeconds: 1`,
    /// `Retry-After: 1`), as the real server does while the kind's watch cache fills (a few
    /// tens of milliseconds), so tests can exercise a client's retry path. Default zero:
    /// a new kind serves at once.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// let server = reflector_testkit::ApiServer::builder()
    ///     .crd_storage_initialization(Duration::from_millis(50))
    ///     .start()
    ///     .await?;
    /// # let _ = server; Ok(()) }
    /// ```
    pub fn crd_storage_initialization(mut self, wait: Duration) -> Self {
        self.config.crd_storage_initialization = wait;
        self
    }

    /// Where the service `namespace/name` that webhook configurations and CRD conversion
    /// webhooks name in `clientConfig.service` listens: the server calls
    /// `https://NAME.NAMESPACE.svc:PORT/PATH` there, verifying the certificate for
    /// `NAME.NAMESPACE.svc` against the configuration's `caBundle` (the service's `port`
    /// only shows in the URL). A service with no address here is a failed call (`service
    /// "NAME" not found`), as when the real one has no endpoints. Default: none.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let webhook: std::net::SocketAddr = "127.0.0.1:8443".parse()?;
    /// let server = reflector_testkit::ApiServer::builder()
    ///     .webhook_service("webhooks", "widget-webhook", webhook)
    ///     .start()
    ///     .await?;
    /// # let _ = server; Ok(()) }
    /// ```
    pub fn webhook_service(
        mut self,
        namespace: &str,
        name: &str,
        addr: std::net::SocketAddr,
    ) -> Self {
        self.config
            .webhook_services
            .insert((namespace.to_owned(), name.to_owned()), addr);
        self
    }

    /// TCP port on 127.0.0.1. Default 0 (an ephemeral port).
    pub fn port(mut self, port: u16) -> Self {
        self.config.port = port;
        self
    }

    /// Binds 127.0.0.1 and starts serving.
    ///
    /// # Cancel safety
    /// Cancel safe: if dropped before completion nothing keeps running.
    pub async fn start(self) -> Result<ApiServer, TestkitError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.config.port))
            .await
            .map_err(TestkitError::Io)?;
        let addr = listener.local_addr().map_err(TestkitError::Io)?;
        let (rv_tx, rv_rx) = watch::channel(1);
        let (watch_control, _) = broadcast::channel(64);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(self.config.history_len, rv_tx)),
            rv_rx,
            faults: FaultTable::default(),
            requests: Mutex::new(Vec::new()),
            watch_control,
            token: CancellationToken::new(),
            open_watches: AtomicUsize::new(0),
            config: self.config,
            addr,
            epoch: tokio::time::Instant::now(),
        });
        let app = axum::Router::new()
            .fallback(crate::router::handle)
            .with_state(shared.clone());
        let token = shared.token.clone();
        // As Go's net/http (the real API server): no Nagle delay, so a watch event
        // leaves the moment it is written instead of up to a delayed ACK later.
        let listener = listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "could not set TCP_NODELAY on a connection");
            }
        });
        let serve = tokio::spawn(async move {
            let result = axum::serve(listener, app)
                .with_graceful_shutdown(async move { token.cancelled().await })
                .await;
            if let Err(error) = result {
                tracing::warn!(%error, "testkit API server stopped with an error");
            }
        });
        tracing::debug!(%addr, "testkit API server listening");
        Ok(ApiServer {
            shared,
            serve: Some(serve),
        })
    }
}
