//! [`Controller`]: the builder and the `run` loop.

use std::fmt::{Debug, Display};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::informer::{InformerFactory, InformerScope, SharedIndexInformer};
use crate::leader_election::{LeaderElection, LeaderState, RunGuard, not_leading};
use crate::lister::Lister;
use crate::metrics::Metrics;
use crate::object::{Object, ObjectKey, ObjectRef, short_type_name};
use crate::sharding::{Ring, ShardGate, ShardingError};
use crate::store::Indexer;
use crate::workqueue::{QueueConfig, RateLimiter, WorkQueue, default_controller_rate_limiter};

use super::action::Action;
use super::error::ControllerError;
use super::error_policy::ErrorPolicy;
use super::owner_mapping::OwnerMapping;
use super::request::Request;
use super::signal::Signals;
use super::source::{ActiveRegistration, InformerSource, KeyMapping, WatchSource, wait_for_sync};
use super::worker::{CurrentKey, WorkerShared, shut_down_workers, stop_workers};

/// 30 s, as controller-runtime's manager `GracefulShutdownTimeout`.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// 2 min, as controller-runtime's controller `CacheSyncTimeout`.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// How often the queue's unfinished-work gauges are refreshed (500 ms, as client-go's
/// `updateUnfinishedWorkLoop`).
const UNFINISHED_WORK_PERIOD: Duration = Duration::from_millis(500);

/// Reconciles the objects of one primary informer, with the keys its own events,
/// its owned children's and any watched informer's events map to, as
/// controller-runtime's `Controller` (built as its `Builder`: `For`, `Owns`,
/// `Watches`) in kube-runtime's shape.
///
/// Semantics:
///
/// - **Keys, with the cached object.** `reconcile` gets a [`Request`]: the typed
///   key ([`ObjectRef<K>`]) and the object as cached when a worker took the key, or
///   `None` once it was deleted, so cleanup runs through the same path.
/// - **After sync only.** No reconcile runs before every informer the controller
///   watches has synced and its handler has seen the initial list (events meanwhile
///   are queued). The wait is woken by the informers, never polled.
/// - **One key, one worker.** `concurrency` workers share a
///   [`WorkQueue`], which never hands a key being reconciled to a second
///   worker, and re-queues it once if it changed meanwhile.
/// - **Requeues** follow the returned [`Action`]; errors go to the error policy
///   ([`Action::requeue_rate_limited`] unless [`error_policy`](Self::error_policy)
///   sets another: the key's exponential backoff from the rate limiter, which a
///   success resets).
/// - **Leader election** (optional, [`leader_elected`](Self::leader_elected)):
///   informers sync while following; reconciles run only while this replica leads.
/// - **Informers are started for you.** `run` starts every watched informer that
///   has not started and stops those it started when it returns
///   ([`start_informers(false)`](Self::start_informers) leaves that to their owner).
/// - **Shutdown.** When the [`graceful_shutdown_on`](Self::graceful_shutdown_on)
///   trigger resolves,
///   or SIGINT/SIGTERM arrives after [`shutdown_on_signal`](Self::shutdown_on_signal),
///   the queue shuts down and workers take no more keys; reconciles in flight get
///   the graceful-shutdown timeout to finish; stragglers are aborted and logged.
///   Dropping the `run` future stops everything at once.
///
/// # Example
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::controller::{Action, Controller, Request};
///
/// async fn reconcile(req: Request<ConfigMap>, _ctx: Arc<()>) -> Result<Action, kube::Error> {
///     match req.object {
///         Some(cm) => println!("{}: {} keys", req.key, cm.data.as_ref().map_or(0, |d| d.len())),
///         None => println!("{}: deleted", req.key),
///     }
///     Ok(Action::done())
/// }
///
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let client = kube::Client::try_default().await?;
/// Controller::<ConfigMap>::for_kind(client)
///     .shutdown_on_signal()
///     .run(reconcile, Arc::new(()))
///     .await?;
/// # Ok(()) }
/// ```
///
/// Owned children and other watched kinds come from a shared factory:
/// ```no_run
/// # use std::sync::Arc;
/// # use kube::ResourceExt;
/// # use k8s_openapi::api::apps::v1::Deployment;
/// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// # use reflector_core::controller::{Action, Controller, Request};
/// # use reflector_core::informer::InformerFactory;
/// # use reflector_core::object::ObjectRef;
/// # async fn reconcile(_: Request<Deployment>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
/// # async fn f(client: kube::Client) -> Result<(), reflector_core::controller::ControllerError> {
/// let factory = InformerFactory::new(client);
/// Controller::new(factory.informer::<Deployment>())
///     .owns(factory.informer::<ConfigMap>())
///     .watches(factory.informer::<Secret>(), |s: &Secret| {
///         // a Secret named after its Deployment
///         Some(ObjectRef::new(s.namespace().as_deref(), &s.name_any()))
///     })
///     .concurrency(4)
///     .run(reconcile, Arc::new(()))
///     .await
/// # }
/// ```
pub struct Controller<K: Object, P = Action> {
    name: String,
    primary: SharedIndexInformer<K>,
    sources: Vec<Box<dyn WatchSource>>,
    concurrency: usize,
    rate_limiter: Arc<dyn RateLimiter<ObjectKey>>,
    metrics: Option<Metrics>,
    graceful_shutdown_timeout: Duration,
    cache_sync_timeout: Duration,
    start_informers: bool,
    shutdown_on_signal: bool,
    /// Resolves to start the graceful shutdown (`graceful_shutdown_on`).
    shutdown: Option<Pin<Box<dyn Future<Output = ()> + Send + 'static>>>,
    election: Option<LeaderElection>,
    /// Set by `sharded`.
    shard: Option<Shard<K>>,
    /// Rebuilds the primary informer with a label selector added to its scope
    /// (`for_kind`, `for_api`: the controller made the informer, so `sharded` can
    /// remake it); `None` for a given informer.
    rescope: Option<Rescope<K>>,
    error_policy: P,
}

