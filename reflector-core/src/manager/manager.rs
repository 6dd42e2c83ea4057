//! [`Manager`]: the builder — its settings, and what it is given to run (its `run`
//! is in `run.rs`, its RBAC in `rbac.rs`, its deploy manifests in `manifests.rs`).

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::{Api, Client};
use prometheus_client::registry::Registry;

use crate::controller::{
    Action, Controller, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT, ErrorPolicy, GroupResource, KindUse,
    ManagedController, Request, Trigger,
};
use crate::events::{Recorder, RecorderConfig};
use crate::informer::InformerFactory;
use crate::leader_election::{LeaderElection, LeaderElectionConfig};
use crate::metrics::{Health, Metrics};
use crate::object::Object;

use super::ManagerError;
use super::task::Task;

/// Runs the controllers and tasks of one operator process, as controller-runtime's
/// `Manager`: one informer factory, one optional leader election, one metrics
/// registry and, with the `metrics-server` feature, one `/metrics`, `/healthz` and
/// `/readyz` server, started and shut down in order.
///
/// - **One informer per kind.** Controllers take their informers from
///   [`factory`](Self::factory): a kind two controllers watch is listed and
///   watched once. The manager starts the factory's informers.
/// - **One leader election** ([`leader_election`](Self::leader_election),
///   optional), shared by every leader-only controller and [`Task`] (the default):
///   they reconcile only while this replica leads. Informers sync while it
///   follows (a warm standby: its caches are full when it takes over). A term
///   starts with every cached object queued. When the lease is lost, each
///   leader-only controller stops taking keys, and its reconciles in flight are
///   awaited until another replica could take the lease at the earliest (the last
///   renewal plus the lease duration), then aborted and queued again; leader-only
///   tasks are stopped the same way. The replica is then a candidate again, its
///   caches still warm. A controller or task made with `every_replica` runs on
///   every replica.
/// - **One metrics registry.** Every controller added reports to the manager's
///   [`Metrics`] (unless given its own with
///   [`Controller::metrics`]), as do the election, the informers and the
///   [`recorder`](Self::recorder)s it hands out; register your own metrics in
///   [`registry_mut`](Self::registry_mut).
/// - **Readiness.** [`health`](Self::health): ready once every informer of every
///   controller has synced, while the election runs (as leader or follower; the
///   line says which); served on `/readyz` by `metrics_server` (feature
///   `metrics-server`).
/// - **Orderly shutdown** on SIGTERM or SIGINT (the manager always listens), or
///   when the [`graceful_shutdown_on`](Self::graceful_shutdown_on) trigger
///   resolves: controllers and tasks stop taking work → reconciles and tasks in
///   flight finish within the graceful-shutdown timeout (30 s; stragglers are
///   aborted) → the events recorded are flushed → the lease is given up (with
///   [`release_on_cancel`](LeaderElectionConfig::release_on_cancel)) → the
///   informers stop → the server stops. So another replica takes over only once
///   no reconcile runs here, and `/metrics` answers until the end. A controller
///   that fails (its informers did not sync in time, ...) shuts the manager down
///   the same way, and `run` returns its error.
/// - **RBAC** from what it runs: [`rbac`](Self::rbac) and
///   [`manifests`](Self::manifests).
///
/// A sharded controller (`Controller::sharded`, feature `sharding`) is accepted:
/// it runs on every replica, outside the manager's election, its shard's
/// membership lease deciding what it reconciles; on shutdown it drains and gives
/// its membership up with the others.
///
/// # Example
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use reflector::prelude::*;
///
/// async fn deployments(_: Request<Deployment>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
/// async fn secrets(_: Request<Secret>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
///
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let client = kube::Client::try_default().await?;
/// let config = LeaderElectionConfig::default().release_on_cancel(true);
/// let mut manager = Manager::new(client).leader_election("my-operator", config)?;
/// let factory = manager.factory();
/// let (config_maps, all_secrets) = (factory.informer::<ConfigMap>(), factory.informer::<Secret>());
/// let deployments_controller = Controller::new(factory.informer::<Deployment>())
///     .owns(config_maps)
///     .owns(all_secrets.clone()); // Secrets: listed and watched once for both
/// manager.add(deployments_controller, deployments, Arc::new(()));
/// manager.add(Controller::new(all_secrets), secrets, Arc::new(()));
/// manager.run().await?; // until SIGTERM
/// # Ok(()) }
/// ```
pub struct Manager {
    pub(super) client: Client,
    pub(super) factory: InformerFactory,
    pub(super) registry: Registry,
    pub(super) metrics: Metrics,
    pub(super) health: Health,
    pub(super) election: Option<LeaderElection>,
    pub(super) controllers: Vec<Box<dyn ManagedController>>,
    pub(super) tasks: Vec<Task>,
    /// Flushed on shutdown, before the lease is given up.
    pub(super) recorders: Vec<Recorder>,
    /// Every kind a controller watches, and how it uses it (for the RBAC).
    pub(super) kinds: Vec<(GroupResource, KindUse)>,
    /// Rules added with `rbac_rule`.
    pub(super) extra_rules: Vec<PolicyRule>,
    pub(super) graceful_shutdown_timeout: Duration,
    pub(super) shutdown: Option<Trigger>,
    /// The `/metrics` server's listener, bound by `metrics_server`.
    #[cfg(feature = "metrics-server")]
    pub(super) listener: Option<std::net::TcpListener>,
    /// The webhook server, given by `add_webhooks`.
    #[cfg(feature = "webhooks")]
    pub(super) webhooks: Option<crate::webhooks::WebhookServer>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field(
                "controllers",
                &self
                    .controllers
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>(),
            )
            .field("tasks", &self.tasks)
            .field("election", &self.election)
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A manager of controllers using `client`, with controller-runtime's defaults:
    /// no leader election, a 30 s graceful-shutdown timeout, an
    /// [`InformerFactory`] with its defaults, no server.
    #[must_use]
    pub fn new(client: Client) -> Self {
        let mut registry = Registry::default();
        let metrics = Metrics::registered(&mut registry);
        Manager {
            factory: InformerFactory::new(client.clone()),
            client,
            registry,
            metrics,
            health: Health::new(),
            election: None,
            controllers: Vec::new(),
            tasks: Vec::new(),
            recorders: Vec::new(),
            kinds: Vec::new(),
            extra_rules: Vec::new(),
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            shutdown: None,
            #[cfg(feature = "metrics-server")]
            listener: None,
            #[cfg(feature = "webhooks")]
            webhooks: None,
        }
    }

