//! [`Controller`]: the builder (the constructors that make its primary informer are
//! in `constructors.rs`; its `run` is in `run.rs`; the terms a leader-elected or
//! sharded controller reconciles in, in `term.rs` and, with the `sharding` feature,
//! `sharded.rs`; how a manager runs it, in `managed.rs`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::informer::SharedIndexInformer;
use crate::lister::Lister;
use crate::metrics::Metrics;
use crate::object::{Object, ObjectKey, ObjectRef};
use crate::workqueue::{DefaultRateLimiter, RateLimiter};

use super::action::Action;
use super::event_filter::EventFilter;
use super::footprint::{Footprint, KindUse};
use super::owner_mapping::OwnerMapping;
#[cfg(feature = "sharding")]
use super::sharded::Shard;
use super::shutdown::Trigger;
use super::source::{InformerSource, KeyMapping, WatchSource};

/// 30 s, as controller-runtime's manager `GracefulShutdownTimeout`.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// 2 min, as controller-runtime's controller `CacheSyncTimeout`.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// Reconciles the objects of one primary informer, with the keys its own events,
/// its owned children's and any watched informer's events map to, as
/// controller-runtime's `Controller` (built as its `Builder`: `For`, `Owns`,
/// `Watches`) in kube-runtime's shape.
///
/// Semantics:
///
/// - **Keys, with the cached object.** `reconcile` gets a [`Request`](super::Request): the typed
///   key ([`ObjectRef<K>`]) and the object as cached when a worker took the key, or
///   `None` once it was deleted, so cleanup runs through the same path.
/// - **After sync only.** No reconcile runs before every informer the controller
///   watches has synced and its handler has seen the initial list (events meanwhile
///   are queued). The wait is woken by the informers, never polled.
/// - **One key, one worker.** `concurrency` workers share a
///   [`WorkQueue`](crate::workqueue::WorkQueue), which never hands a key being reconciled to a second
///   worker, and re-queues it once if it changed meanwhile.
/// - **Requeues** follow the returned [`Action`]; errors go to the error policy
///   ([`Action::requeue_rate_limited`] unless [`error_policy`](Self::error_policy)
///   sets another: the key's exponential backoff from the rate limiter, which a
///   success resets).
/// - **Leader election**, several controllers in one process, `/metrics`: add the
///   controller to a [`Manager`](crate::manager::Manager), which shares one
///   election, one informer factory and one metrics registry among its
///   controllers; informers sync while following, reconciles run only while this
///   replica leads (unless [`every_replica`](Self::every_replica)).
/// - **Informers are started for you.** `run` starts every watched informer that
///   has not started and stops those it started when it returns
///   ([`start_informers(false)`](Self::start_informers) leaves that to their owner).
/// - **Shutdown.** When the [`graceful_shutdown_on`](Self::graceful_shutdown_on)
///   trigger resolves,
///   or SIGINT/SIGTERM arrives after [`shutdown_on_signal`](Self::shutdown_on_signal),
///   the queue shuts down and workers take no more keys; reconciles in flight get
///   the graceful-shutdown timeout to finish; stragglers are aborted and logged.
///   Dropping the `run` future stops everything at once.
/// - **Never behind its own writes** (on by default; see
///   [`read_your_writes`](Self::read_your_writes)): a reconcile never sees an
///   object older than the controller's last write to it.
///
/// # Example
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::controller::{Action, Controller, Request};
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
/// [`for_kind_with`](Self::for_kind_with) tunes the primary informer (selectors,
/// page size, resync, transform, indexers). Owned children and other watched kinds
/// come from a shared factory:
/// ```no_run
/// # use std::sync::Arc;
/// # use kube::ResourceExt;
/// # use k8s_openapi::api::apps::v1::Deployment;
/// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// # use reflector::controller::{Action, Controller, Request};
/// # use reflector::informer::InformerFactory;
/// # use reflector::object::ObjectRef;
/// # async fn reconcile(_: Request<Deployment>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
/// # async fn f(client: kube::Client) -> Result<(), reflector::controller::ControllerError> {
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
    pub(super) name: String,
    pub(super) primary: SharedIndexInformer<K>,
    /// Which of the primary's adds and updates are reconciled (`filter`).
    pub(super) primary_filter: Option<EventFilter<K>>,
    pub(super) sources: Vec<Box<dyn WatchSource>>,
    pub(super) concurrency: usize,
    pub(super) rate_limiter: Arc<dyn RateLimiter<ObjectKey>>,
    pub(super) metrics: Option<Metrics>,
    pub(super) graceful_shutdown_timeout: Duration,
    pub(super) cache_sync_timeout: Duration,
    pub(super) start_informers: bool,
    pub(super) shutdown_on_signal: bool,
    /// Resolves to start the graceful shutdown (`graceful_shutdown_on`).
    pub(super) shutdown: Option<Trigger>,
    /// Whether, under a manager with a leader election, it reconciles only while
    /// the replica leads (`every_replica` clears it).
    pub(super) leader_only: bool,
    /// The kinds it watches, for the manager's RBAC and readiness.
    pub(super) footprint: Footprint,
    /// Set by `sharded`.
    #[cfg(feature = "sharding")]
    pub(super) shard: Option<Shard<K>>,
    /// Rebuilds the primary informer with a label selector added to its scope
    /// (`for_kind`, `for_kind_with`, `for_api`: the controller made the informer,
    /// with its options, so `sharded` can remake it); `None` for a given informer.
    #[cfg(feature = "sharding")]
    pub(super) rescope: Option<Rescope<K>>,
    /// Whether a reconcile waits for the caches to reach the controller's own writes.
    pub(super) read_your_writes: bool,
    /// Whether live changes are reconciled before a backlog (`priority_queue`).
    pub(super) priority_queue: bool,
    pub(super) error_policy: P,
}

