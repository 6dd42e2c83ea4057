//! The server handle: start, stop, clients, direct state access.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kube::CustomResourceExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::builder::{ApiServerBuilder, ServerConfig};
use crate::error::TestkitError;
use crate::fault::{Fault, FaultId, FaultTable, Faults, Matcher, WatchControl};
use crate::object::key_of;
use crate::request_log::RequestLogEntry;
use crate::resource::ResourceInfo;
use crate::state::{ResourceId, State};

/// State shared by the handle, the HTTP handlers and the watch tasks.
pub(crate) struct Shared {
    /// Objects, event log, registry. Never held across an await.
    pub state: Mutex<State>,
    /// Receives the current RV after every write (cloned by each watch).
    pub rv_rx: watch::Receiver<u64>,
    /// Injected faults (own lock inside).
    pub faults: FaultTable,
    /// Answered requests, in order. Guarded by this mutex; never held across an await.
    pub requests: Mutex<Vec<RequestLogEntry>>,
    /// Immediate actions for open watches.
    pub watch_control: broadcast::Sender<WatchControl>,
    /// Cancelled when the server stops; parent of every watch task's token.
    pub token: CancellationToken,
    /// Watch streams currently open.
    pub open_watches: AtomicUsize,
    /// Settings.
    pub config: ServerConfig,
    /// `host:port` the server listens on.
    pub addr: SocketAddr,
    /// When the server started: the watch cache's bookmark ticks count from here.
    pub epoch: tokio::time::Instant,
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state locked for one write request: under `dryRun=All` (`pairs`) every write
    /// it makes runs in full (defaulting, admission, validation, conflicts) but stores
    /// nothing, sends no watch event and moves no resourceVersion, as on the real server.
    ///
    /// A write run around admission webhooks (`webhooks::capture`) gets its pass's
    /// capture here; the passes that only look store nothing.
    pub(crate) fn write_state(&self, pairs: &[(String, String)]) -> WriteState<'_> {
        let mut guard = self.state();
        let capture = crate::webhooks::capture::take();
        guard.dry_run = crate::query::param(pairs, "dryRun") == Some("All")
            || capture
                .as_ref()
                .is_some_and(crate::webhooks::capture::Capture::dry);
        guard.admission = capture;
        WriteState { guard }
    }

    pub(crate) fn log_request(&self, entry: RequestLogEntry) {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry);
    }
}

/// [`Shared::state`] for one write request; leaves the state's dry-run mode off (and
/// hands a webhook capture back) when dropped, whatever the request did.
pub(crate) struct WriteState<'a> {
    guard: MutexGuard<'a, State>,
}

impl std::ops::Deref for WriteState<'_> {
    type Target = State;

    fn deref(&self) -> &State {
        &self.guard
    }
}

impl std::ops::DerefMut for WriteState<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.guard
    }
}

impl Drop for WriteState<'_> {
    fn drop(&mut self) {
        self.guard.dry_run = false;
        crate::webhooks::capture::restore(self.guard.admission.take());
    }
}

/// An embedded Kubernetes API server on 127.0.0.1. Dropping it stops the server and every
/// task it spawned.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{Api, PostParams};
/// use reflector_testkit::ApiServer;
///
/// let server = ApiServer::start().await?;
/// let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("hello".into());
/// let created = api.create(&PostParams::default(), &cm).await?;
/// assert!(created.metadata.uid.is_some());
/// assert_eq!(created.metadata.generation, None, "ConfigMaps have no generation");
/// server.shutdown().await;
/// # Ok(()) }
/// ```
pub struct ApiServer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) serve: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shared.token.cancel();
    }
}

impl ApiServer {
    /// Starts a server with default settings on an ephemeral port.
    ///
    /// # Cancel safety
    /// Cancel safe: if dropped before completion nothing keeps running.
    pub async fn start() -> Result<Self, TestkitError> {
        Self::builder().start().await
    }