    /// The factory the controllers' informers come from, tuned (say, with
    /// [`InformerFactory::reflector_options`]). Set it before taking informers from
    /// [`factory`](Self::factory): informers made by the one it replaces are not
    /// started by the manager. Default: `InformerFactory::new(client)`.
    #[must_use]
    pub fn informer_factory(mut self, factory: InformerFactory) -> Self {
        self.factory = factory;
        self
    }

    /// Runs leader election on the Lease `lease` in the client's default namespace
    /// (the pod's own in a cluster; elsewhere, the kubeconfig context's), with
    /// `config` (its metrics set to the manager's): leader-only controllers and
    /// tasks run only while this replica leads. Default: no election (every
    /// replica reconciles). For a Lease in another namespace, make the manager with
    /// a client whose default namespace is that one
    /// ([`kube::Config::default_namespace`]).
    ///
    /// With [`release_on_cancel`](LeaderElectionConfig::release_on_cancel), a
    /// graceful shutdown gives the lease up once every reconcile has finished, so
    /// the next leader takes over at once.
    ///
    /// # Errors
    /// [`ManagerError::LeaderElection`] for an empty lease name, invalid timings,
    /// or no host name for the default identity.
    pub fn leader_election(
        mut self,
        lease: &str,
        config: LeaderElectionConfig,
    ) -> Result<Self, ManagerError> {
        let api = Api::<Lease>::default_namespaced(self.client.clone());
        let election = LeaderElection::new(api, lease, config.metrics(&self.metrics))
            .map_err(ManagerError::LeaderElection)?;
        self.health.leader_election(&election);
        self.election = Some(election);
        Ok(self)
    }