/// Remakes the primary informer, selecting by the given label selector too.
type Rescope<K> = Arc<dyn Fn(&str) -> SharedIndexInformer<K> + Send + Sync>;

/// A sharded controller's ring, and its drain acknowledgement loop (made where `K`'s
/// dynamic type is known to have a default).
struct Shard<K: Object> {
    ring: Ring,
    acknowledge: fn(Arc<ShardGate>, Indexer<K>, CancellationToken) -> BoxFuture<'static, ()>,
}

impl<K: Object, P> std::fmt::Debug for Controller<K, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field(
                "sources",
                &self.sources.iter().map(|s| s.kind()).collect::<Vec<_>>(),
            )
            .field("concurrency", &self.concurrency)
            .field("graceful_shutdown_timeout", &self.graceful_shutdown_timeout)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field("start_informers", &self.start_informers)
            .field("shutdown_on_signal", &self.shutdown_on_signal)
            .field("graceful_shutdown_on", &self.shutdown.is_some())
            .field("election", &self.election)
            .field("ring", &self.shard.as_ref().map(|s| &s.ring))
            .finish_non_exhaustive()
    }
}

impl<K> Controller<K>
where
    K: Object,
    K::DynamicType: Default,
    K::Scope: 'static,
{
    /// A controller of `primary`'s objects, with controller-runtime's defaults: named
    /// after the kind in lower case, one worker, [`default_controller_rate_limiter`],
    /// errors retried with backoff ([`Action::requeue_rate_limited`] as the error
    /// policy), no metrics, 30 s graceful shutdown, 2 min cache-sync
    /// timeout, informers started by `run` if nobody started them.
    #[must_use]
    pub fn new(primary: SharedIndexInformer<K>) -> Self {
        let name = K::kind(&K::DynamicType::default()).to_lowercase();
        Controller {
            primary,
            sources: Vec::new(),
            concurrency: 1,
            rate_limiter: Arc::new(default_controller_rate_limiter()),
            metrics: None,
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            start_informers: true,
            shutdown_on_signal: false,
            shutdown: None,
            election: None,
            shard: None,
            rescope: None,
            error_policy: Action::requeue_rate_limited(),
            name,
        }
    }

    /// A controller of every `K` the client can see, its informer made by an
    /// [`InformerFactory`] with the factory's defaults (`managedFields` skipped
    /// while decoding).
    #[must_use]
    pub fn for_kind(client: Client) -> Self
    where
        K: DeserializeOwned + Debug,
        K::DynamicType: Clone + Send + Sync + 'static,
    {
        Self::scoped(InformerFactory::new(client), InformerScope::default())
    }

    /// A controller of the objects `api` reaches (one namespace for
    /// `Api::namespaced`, every namespace for `Api::all`), its informer made by an
    /// [`InformerFactory`] with the factory's defaults.
    #[must_use]
    pub fn for_api(api: Api<K>) -> Self
    where
        K: DeserializeOwned + Debug,
        K::DynamicType: Clone + Send + Sync + 'static,
    {
        let mut scope = InformerScope::default();
        if let Some(ns) = api.namespace() {
            scope = scope.namespace(ns);
        }
        Self::scoped(InformerFactory::new(api.into_client()), scope)
    }

    /// A controller of `factory`'s informer of `scope`, which
    /// [`sharded`](Controller::sharded) can remake with the shard's selector.
    fn scoped(factory: InformerFactory, scope: InformerScope) -> Self
    where
        K: DeserializeOwned + Debug,
        K::DynamicType: Clone + Send + Sync + 'static,
    {
        let mut controller = Self::new(factory.scoped::<K>(&scope));
        controller.rescope = Some(Arc::new(move |labels: &str| {
            let labels = match &scope.labels {
                Some(own) => format!("{own},{labels}"),
                None => labels.to_owned(),
            };
            factory.scoped::<K>(&scope.clone().labels(labels))
        }));
        controller
    }
}