    /// A builder for non-default settings.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder::default()
    }

    /// Stops accepting connections, ends every watch and waits for the serve loop to exit.
    ///
    /// # Cancel safety
    /// Cancel safe: the server is already told to stop before the first await.
    pub async fn shutdown(mut self) {
        self.shared.token.cancel();
        if let Some(serve) = self.serve.take() {
            let _ = serve.await;
        }
    }

    /// `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// The bound address.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    fn kube_config(&self) -> kube::Config {
        let uri: http::Uri = self.url().parse().unwrap_or_default();
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".to_owned();
        config
    }

    /// A `kube::Client` for this server, built from `kube::Config::new(url)` (kube's default
    /// retry of 429/503/504 left on). Must be called inside a tokio runtime.
    ///
    /// # Panics
    /// Only if kube cannot build a plain-HTTP client at all (never with this crate's
    /// features); use [`ApiServer::try_client`] to get the error instead.
    #[must_use]
    pub fn client(&self) -> kube::Client {
        self.try_client()
            .expect("kube builds a plain-HTTP client for a loopback URL")
    }

    /// Like [`ApiServer::client`] but returning the error.
    pub fn try_client(&self) -> Result<kube::Client, TestkitError> {
        kube::Client::try_from(self.kube_config()).map_err(TestkitError::Client)
    }

    /// A `kube::Client` with kube's default retry layer turned off (`Config::default_retry
    /// = false`), so tests see 429/503/504 answers themselves.
    ///
    /// # Panics
    /// As [`ApiServer::client`].
    #[must_use]
    pub fn client_without_retries(&self) -> kube::Client {
        let mut config = self.kube_config();
        config.default_retry = false;
        kube::Client::try_from(config).expect("kube builds a plain-HTTP client for a loopback URL")
    }

    /// A `kube::Client` whose requests carry `User-Agent: <user_agent>` (kube's client
    /// sends none by default): the server then tells this client's requests apart, so
    /// a fault can target one client among several
    /// ([`Matcher::user_agent`](crate::Matcher::user_agent)) — one replica of a
    /// controller, say — and its writes' `managedFields` name it (the manager is the
    /// agent up to the first `/`, as the real server's default). Retries as
    /// [`ApiServer::client`].
    ///
    /// # Errors
    /// [`TestkitError::Client`] if kube cannot build the client, or
    /// [`TestkitError::InvalidUserAgent`] if `user_agent` is not a valid header value.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
    ///
    /// let server = ApiServer::start().await?;
    /// let replica_0 = server.client_with_user_agent("replica-0")?;
    /// let _replica_1 = server.client_with_user_agent("replica-1")?;
    /// // Only replica-0's updates fail.
    /// server.inject(Matcher::verb(Verb::Update).user_agent("replica-0").every(), Fault::InternalError);
    /// # let _ = replica_0;
    /// # Ok(()) }
    /// ```
    pub fn client_with_user_agent(&self, user_agent: &str) -> Result<kube::Client, TestkitError> {
        let value = http::HeaderValue::from_str(user_agent)
            .map_err(|_| TestkitError::InvalidUserAgent(user_agent.to_owned()))?;
        let mut config = self.kube_config();
        config.headers.push((http::header::USER_AGENT, value));
        kube::Client::try_from(config).map_err(TestkitError::Client)
    }

    /// Registers a custom resource by storing `K::crd()` as a CustomResourceDefinition,
    /// exactly as a client creating it through the API would (without its validation):
    /// the kind is then served with its scope, subresources, schema (pruning and
    /// validation) and short names, and the CRD shows up in discovery, lists and watches.
    /// Registering another version of the same CRD (another Rust type) adds that version.
    pub fn register<K>(&self)
    where
        K: kube::Resource<DynamicType = ()> + CustomResourceExt,
    {
        let crd = K::crd();
        let mut state = self.shared.state();
        let value = crate::crd::merged_registration(&state, &crd);
        if let Some(crd_rid) = state.find(crate::crd::GROUP, "v1", "customresourcedefinitions")
            && let Err(error) = state.upsert(crd_rid, value)
        {
            tracing::warn!(%error, "could not store the CRD; serving the kind without it");
        }
        if Self::resource_id::<K>(&state).is_err() {
            state.register(ResourceInfo::of_crd::<K>());
        }
    }

    /// Registers any static resource type (e.g. a k8s-openapi type) without a status
    /// subresource; scope comes from `K::Scope`.
    pub fn register_resource<K>(&self)
    where
        K: kube::Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        self.register_info(ResourceInfo::of::<K>(false));
    }

    /// Like [`ApiServer::register_resource`], with a `status` subresource.
    pub fn register_resource_with_status<K>(&self)
    where
        K: kube::Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        self.register_info(ResourceInfo::of::<K>(true));
    }

    /// Registers a resource described by hand.
    pub fn register_info(&self, info: ResourceInfo) {
        self.shared.state().register(info);
    }

    fn resource_id<K: kube::Resource<DynamicType = ()>>(
        state: &State,
    ) -> Result<ResourceId, TestkitError> {
        let api_version = K::api_version(&());
        let kind = K::kind(&());
        state
            .find_kind(&api_version, &kind)
            .ok_or_else(|| TestkitError::UnknownResource(format!("{api_version}/{kind}")))
    }

    /// Stores `obj` directly (create or replace, no HTTP, no preconditions, no admission —
    /// its namespace need not exist —, no CRD schema pruning or validation; a stored
    /// CustomResourceDefinition is served), as one write
    /// with a new resourceVersion that watches see. Sets `uid`, `creationTimestamp` and
    /// (for kinds that track it) `generation` when missing. Returns the new resourceVersion.
    pub fn insert<K>(&self, obj: &K) -> Result<u64, TestkitError>
    where
        K: kube::Resource<DynamicType = ()> + Serialize,
    {
        self.insert_many(std::iter::once(obj))
    }

    /// Stores many objects under one lock (fast enough for 100k ConfigMaps). Returns the
    /// resourceVersion of the last write (the current RV if `objs` is empty).
    ///
    /// The server keeps each object as compact JSON (a benchmark ConfigMap: ~1.9 KB
    /// with its key and labels), far less than the typed object passed in (~6 KB). To
    /// store a million, pass them a chunk at a time, so only one chunk of typed objects
    /// is alive:
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector_testkit::{ApiServer, bench_objects::config_map};
    ///
    /// let server = ApiServer::start().await?;
    /// let (objects, chunk) = (25_000, 10_000);
    /// for start in (0..objects).step_by(chunk) {
    ///     let end = (start + chunk).min(objects);
    ///     let batch: Vec<_> = (start..end).map(|i| config_map(i, 100)).collect();
    ///     server.insert_many(&batch)?;
    /// }
    /// assert_eq!(server.versions::<ConfigMap>(None)?.len(), objects);
    /// # Ok(()) }
    /// ```
    pub fn insert_many<'a, K, I>(&self, objs: I) -> Result<u64, TestkitError>
    where
        K: kube::Resource<DynamicType = ()> + Serialize + 'a,
        I: IntoIterator<Item = &'a K>,
    {
        let mut state = self.shared.state();
        let rid = Self::resource_id::<K>(&state)?;
        for obj in objs {
            let value = serde_json::to_value(obj).map_err(TestkitError::Json)?;
            state.upsert(rid, value).map_err(TestkitError::Invalid)?;
        }
        Ok(state.rv)
    }

    /// Removes an object directly (ignores finalizers). Returns whether it existed.
    pub fn remove<K>(&self, namespace: Option<&str>, name: &str) -> Result<bool, TestkitError>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let mut state = self.shared.state();
        let rid = Self::resource_id::<K>(&state)?;
        let namespaced = state.resources[rid].namespaced;
        Ok(state.remove(rid, &key_of(namespace.filter(|_| namespaced), name)))
    }

    /// The stored JSON of one object, if it exists.
    pub fn object_json<K>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<serde_json::Value>, TestkitError>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let state = self.shared.state();
        let rid = Self::resource_id::<K>(&state)?;
        let namespaced = state.resources[rid].namespaced;
        Ok(state
            .get(rid, &key_of(namespace.filter(|_| namespaced), name))
            .map(|o| o.value()))
    }

    /// One object decoded as `K`, if it exists.
    pub fn get<K>(&self, namespace: Option<&str>, name: &str) -> Result<Option<K>, TestkitError>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        self.object_json::<K>(namespace, name)?
            .map(|v| serde_json::from_value(v).map_err(TestkitError::Json))
            .transpose()
    }

    /// `(namespace/name or name, resourceVersion)` of every stored object of `K`
    /// (optionally in one namespace), in key order. Handy for "store equals server" checks.
    pub fn versions<K>(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<(String, String)>, TestkitError>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let state = self.shared.state();
        let rid = Self::resource_id::<K>(&state)?;
        Ok(state
            .snapshot(rid, namespace)
            .iter()
            .map(|o| (o.key.to_string(), o.rv.to_string()))
            .collect())
    }

    /// Number of stored objects of `K`.
    pub fn count<K>(&self) -> Result<usize, TestkitError>
    where
        K: kube::Resource<DynamicType = ()>,
    {
        let state = self.shared.state();
        let rid = Self::resource_id::<K>(&state)?;
        Ok(state.count(rid))
    }

    /// The current (latest) resourceVersion.
    #[must_use]
    pub fn current_resource_version(&self) -> u64 {
        self.shared.state().rv
    }

    /// The compaction floor: lists at an exact RV below it, continue tokens from before it
    /// and watches from before it answer 410.
    #[must_use]
    pub fn compaction_floor(&self) -> u64 {
        self.shared.state().floor
    }

    /// Compacts all history up to the current resourceVersion.
    pub fn compact(&self) {
        let mut state = self.shared.state();
        let rv = state.rv;
        state.compact_to(rv);
    }

    /// Compacts history up to `rv` (clamped to the current resourceVersion). Watches that
    /// have not yet read past `rv` get a 410 `ERROR` event.
    pub fn compact_to(&self, rv: u64) {
        self.shared.state().compact_to(rv);
    }

    /// The fault-injection handle.
    #[must_use]
    pub fn faults(&self) -> Faults {
        Faults {
            shared: self.shared.clone(),
        }
    }

    /// Shortcut for `self.faults().inject(matcher, fault)`.
    pub fn inject(&self, matcher: Matcher, fault: Fault) -> FaultId {
        self.shared.faults.add(matcher, fault)
    }

    /// Shortcut for `self.faults().hits(id)`.
    #[must_use]
    pub fn fault_hits(&self, id: FaultId) -> usize {
        self.shared.faults.hits(id)
    }

    /// Every request answered so far, in order.
    #[must_use]
    pub fn request_log(&self) -> Vec<RequestLogEntry> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Empties the request log.
    pub fn clear_request_log(&self) {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Number of watch streams currently open.
    #[must_use]
    pub fn open_watches(&self) -> usize {
        self.shared.open_watches.load(Ordering::SeqCst)
    }
}