/// Remakes the primary informer, selecting by the given label selector too.
#[cfg(feature = "sharding")]
pub(super) type Rescope<K> = Arc<dyn Fn(&str) -> SharedIndexInformer<K> + Send + Sync>;

impl<K: Object, P> std::fmt::Debug for Controller<K, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Controller");
        d.field("name", &self.name)
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
            .field("leader_only", &self.leader_only)
            .field("footprint", &self.footprint);
        #[cfg(feature = "sharding")]
        d.field("ring", &self.shard.as_ref().map(|s| &s.ring));
        d.finish_non_exhaustive()
    }
}

impl<K> Controller<K>
where
    K: Object,
    K::DynamicType: Default,
    K::Scope: 'static,
{
    /// A controller of `primary`'s objects, with controller-runtime's defaults: named
    /// after the kind in lower case, one worker, [`DefaultRateLimiter`],
    /// errors retried with backoff ([`Action::requeue_rate_limited`] as the error
    /// policy), no metrics, 30 s graceful shutdown, 2 min cache-sync
    /// timeout, informers started by `run` if nobody started them.
    #[must_use]
    pub fn new(primary: SharedIndexInformer<K>) -> Self {
        let name = K::kind(&K::DynamicType::default()).to_lowercase();
        let mut footprint = Footprint::default();
        footprint.add_typed(&primary, KindUse::Primary);
        Controller {
            primary,
            primary_filter: None,
            sources: Vec::new(),
            concurrency: 1,
            rate_limiter: Arc::new(DefaultRateLimiter::default()),
            metrics: None,
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            start_informers: true,
            shutdown_on_signal: false,
            shutdown: None,
            leader_only: true,
            footprint,
            #[cfg(feature = "sharding")]
            shard: None,
            #[cfg(feature = "sharding")]
            rescope: None,
            read_your_writes: true,
            priority_queue: true,
            error_policy: Action::requeue_rate_limited(),
            name,
        }
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
    pub fn owns<C>(self, children: SharedIndexInformer<C>) -> Self
    where
        C: Object,
    {
        self.owns_with(children, OwnerMapping::new())
    }

    /// As [`owns`](Self::owns) with another mapping, e.g.
    /// `OwnerMapping::new().every_owner()`.
    #[must_use]
    pub fn owns_with<C>(self, children: SharedIndexInformer<C>, mapping: OwnerMapping<K>) -> Self
    where
        C: Object,
    {
        let owners = move |c: &C| mapping.owners(c);
        self.source(children, owners, KindUse::Owned, None)
    }

    /// As [`owns`](Self::owns), reconciling the owner only for the children's
    /// changes that pass `filter` (deletions always do). See [`EventFilter`].
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    /// # use reflector::controller::{Action, Controller, EventFilter, Request};
    /// # use reflector::informer::InformerFactory;
    /// # async fn reconcile(_: Request<Deployment>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
    /// # async fn f(factory: InformerFactory) -> Result<(), reflector::controller::ControllerError> {
    /// Controller::new(factory.informer::<Deployment>())
    ///     .filter(EventFilter::generation_changed())
    ///     .owns_filtered(factory.informer::<ReplicaSet>(), EventFilter::generation_changed())
    ///     .run(reconcile, Arc::new(()))
    ///     .await
    /// # }
    /// ```
    #[must_use]
    pub fn owns_filtered<C>(self, children: SharedIndexInformer<C>, filter: EventFilter<C>) -> Self
    where
        C: Object,
    {
        let mapping = OwnerMapping::new();
        let owners = move |c: &C| mapping.owners(c);
        self.source(children, owners, KindUse::Owned, Some(filter))
    }
}

impl<K: Object, P> Controller<K, P> {
    /// Reconciles the primaries `mapper` returns for each object of `informer`, on
    /// its add, update (old and new state) and delete (its last known state), as
    /// controller-runtime's `Watches` with `EnqueueRequestsFromMapFunc`. The mapper
    /// returns typed keys of `K` (a `Vec`, an `Option`, any iterator), so it cannot
    /// enqueue a key of another kind. The mapper is called on the runtime's threads
    /// as the informer delivers each change: keep it quick, and never block in it.
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
        self.source(informer, mapper, KindUse::Watched, None)
    }

    /// As [`watches`](Self::watches), for the changes of `informer` that pass
    /// `filter` (deletions always do). See [`EventFilter`].
    #[must_use]
    pub fn watches_filtered<O, I>(
        self,
        informer: SharedIndexInformer<O>,
        filter: EventFilter<O>,
        mapper: impl Fn(&O) -> I + Send + Sync + 'static,
    ) -> Self
    where
        O: Object,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.source(informer, mapper, KindUse::Watched, Some(filter))
    }

    /// Reconciles only the primary's changes that pass `filter` (deletions always
    /// do; a second call keeps what passes both), e.g.
    /// [`EventFilter::generation_changed`] so that the controller's own status
    /// writes do not reconcile again. Default: every change. See [`EventFilter`].
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::apps::v1::Deployment;
    /// # use reflector::controller::{Action, Controller, EventFilter, Request};
    /// # async fn reconcile(_: Request<Deployment>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
    /// # async fn f(client: kube::Client) -> Result<(), reflector::controller::ControllerError> {
    /// Controller::<Deployment>::for_kind(client)
    ///     .filter(EventFilter::generation_changed().or(EventFilter::labels_changed()))
    ///     .run(reconcile, Arc::new(()))
    ///     .await
    /// # }
    /// ```
    #[must_use]
    pub fn filter(mut self, filter: EventFilter<K>) -> Self {
        self.primary_filter = Some(match self.primary_filter.take() {
            Some(before) => before.and(filter),
            None => filter,
        });
        self
    }

    /// Adds a mapped source, used as `used` (owned children, or watched).
    fn source<O, I>(
        mut self,
        informer: SharedIndexInformer<O>,
        mapper: impl Fn(&O) -> I + Send + Sync + 'static,
        used: KindUse,
        filter: Option<EventFilter<O>>,
    ) -> Self
    where
        O: Object,
        I: IntoIterator<Item = ObjectRef<K>>,
    {
        self.footprint.add(&informer, used);
        let owned = used == KindUse::Owned;
        let mapper = move |o: &O| mapper(o).into_iter().map(ObjectRef::into_key).collect();
        self.sources.push(Box::new(InformerSource::new(
            informer,
            KeyMapping::Mapped(Arc::new(mapper)),
            owned,
            filter,
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
    /// [`DefaultRateLimiter`] (per-key 5 ms doubling to 1000 s, and an
    /// overall 10 qps / burst 100 bucket), as controller-runtime's.
    #[must_use]
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<ObjectKey>>) -> Self {
        self.rate_limiter = limiter;
        self
    }

    /// What to do with a key whose reconcile failed: any [`ErrorPolicy`](super::ErrorPolicy), e.g. a
    /// `fn(&Request<K>, &Error, Arc<Ctx>) -> Action`, or a fixed [`Action`].
    /// Default: [`Action::requeue_rate_limited`].
    ///
    /// The policy gets the failed reconcile's [`Request`](super::Request) (the key,
    /// and the object it saw), so it can record a Warning Event about the object:
    /// see [`ErrorPolicy`](super::ErrorPolicy).
    #[must_use]
    pub fn error_policy<Q>(self, policy: Q) -> Controller<K, Q> {
        Controller {
            name: self.name,
            primary: self.primary,
            primary_filter: self.primary_filter,
            sources: self.sources,
            concurrency: self.concurrency,
            rate_limiter: self.rate_limiter,
            metrics: self.metrics,
            graceful_shutdown_timeout: self.graceful_shutdown_timeout,
            cache_sync_timeout: self.cache_sync_timeout,
            start_informers: self.start_informers,
            shutdown_on_signal: self.shutdown_on_signal,
            shutdown: self.shutdown,
            leader_only: self.leader_only,
            footprint: self.footprint,
            #[cfg(feature = "sharding")]
            shard: self.shard,
            #[cfg(feature = "sharding")]
            rescope: self.rescope,
            read_your_writes: self.read_your_writes,
            priority_queue: self.priority_queue,
            error_policy: policy,
        }
    }

    /// Whether a reconcile waits until the caches have seen the controller's own
    /// writes (client-go's staleness mitigation). Default: true.
    ///
    /// Each write recorded for a reconcile (through the request's
    /// [`api`](super::Request::api) or [`recording`](super::Request::recording), the
    /// [`Finalizer`](super::Finalizer)'s own, [`Request::wrote`](super::Request::wrote))
    /// defers the next reconcile of that key until every cache of the written kind
    /// (the primary's, or an [`owns`](Self::owns) informer's, of the same group and
    /// resource whatever type it decodes into) has reached the write's resource version:
    /// the key is parked, holding no worker, and queued again when that informer
    /// applies the version (an event or a bookmark), or after 10 s at the latest,
    /// then reconciled whatever the cache shows (that fallback requeue fires also
    /// for a key woken earlier: one more reconcile, of a fresh cache). Counted in `stale_sync_skips_total{controller}`. Writes by
    /// others, and writes of kinds the controller has no informer for, are not
    /// waited for. With `false`, nothing is recorded or waited for.
    #[doc(alias = "ConsistencyStore")]
    #[must_use]
    pub fn read_your_writes(mut self, wait: bool) -> Self {
        self.read_your_writes = wait;
        self
    }

    /// Whether live changes are reconciled before a backlog, as controller-runtime's
    /// priority queue (its default since v0.23). Default: true.
    ///
    /// The keys of the informers' initial lists, of updates that changed no
    /// resourceVersion (resyncs, objects a relist found unchanged) and of a new
    /// leadership term's catch-up are queued at
    /// [`Priority::LOW`](crate::workqueue::Priority::LOW); every other change (an
    /// add or update with a new resourceVersion, a delete) at
    /// [`Priority::DEFAULT`](crate::workqueue::Priority::DEFAULT), and a worker takes
    /// the highest priority first. So after a restart with a large backlog, a change
    /// made meanwhile is reconciled in about the time of one reconcile per worker,
    /// not after the backlog. A requeue (an error, [`Action::requeue_after`]) keeps
    /// the key's priority; a live change raises a queued backlog key. `workqueue_depth`
    /// is reported per priority. With `false`, keys are reconciled in the order
    /// queued.
    #[must_use]
    pub fn priority_queue(mut self, on: bool) -> Self {
        self.priority_queue = on;
        self
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
    /// [`InformerFactory`](crate::informer::InformerFactory) you start, or your own
    /// task) runs them.
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
    /// of a [`CancellationToken`](tokio_util::sync::CancellationToken), a oneshot receiver, a leadership loss), as
    /// kube-runtime's `graceful_shutdown_on`; with
    /// [`shutdown_on_signal`](Self::shutdown_on_signal) too, whichever comes first.
    /// Default: none (`run` ends on a signal, an error, or when dropped).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use reflector::controller::{Action, Controller, Request};
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

    /// Under a [`Manager`](crate::manager::Manager) with a leader election,
    /// reconciles on every replica, leader or not, as controller-runtime's
    /// `NeedLeaderElection() == false`. Default: only while the replica leads.
    /// A controller run alone has no election, so this changes nothing there.
    #[must_use]
    pub fn every_replica(mut self) -> Self {
        self.leader_only = false;
        self
    }

    /// A lister over the primary informer's cache.
    #[must_use]
    pub fn lister(&self) -> Lister<K> {
        self.primary.lister()
    }
}