    /// How long reconciles and tasks in flight may run once the shutdown begins;
    /// stragglers are then aborted and `run` returns an error. Applies to every
    /// controller added (their own setting is for running alone). Default 30 s, as
    /// controller-runtime's `GracefulShutdownTimeout`.
    #[must_use]
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// Shuts down in order when `trigger` resolves, as well as on SIGTERM or SIGINT
    /// (tests stop a manager this way). Default: only the signals.
    #[must_use]
    pub fn graceful_shutdown_on(
        mut self,
        trigger: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        self.shutdown = Some(Box::pin(trigger));
        self
    }

    /// The shared informer factory: take every controller's informers from it, so
    /// a kind watched by several is listed and watched once.
    #[must_use]
    pub fn factory(&self) -> &InformerFactory {
        &self.factory
    }

    /// The metrics every controller, the election and the recorders report to.
    #[must_use]
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The registry the metrics are in (and `/metrics` serves), to register your
    /// own metrics in.
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The readiness checks behind `/readyz`: one per informer of every
    /// controller, and the election's. Add your own with [`Health::check`].
    #[must_use]
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// The leader election, if the manager has one (to ask
    /// [`is_leader`](LeaderElection::is_leader), or follow its
    /// [`transitions`](LeaderElection::transitions)). The manager runs it.
    #[must_use]
    pub fn election(&self) -> Option<&LeaderElection> {
        self.election.as_ref()
    }

    /// The client the manager was made with.
    #[must_use]
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Adds `controller`, to be run with `reconcile` and `ctx` as
    /// [`Controller::run`] runs it, under the manager's election (unless it was
    /// made with [`every_replica`](Controller::every_replica)), shutdown and
    /// metrics. Its informers' readiness checks join [`health`](Self::health), its
    /// kinds the [`rbac`](Self::rbac).
    pub fn add<K, P, R, Fut, E, Ctx>(
        &mut self,
        controller: Controller<K, P>,
        reconcile: R,
        ctx: Arc<Ctx>,
    ) -> &mut Self
    where
        K: Object,
        R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + 'static,
        P: ErrorPolicy<K, E, Ctx>,
        Ctx: Send + Sync + 'static,
    {
        let mut managed = controller.managed(reconcile, ctx);
        let name = managed.name().to_owned();
        let footprint = managed.footprint();
        footprint.register_readiness(&self.health, &name);
        self.kinds.extend(footprint.kinds.iter().cloned());
        self.controllers.push(managed);
        self
    }

    /// Adds a [`Task`]: leader-only unless made with
    /// [`every_replica`](Task::every_replica).
    pub fn add_task(&mut self, task: Task) -> &mut Self {
        self.tasks.push(task);
        self
    }

    /// An event recorder reporting as `reporting_controller`, with the manager's
    /// metrics ([`Recorder::with_config`] for the rest). The manager flushes it
    /// on shutdown before it gives the lease up, and its RBAC lets it create and
    /// patch `events.k8s.io` Events.
    ///
    /// # Errors
    /// [`ManagerError::Events`] for an invalid name, or outside a tokio runtime.
    pub fn recorder(&mut self, reporting_controller: &str) -> Result<Recorder, ManagerError> {
        let config = RecorderConfig::default().metrics(&self.metrics);
        let recorder = Recorder::with_config(self.client.clone(), reporting_controller, config)
            .map_err(ManagerError::Events)?;
        self.recorders.push(recorder.clone());
        Ok(recorder)
    }

    /// Adds `rule` to the ClusterRole of [`rbac`](Self::rbac): for requests the
    /// manager cannot know of (a reconcile reading Secrets through its own `Api`,
    /// say).
    pub fn rbac_rule(&mut self, rule: PolicyRule) -> &mut Self {
        self.extra_rules.push(rule);
        self
    }
}
