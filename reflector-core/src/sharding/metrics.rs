//! [`ShardingMetrics`]: a sharding ring's assignments, moves, drains and size.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RingLabels {
    ring: String,
}

impl RingLabels {
    fn of(ring: &str) -> Self {
        RingLabels {
            ring: ring.to_owned(),
        }
    }
}

/// The sharding metric families, each labelled `ring` = the ring's name:
///
/// | metric | type |
/// |---|---|
/// | `reflector_sharding_assignments_total` | counter (assignment labels written by the sharder) |
/// | `reflector_sharding_moves_total` | counter (drains started, plus relabels off an unavailable shard) |
/// | `reflector_sharding_drains_started_total` | counter (drain annotations written) |
/// | `reflector_sharding_drains_acknowledged_total` | counter (drains this shard acknowledged) |
/// | `reflector_sharding_ring_members` | gauge (available shards as this replica sees them) |
///
/// A handle on families that a [`Metrics`](crate::metrics::Metrics) bundle owns and
/// registers: a [`Sharder`](super::Sharder) reports to them once given the bundle
/// ([`Sharder::metrics`](super::Sharder::metrics) takes `&metrics`), a sharded
/// controller through its own [`Controller::metrics`](crate::controller::Controller::metrics).
/// Cheap to clone: clones share the families.
///
/// # Example
/// ```no_run
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # use reflector::informer::InformerFactory;
/// # use reflector::sharding::{Ring, Sharder};
/// use prometheus_client::registry::Registry;
/// use reflector::metrics::Metrics;
///
/// # fn f(ring: Ring, factory: InformerFactory) -> Result<(), reflector::sharding::ShardingError> {
/// let metrics = Metrics::registered(&mut Registry::default());
/// let sharder = Sharder::<ConfigMap>::new(&ring, &factory)?.metrics(&metrics);
/// # let _ = sharder;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct ShardingMetrics {
    assignments: Family<RingLabels, Counter>,
    moves: Family<RingLabels, Counter>,
    drains_started: Family<RingLabels, Counter>,
    drains_acknowledged: Family<RingLabels, Counter>,
    members: Family<RingLabels, Gauge>,
}

impl ShardingMetrics {
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "reflector_sharding_assignments",
            "Assignment labels the ring's sharder wrote (an object labelled with its shard)",
            self.assignments.clone(),
        );
        registry.register(
            "reflector_sharding_moves",
            "Objects the sharder moved off a shard: drains started plus relabels off an unavailable shard",
            self.moves.clone(),
        );
        registry.register(
            "reflector_sharding_drains_started",
            "Drain annotations the sharder wrote on objects of a live shard",
            self.drains_started.clone(),
        );
        registry.register(
            "reflector_sharding_drains_acknowledged",
            "Drains a shard acknowledged (its label and the drain annotation removed)",
            self.drains_acknowledged.clone(),
        );
        registry.register(
            "reflector_sharding_ring_members",
            "Available shards of the ring, as this replica observes them",
            self.members.clone(),
        );
    }

    pub(crate) fn assigned(&self, ring: &str) {
        self.assignments.get_or_create(&RingLabels::of(ring)).inc();
    }

    pub(crate) fn moved(&self, ring: &str) {
        self.moves.get_or_create(&RingLabels::of(ring)).inc();
    }

    pub(crate) fn drain_started(&self, ring: &str) {
        self.drains_started
            .get_or_create(&RingLabels::of(ring))
            .inc();
    }

    pub(crate) fn drain_acknowledged(&self, ring: &str) {
        self.drains_acknowledged
            .get_or_create(&RingLabels::of(ring))
            .inc();
    }

    pub(crate) fn set_members(&self, ring: &str, members: usize) {
        self.members
            .get_or_create(&RingLabels::of(ring))
            .set(i64::try_from(members).unwrap_or(i64::MAX));
    }
}