impl<K, P> Controller<K, P>
where
    K: Object,
    K::DynamicType: Default,
    K::Scope: 'static,
{
    /// Reconciles the controller owner of each child of `children` (through the
    /// child's `ownerReferences` whose group and kind are `K`'s and which is marked
    /// `controller: true`), on the child's add, update (old and new owner) and
    /// delete. See [`OwnerMapping`].
    #[must_use]
    pub fn owns<C: Object>(self, children: SharedIndexInformer<C>) -> Self {
        self.owns_with(children, OwnerMapping::new())
    }

    /// As [`owns`](Self::owns) with another mapping, e.g.
    /// `OwnerMapping::new().every_owner()`.
    #[must_use]
    pub fn owns_with<C: Object>(
        self,
        children: SharedIndexInformer<C>,
        mapping: OwnerMapping<K>,
    ) -> Self {
        self.source(children, move |c: &C| mapping.owners(c), true)
    }

    /// Shards this controller over `ring`: it reconciles only the objects the ring's
    /// [`Sharder`](crate::sharding::Sharder) assigned to this replica's shard, and
    /// hands them over without overlap when they move.
    ///
    /// - **Its share only.** The primary informer and every owned one
    ///   ([`owns`](Self::owns)) must select [`Ring::selector`]. A controller made by
    ///   [`for_kind`](Controller::for_kind) or [`for_api`](Controller::for_api) adds
    ///   it to its own primary informer; given informers must come from an
    ///   [`InformerFactory`] scope with
    ///   [`InformerScope::labels`](crate::informer::InformerScope::labels)`(ring.selector())`,
    ///   or `run` fails with [`ControllerError::Sharding`] (never a silently
    ///   unsharded controller). [`watches`](Self::watches) sources are not checked.
    /// - **Membership.** `run` runs the ring ([`Ring::run`]: its membership lease and
    ///   the observation of the others), so do not run it yourself. Reconciles run
    ///   only while this shard holds its lease, in terms as with
    ///   [`leader_elected`](Self::leader_elected) (which cannot be combined with
    ///   this); on a graceful shutdown the workers are drained first and the lease
    ///   is released after them, so the objects move only once no reconcile runs.
    /// - **Drains.** When an object carries the drain annotation
    ///   (`shard.reflector.rs/<ring>-drain`), its key is no longer reconciled here;
    ///   once a reconcile of it in flight has ended, the shard removes its label and
    ///   the annotation in one patch (`resourceVersion` precondition; a 409 is
    ///   retried from the fresh cached object, a 404 ends it) and the sharder
    ///   assigns it to its new shard. The object then leaves this shard's cache
    ///   without a `None` reconcile: only a deletion gets one.
    /// - **Children** follow their controller owner's shard: run a
    ///   [`Sharder::owned`](crate::sharding::Sharder::owned) per owned kind beside the
    ///   primary's [`Sharder`](crate::sharding::Sharder) (both on this ring). A key
    ///   mapped from a child whose owner is not in this shard's cache is skipped.
    ///
    /// With [`metrics`](Self::metrics), the shard counts its acknowledged drains in
    /// `reflector_sharding_drains_acknowledged_total{ring}`.
    ///
    /// Wiring the sharders and the informers: see the [sharding module](crate::sharding).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// # use reflector_core::controller::{Action, Controller, Request};
    /// # use reflector_core::informer::{InformerFactory, InformerScope};
    /// # use reflector_core::sharding::Ring;
    /// # async fn reconcile(_: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
    /// # async fn f(ring: Ring, factory: InformerFactory) -> Result<(), reflector_core::controller::ControllerError> {
    /// let mine = InformerScope::default().labels(ring.selector());
    /// Controller::new(factory.scoped::<ConfigMap>(&mine))
    ///     .owns(factory.scoped::<Secret>(&mine))
    ///     .sharded(&ring)
    ///     .shutdown_on_signal()
    ///     .run(reconcile, Arc::new(()))
    ///     .await
    /// # }
    /// ```
    #[must_use]
    pub fn sharded(mut self, ring: &Ring) -> Self {
        if let Some(rescope) = &self.rescope {
            self.primary = rescope(&ring.selector());
        }
        self.shard = Some(Shard {
            ring: ring.clone(),
            acknowledge: |gate, cache, cancel| {
                Box::pin(async move { gate.acknowledge(&cache, &cancel).await })
            },
        });
        self
    }
}

