//! [`Metrics`]: the metric families one process shares among its controllers.

use prometheus_client::registry::Registry;

use super::{ReconcileMetrics, ReflectorCollector};
use crate::events::EventMetrics;
use crate::informer::SharedIndexInformer;
use crate::leader_election::LeaderElectionMetrics;
use crate::object::Object;
#[cfg(feature = "sharding")]
use crate::sharding::ShardingMetrics;
use crate::workqueue::WorkQueueMetrics;

/// Every family a controller reports to: controller-runtime's `controller_runtime_*`,
/// client-go's `workqueue_*` (one queue per controller, named after it) and the
/// `reflector_*` counters of the informers' reflectors.
///
/// Each subsystem owns its families ([`WorkQueueMetrics`], [`EventMetrics`], the
/// informers' reflector counters, ...); this bundle holds one handle to each, so a
/// process registers everything at once and hands the same `Metrics` to every
/// controller, queue, recorder and leader election. Setters that take metrics
/// (such as [`QueueConfig::metrics`](crate::workqueue::QueueConfig::metrics)) take
/// the bundle or their subsystem's families alone: the bundle implements
/// [`AsRef`] for each.
///
/// controller-runtime's controller metrics, each labelled `controller` = the
/// controller's name:
///
/// | metric | type |
/// |---|---|
/// | `controller_runtime_reconcile_total{controller,result}` | counter; `result` ∈ `success`, `error`, `requeue`, `requeue_after` |
/// | `controller_runtime_reconcile_errors_total` | counter |
/// | `controller_runtime_terminal_reconcile_errors_total` | counter (errors the policy did not retry) |
/// | `controller_runtime_reconcile_panics_total` | counter |
/// | `controller_runtime_reconcile_time_seconds` | histogram, controller-runtime's buckets (5 ms – 60 s) |
/// | `controller_runtime_max_concurrent_reconciles` | gauge |
/// | `controller_runtime_active_workers` | gauge (workers inside a reconcile) |
/// | `stale_sync_skips_total` | counter (reconciles deferred until the cache reached the controller's own last write; kube-controller-manager's name) |
///
/// client-go's work-queue metrics ([`WorkQueueMetrics`]), each labelled `name` =
/// the queue's name ([`QueueConfig::metrics`](crate::workqueue::QueueConfig::metrics)):
///
/// | metric | type |
/// |---|---|
/// | `workqueue_depth` | gauge (labels `name`, `priority`) |
/// | `workqueue_adds_total` | counter |
/// | `workqueue_queue_duration_seconds` | histogram |
/// | `workqueue_work_duration_seconds` | histogram |
/// | `workqueue_retries_total` | counter |
/// | `workqueue_unfinished_work_seconds` | gauge (float) |
/// | `workqueue_longest_running_processor_seconds` | gauge (float) |
///
/// The reflectors' counters: see [`Metrics::informer`].
///
/// Leader election, reported to by a
/// [`LeaderElection`](crate::leader_election::LeaderElection) configured with
/// [`LeaderElectionConfig::metrics`](crate::leader_election::LeaderElectionConfig::metrics),
/// each labelled `name` = the lease's name:
///
/// | metric | type |
/// |---|---|
/// | `leader_election_master_status` | gauge, 1 while leading (client-go's name) |
/// | `reflector_leader_election_lost_races_total` | counter (a 409 on acquire or renew) |
/// | `reflector_leader_election_errors_total` | counter (other failed lease reads and writes) |
///
/// The event recorders' drops ([`EventMetrics`]), reported to by an
/// [`events::Recorder`](crate::events::Recorder)
/// configured with [`RecorderConfig::metrics`](crate::events::RecorderConfig::metrics):
///
/// | metric | type |
/// |---|---|
/// | `reflector_events_dropped_total{controller,reason}` | counter; `reason` ∈ `spam_filter`, `buffer_full`, `rejected`, `retries_exhausted` |
///
/// Sharding (feature `sharding`), reported to by a `Sharder` and a sharded
/// controller given the bundle, each labelled `ring` = the ring's name:
///
/// | metric | type |
/// |---|---|
/// | `reflector_sharding_assignments_total` | counter (assignment labels written by the sharder) |
/// | `reflector_sharding_moves_total` | counter (drains started, plus relabels off an unavailable shard) |
/// | `reflector_sharding_drains_started_total` | counter (drain annotations written) |
/// | `reflector_sharding_drains_acknowledged_total` | counter (drains this shard acknowledged) |
/// | `reflector_sharding_ring_members` | gauge (available shards as this replica sees them) |
///
/// Register it once per [`Registry`] and hand clones (cheap: shared handles) to every
/// controller with [`Controller::metrics`](crate::controller::Controller::metrics);
/// registering families twice in one registry would make the exposition invalid.
///
/// # Example
/// ```
/// use reflector::metrics::{render_metrics, Metrics, Registry};
///
/// let mut registry = Registry::default();
/// let metrics = Metrics::registered(&mut registry);
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # let informer = reflector::informer::SharedIndexInformer::new(
/// #     reflector::listwatch::FakeSource::<ConfigMap>::new());
/// metrics.informer("configmaps", &informer);
/// assert!(render_metrics(&registry).contains("reflector_lists_total{name=\"configmaps\"} 0"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    reconcile: ReconcileMetrics,
    workqueue: WorkQueueMetrics,
    reflectors: ReflectorCollector,
    leader_election: LeaderElectionMetrics,
    events: EventMetrics,
    #[cfg(feature = "sharding")]
    sharding: ShardingMetrics,
}

impl Metrics {
    /// Empty families, not yet registered.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// New families, registered in `registry`.
    #[must_use]
    pub fn registered(registry: &mut Registry) -> Self {
        let metrics = Self::new();
        metrics.register(registry);
        metrics
    }

    /// Registers every family in `registry`. Register once per registry.
    pub fn register(&self, registry: &mut Registry) {
        self.reconcile.register(registry);
        self.workqueue.register(registry);
        self.reflectors.register(registry);
        self.leader_election.register(registry);
        self.events.register(registry);
        #[cfg(feature = "sharding")]
        self.sharding.register(registry);
    }

    /// Exports the counters of `informer`'s reflector under `name` (all zero until it
    /// starts), read at each scrape; a controller does this for its own informers.
    /// Exporting another informer under the same name replaces the first.
    ///
    /// | metric | counts |
    /// |---|---|
    /// | `reflector_lists_total{name}` | lists (each relist too) |
    /// | `reflector_list_pages_total` | list pages read |
    /// | `reflector_relists_total` | lists after the first |
    /// | `reflector_watches_total` | watches opened |
    /// | `reflector_short_watches_total` | watches that ended at once with no event |
    /// | `reflector_watch_events_total` | watch events applied |
    /// | `reflector_bookmarks_total` | bookmarks |
    /// | `reflector_unexpected_kind_events_total` | events of another kind, skipped |
    /// | `reflector_resyncs_total` | resyncs |
    /// | `reflector_handler_panics_total` | event handlers that panicked |
    /// | `informer_queued_items{name}` | (a gauge) items waiting in the informer's queue |
    /// | `reflector_errors_total{name,reason}` | errors; `reason` ∈ `expired`, `too_large_resource_version`, `too_many_requests`, `internal_error`, `connection_refused`, `decode`, `very_short_watch`, `other` |
    /// | `store_resource_version{name}` | gauge: the resource version the cache has reached (client-go's name; 0 before the first list) |
    pub fn informer<K: Object>(&self, name: &str, informer: &SharedIndexInformer<K>) {
        self.reflectors.add(name, informer);
    }

    /// The `reflector_sharding_*` families.
    #[cfg(feature = "sharding")]
    pub(crate) fn sharding(&self) -> &ShardingMetrics {
        &self.sharding
    }

    /// The `controller_runtime_*` families.
    pub(crate) fn reconcile(&self) -> &ReconcileMetrics {
        &self.reconcile
    }

    /// The `reflector_*` collector.
    pub(crate) fn reflectors(&self) -> &ReflectorCollector {
        &self.reflectors
    }

    /// The leader-election families.
    pub(crate) fn leader_election(&self) -> &LeaderElectionMetrics {
        &self.leader_election
    }
}

/// The work queues' families, for [`QueueConfig::metrics`](crate::workqueue::QueueConfig::metrics).
impl AsRef<WorkQueueMetrics> for Metrics {
    fn as_ref(&self) -> &WorkQueueMetrics {
        &self.workqueue
    }
}

/// The event recorders' family, for [`RecorderConfig::metrics`](crate::events::RecorderConfig::metrics).
impl AsRef<EventMetrics> for Metrics {
    fn as_ref(&self) -> &EventMetrics {
        &self.events
    }
}