impl<K: Object, P> Controller<K, P> {
    /// Reconciles the primaries `mapper` returns for each object of `informer`, on
    /// its add, update (old and new state) and delete (its last known state), as
    /// controller-runtime's `Watches` with `EnqueueRequestsFromMapFunc`. The mapper
    /// returns typed keys of `K` (a `Vec`, an `Option`, any iterator), so it cannot
    /// enqueue a key of another kind.
    #[must_use]
    pub fn watches<O, I>(
        self,
        informer: SharedIndexInformer<O>,
        mapper: impl Fn(&O) -> I + Send + Sync + 'static,
    ) -> Self
    where
        O: Object,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.source(informer, mapper, false)
    }

    /// Adds a mapped source; `owned` for `owns`.
    fn source<O, I>(
        mut self,
        informer: SharedIndexInformer<O>,
        mapper: impl Fn(&O) -> I + Send + Sync + 'static,
        owned: bool,
    ) -> Self
    where
        O: Object,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        let mapper = move |o: &O| mapper(o).into_iter().map(ObjectRef::into_key).collect();
        self.sources.push(Box::new(InformerSource::new(
            informer,
            KeyMapping::Mapped(Arc::new(mapper)),
            owned,
        )));
        self
    }

    /// The controller's name: labels its metrics and logs and names its queue.
    /// Default: the primary kind in lower case, as controller-runtime's builder.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How many keys are reconciled at once (at least 1). Default 1, as
    /// controller-runtime's `MaxConcurrentReconciles`.
    #[must_use]
    pub fn concurrency(mut self, workers: usize) -> Self {
        self.concurrency = workers.max(1);
        self
    }

    /// The rate limiter behind requeues and error backoff. Default:
    /// [`default_controller_rate_limiter`] (per-key 5 ms doubling to 1000 s, and an
    /// overall 10 qps / burst 100 bucket), as controller-runtime's.
    #[must_use]
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<ObjectKey>>) -> Self {
        self.rate_limiter = limiter;
        self
    }

    /// What to do with a key whose reconcile failed: any [`ErrorPolicy`], e.g. a
    /// `fn(&ObjectRef<K>, &Error, Arc<Ctx>) -> Action`, or a fixed [`Action`].
    /// Default: [`Action::requeue_rate_limited`].
    #[must_use]
    pub fn error_policy<Q>(self, policy: Q) -> Controller<K, Q> {
        Controller {
            name: self.name,
            primary: self.primary,
            sources: self.sources,
            concurrency: self.concurrency,
            rate_limiter: self.rate_limiter,
            metrics: self.metrics,
            graceful_shutdown_timeout: self.graceful_shutdown_timeout,
            cache_sync_timeout: self.cache_sync_timeout,
            start_informers: self.start_informers,
            shutdown_on_signal: self.shutdown_on_signal,
            shutdown: self.shutdown,
            election: self.election,
            shard: self.shard,
            rescope: self.rescope,
            error_policy: policy,
        }
    }

    /// Reports to `metrics` (shared by every controller of a process; register it
    /// once). Default: no metrics.
    #[must_use]
    pub fn metrics(mut self, metrics: &Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// How long in-flight reconciles may run after shutdown begins. Default 30 s, as
    /// controller-runtime's `GracefulShutdownTimeout`.
    #[must_use]
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// How long `run` waits for the informers to sync before it gives up. Default
    /// 2 min, as controller-runtime's `CacheSyncTimeout`.
    #[must_use]
    pub fn cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = timeout;
        self
    }

    /// Whether `run` starts the watched informers that have not started (and stops
    /// those it started when it returns). Default true; false when their owner (an
    /// [`InformerFactory`] you start, or your own task) runs them.
    #[must_use]
    pub fn start_informers(mut self, start: bool) -> Self {
        self.start_informers = start;
        self
    }

    /// Shut down gracefully on SIGINT (Ctrl+C) or SIGTERM (what the kubelet sends a
    /// pod), as kube-runtime's `shutdown_on_signal`. Default: off.
    #[must_use]
    pub fn shutdown_on_signal(mut self) -> Self {
        self.shutdown_on_signal = true;
        self
    }

    /// Shuts down gracefully when `trigger` resolves (e.g. `token.cancelled_owned()`
    /// of a [`CancellationToken`], a oneshot receiver, a leadership loss), as
    /// kube-runtime's `graceful_shutdown_on`; with
    /// [`shutdown_on_signal`](Self::shutdown_on_signal) too, whichever comes first.
    /// Default: none (`run` ends on a signal, an error, or when dropped).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use reflector_core::controller::{Action, Controller, Request};
    /// # use tokio_util::sync::CancellationToken;
    /// # async fn reconcile(_: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
    /// # async fn f(client: kube::Client) {
    /// let stop = CancellationToken::new();
    /// let run = Controller::<ConfigMap>::for_kind(client)
    ///     .graceful_shutdown_on(stop.clone().cancelled_owned())
    ///     .run(reconcile, Arc::new(()));
    /// # let _ = run;
    /// stop.cancel(); // graceful shutdown
    /// # }
    /// ```
    #[must_use]
    pub fn graceful_shutdown_on(
        mut self,
        trigger: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        self.shutdown = Some(Box::pin(trigger));
        self
    }

    /// Reconciles only while this replica leads `election`, as controller-runtime's
    /// manager with `LeaderElection: true`. Default: no election (always
    /// reconciles).
    ///
    /// `run` runs the election from the start, so the informers start and sync
    /// while this replica follows (its caches are warm when it takes over).
    /// Handlers keep queueing keys meanwhile; no reconcile runs.
    ///
    /// - **Gaining leadership** starts a term: every cached object is queued (the
    ///   previous leader's requeue timers are gone, as after a controller-runtime
    ///   restart) and `concurrency` workers start.
    /// - **Losing it** (no renewal within the renew deadline) ends the term: no new
    ///   reconcile starts, and the reconciles in flight are awaited — until the
    ///   instant another replica could at the earliest take the lease (the last
    ///   successful renewal plus the lease duration); any still running then are
    ///   aborted, logged, and their keys queued again. The replica then follows and
    ///   may lead again later.
    ///
    /// Why a candidate again rather than ending `run` with an error (controller-runtime
    /// exits the process by default): the term boundary already guarantees no two
    /// replicas reconcile at once, the informers stay warm, and a transient API
    /// outage that cost the lease does not need a pod restart to recover. To exit
    /// instead, stop the controller when
    /// [`not_leading`](LeaderElection::not_leading) resolves after a term.
    ///
    /// On shutdown (the stop future, a signal), the workers are drained first and
    /// the election is stopped after them, so with
    /// [`release_on_cancel`](crate::leader_election::LeaderElectionConfig::release_on_cancel)
    /// the lease is given up only once no reconcile runs.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// use k8s_openapi::api::coordination::v1::Lease;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector_core::controller::{Action, Controller, Request};
    /// use reflector_core::leader_election::{LeaderElection, LeaderElectionConfig};
    /// # async fn reconcile(_: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
    /// # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let election = LeaderElection::new(
    ///     kube::Api::<Lease>::default_namespaced(client.clone()),
    ///     "configmap-controller",
    ///     LeaderElectionConfig::default().release_on_cancel(true),
    /// )?;
    /// Controller::<ConfigMap>::for_kind(client)
    ///     .leader_elected(election)
    ///     .shutdown_on_signal()
    ///     .run(reconcile, Arc::new(()))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn leader_elected(mut self, election: LeaderElection) -> Self {
        self.election = Some(election);
        self
    }

    /// Checks that a controller sharded over `ring` watches only its share and is
    /// not leader-elected too, and claims the ring's run.
    fn check_sharded(&self, ring: &Ring) -> Result<RunGuard, ControllerError> {
        let unsharded = |informer: String, reason| ControllerError::Sharding {
            informer: Some(informer),
            reason,
        };
        if self.election.is_some() {
            return Err(ControllerError::Sharding {
                informer: None,
                reason: "a sharded controller cannot be leader-elected too: its shard's membership lease decides when it reconciles",
            });
        }
        let wanted = ring.selector();
        let selects = |selector: Option<String>| {
            selector.is_some_and(|s| s.split(',').any(|r| r.trim() == wanted))
        };
        if !selects(self.primary.label_selector().map(str::to_owned)) {
            return Err(unsharded(
                format!("{}/{}", self.name, short_type_name::<K>()),
                "the primary informer does not select the shard's label: make it with InformerScope::labels(ring.selector())",
            ));
        }
        for s in self.sources.iter().filter(|s| s.is_owned()) {
            if !selects(s.label_selector()) {
                return Err(unsharded(
                    format!("{}/{}", self.name, s.kind()),
                    "an owned informer does not select the shard's label: make it with InformerScope::labels(ring.selector())",
                ));
            }
        }
        ring.claim().map_err(|e| match e {
            ShardingError::LeaderElection(e) => ControllerError::LeaderElection(e),
            _ => ControllerError::Sharding {
                informer: None,
                reason: "the ring cannot run",
            },
        })
    }

    /// A lister over the primary informer's cache.
    #[must_use]
    pub fn lister(&self) -> Lister<K> {
        self.primary.lister()
    }

    /// Runs the controller until a shutdown signal (with
    /// [`shutdown_on_signal`](Self::shutdown_on_signal)), the
    /// [`graceful_shutdown_on`](Self::graceful_shutdown_on) trigger, or until the
    /// future is dropped.
    ///
    /// - `reconcile(request, ctx)` makes the world match `request.object` (`None`:
    ///   deleted) and answers an [`Action`]. It may run concurrently for different
    ///   keys, never for the same key. Its error is anything `Display` —
    ///   `kube::Error`, your own `thiserror` enum, `anyhow::Error`,
    ///   `Box<dyn Error + Send + Sync>` — logged, counted and handed to the error
    ///   policy. A panicking `reconcile` counts as an error and backs off.
    ///
    /// Steps: registers a handler on every informer; starts those not started
    /// (unless told otherwise); waits for every handler to sync; starts
    /// `concurrency` workers; on shutdown, shuts the queue down, waits for in-flight
    /// reconciles up to the graceful-shutdown timeout, removes its handlers, stops
    /// the informers it started and returns.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector_core::controller::{Action, Controller, Request};
    ///
    /// // anyhow::Error (not a std Error) is a reconcile error like any other.
    /// async fn reconcile(req: Request<ConfigMap>, _: Arc<()>) -> anyhow::Result<Action> {
    ///     let cm = req.object.ok_or_else(|| anyhow::anyhow!("{} is gone", req.key))?;
    ///     anyhow::ensure!(cm.data.is_some(), "{} has no data", req.key);
    ///     Ok(Action::done())
    /// }
    /// # async fn f(client: kube::Client) -> Result<(), reflector_core::controller::ControllerError> {
    /// Controller::<ConfigMap>::for_kind(client).run(reconcile, Arc::new(())).await
    /// # }
    /// ```
    ///
    /// # Errors
    /// - [`ControllerError::Informer`] if an informer has stopped;
    /// - [`ControllerError::CacheSyncTimeout`] if the informers did not sync in time;
    /// - [`ControllerError::GracefulShutdownTimeout`] if reconciles had to be aborted;
    /// - [`ControllerError::Signal`] if the signal handlers cannot be installed;
    /// - [`ControllerError::LeaderElection`] if the election is already running.
    ///
    /// A shutdown before the informers synced is a clean stop (`Ok`).
    ///
    /// # Cancel safety
    /// A signal or the [`graceful_shutdown_on`](Self::graceful_shutdown_on) trigger
    /// is the clean stop. Dropping the future instead aborts the workers and the
    /// informers it started at once and removes its handlers.
    pub async fn run<R, Fut, E, Ctx>(
        mut self,
        reconcile: R,
        ctx: Arc<Ctx>,
    ) -> Result<(), ControllerError>
    where
        R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + 'static,
        P: ErrorPolicy<K, E, Ctx>,
        Ctx: Send + Sync + 'static,
    {
        let shutdown = self.shutdown.take();
        let shard = self.shard.take();
        let ring_claimed = match &shard {
            Some(shard) => Some(self.check_sharded(&shard.ring)?),
            None => None,
        };
        let claimed = match &self.election {
            Some(e) => Some(e.claim().map_err(ControllerError::LeaderElection)?),
            None => None,
        };
        let mut signals = if self.shutdown_on_signal {
            Some(Signals::install().map_err(|e| ControllerError::Signal(Arc::new(e)))?)
        } else {
            None
        };
        // `cancel` starts the graceful shutdown of the loop below.
        let cancel = CancellationToken::new();
        let run = async {
            let Controller {
                name,
                primary,
                mut sources,
                concurrency,
                rate_limiter,
                metrics,
                graceful_shutdown_timeout,
                cache_sync_timeout,
                start_informers,
                shutdown_on_signal: _,
                shutdown: _,
                election,
                shard: _,
                rescope: _,
                error_policy,
            } = self;
            let gate = shard
                .as_ref()
                .map(|s| Arc::new(ShardGate::new(&s.ring, metrics.as_ref())));
            let cache = primary.indexer().clone();
            sources.insert(
                0,
                Box::new(InformerSource::new(primary, KeyMapping::Own, false)),
            );
            let labels: Vec<String> = sources
                .iter()
                .map(|s| format!("{name}/{}", s.kind()))
                .collect();

            let mut queue_config = QueueConfig::default().name(name.clone());
            if let Some(m) = &metrics {
                queue_config = queue_config.metrics(m);
            }
            let queue = WorkQueue::with_config(rate_limiter, queue_config);
            let recorder = metrics
                .as_ref()
                .map(|m| m.reconcile().init_controller(&name, concurrency));
            if let Some(m) = &metrics {
                for (s, label) in sources.iter().zip(&labels) {
                    s.export_stats(m.reflectors(), label);
                }
            }

            // Handlers first, so no event between sync and workers is lost.
            let mut registrations: Vec<(String, ActiveRegistration)> = Vec::new();
            for (i, (s, label)) in sources.iter().zip(&labels).enumerate() {
                // The primary (first) passes its own keys through the shard's gate.
                let r = s
                    .register(&queue, gate.as_ref().filter(|_| i == 0))
                    .map_err(|source| ControllerError::Informer {
                        informer: label.clone(),
                        source,
                    })?;
                registrations.push((label.clone(), r));
            }

            // Informers this run started: stopped by `informer_cancel` (a child of
            // `cancel`, also cancelled when this future is dropped).
            let informer_cancel = cancel.child_token();
            let _stop_informers = informer_cancel.clone().drop_guard();
            let mut informer_tasks = JoinSet::new();
            if start_informers {
                for (s, label) in sources.iter().zip(&labels) {
                    if let Some(run) = s.start(informer_cancel.clone()) {
                        tracing::debug!(controller = %name, informer = %label, "starting informer");
                        informer_tasks.spawn(run);
                    }
                }
            }

            // The election runs from the start (informers sync while following) and
            // stops only after the workers (so a release never precedes their end).
            let election_stop = CancellationToken::new();
            let mut election_task = JoinSet::new();
            if let Some(guard) = claimed {
                election_task.spawn(LeaderElection::run_claimed(guard, election_stop.clone()));
            }
            // A sharded controller's ring runs the same way: its lease is released
            // (on a graceful stop) only after the workers and the acknowledgements.
            if let (Some(guard), Some(gate)) = (ring_claimed, &gate) {
                let (ring, stop) = (gate.ring().clone(), election_stop.clone());
                election_task.spawn(async move { ring.run_claimed(guard, stop).await });
            }
            let ack_stop = CancellationToken::new();
            let mut ack_task = JoinSet::new();
            if let (Some(shard), Some(gate)) = (&shard, &gate) {
                ack_task.spawn((shard.acknowledge)(
                    Arc::clone(gate),
                    cache.clone(),
                    ack_stop.clone(),
                ));
            }
            // Terms follow the election, or a sharded controller's membership.
            let membership = election
                .as_ref()
                .or_else(|| gate.as_ref().map(|g| g.ring().membership()));

            let result = async {
                tracing::info!(controller = %name, "waiting for caches to sync");
                if !wait_for_sync(&registrations, &cancel, cache_sync_timeout).await? {
                    return Ok(());
                }
                tracing::info!(controller = %name, workers = concurrency, "starting workers");
                let shared = Arc::new(WorkerShared {
                    name: name.clone(),
                    queue: queue.clone(),
                    cache,
                    reconcile,
                    error_policy,
                    ctx,
                    recorder,
                    gate: gate.clone(),
                });
                let mut leadership = membership.map(LeaderElection::subscribe);
                let mut tick = tokio::time::interval(UNFINISHED_WORK_PERIOD);
                // One term per leadership (one only without an election).
                loop {
                    if let Some(rx) = leadership.as_mut() {
                        tracing::info!(controller = %name, "waiting to lead");
                        tokio::select! {
                            biased;
                            () = cancel.cancelled() => return Ok(()),
                            _ = rx.wait_for(LeaderState::is_leading) => {}
                        }
                        tracing::info!(controller = %name, "leading: reconciling every cached object");
                        for key in shared.cache.list_keys() {
                            queue.add(key);
                        }
                    }
                    let term = cancel.child_token();
                    let mut workers = JoinSet::new();
                    let mut slots: Vec<CurrentKey> = Vec::with_capacity(concurrency);
                    for _ in 0..concurrency {
                        let slot: CurrentKey = Arc::new(Mutex::new(None));
                        slots.push(Arc::clone(&slot));
                        workers.spawn(Arc::clone(&shared).worker(slot, term.clone()));
                    }
                    let lost = loop {
                        tokio::select! {
                            () = cancel.cancelled() => break false,
                            () = not_leading(leadership.as_mut()) => break true,
                            _ = tick.tick(), if metrics.is_some() => queue.update_unfinished_work(),
                            Some(joined) = workers.join_next() => {
                                // Workers only end on cancel or shutdown; log anything else.
                                if let Err(e) = joined {
                                    tracing::error!(controller = %name, error = %e, "a worker ended unexpectedly");
                                }
                            }
                        }
                    };
                    if !lost {
                        tracing::info!(controller = %name, "shutdown signal received, waiting for workers to finish");
                        queue.shut_down();
                        return shut_down_workers(&name, workers, &slots, graceful_shutdown_timeout).await;
                    }
                    term.cancel();
                    let until = membership.and_then(LeaderElection::takeover_bound);
                    tracing::warn!(controller = %name, "lost leadership: no new reconciles; waiting for those in flight");
                    let (_, keys) = stop_workers(&name, &mut workers, &slots, until).await;
                    for key in keys {
                        queue.done(&key);
                        queue.add(key);
                    }
                }
            }
            .await;

            ack_stop.cancel();
            while let Some(joined) = ack_task.join_next().await {
                if let Err(e) = joined {
                    tracing::error!(controller = %name, error = %e, "the drain acknowledgement task failed");
                }
            }
            election_stop.cancel();
            while let Some(joined) = election_task.join_next().await {
                if let Err(e) = joined {
                    tracing::error!(controller = %name, error = %e, "the leader election task failed");
                }
            }

            drop(registrations);
            informer_cancel.cancel();
            while let Some(joined) = informer_tasks.join_next().await {
                if let Err(e) = joined {
                    tracing::error!(controller = %name, error = %e, "an informer task failed");
                }
            }
            tracing::info!(controller = %name, "controller stopped");
            result
        };
        let mut run = std::pin::pin!(run);
        let stop = async {
            let trigger = async {
                match shutdown {
                    Some(trigger) => trigger.await,
                    None => std::future::pending().await,
                }
            };
            match signals.as_mut() {
                Some(signals) => tokio::select! {
                    () = trigger => {}
                    () = signals.recv() => {}
                },
                None => trigger.await,
            }
        };
        tokio::select! {
            biased;
            result = &mut run => return result,
            () = stop => cancel.cancel(),
        }
        run.await
    }
}
