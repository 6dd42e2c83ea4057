//! [`LeaderElectionMetrics`]: client-go's `leader_election_master_status`, and
//! counters of lost races and failed requests.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabels {
    name: String,
}

impl NameLabels {
    fn of(name: &str) -> Self {
        NameLabels {
            name: name.to_owned(),
        }
    }
}

/// The leader-election metric families, each labelled `name` = the lease's name:
///
/// | metric | type |
/// |---|---|
/// | `leader_election_master_status` | gauge, 1 while leading (client-go's name) |
/// | `reflector_leader_election_lost_races_total` | counter (a 409 on acquire or renew) |
/// | `reflector_leader_election_errors_total` | counter (other failed lease reads and writes) |
///
/// A handle on families that a [`Metrics`](crate::metrics::Metrics) bundle owns and
/// registers: an election reports to them once its configuration is given the
/// bundle ([`LeaderElectionConfig::metrics`](super::LeaderElectionConfig::metrics)
/// takes `&metrics`). Cheap to clone: clones share the families.
///
/// # Example
/// ```
/// use prometheus_client::registry::Registry;
/// use reflector::leader_election::LeaderElectionConfig;
/// use reflector::metrics::Metrics;
///
/// let metrics = Metrics::registered(&mut Registry::default());
/// let config = LeaderElectionConfig::default().metrics(&metrics);
/// # let _ = config;
/// ```
#[derive(Clone, Debug, Default)]
pub struct LeaderElectionMetrics {
    master_status: Family<NameLabels, Gauge>,
    lost_races: Family<NameLabels, Counter>,
    errors: Family<NameLabels, Counter>,
}

impl LeaderElectionMetrics {
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "leader_election_master_status",
            "1 while this replica leads the lease 'name', 0 while it follows (client-go's name)",
            self.master_status.clone(),
        );
        registry.register(
            "reflector_leader_election_lost_races",
            "Writes of the lease that another replica won first (409 Conflict/AlreadyExists)",
            self.lost_races.clone(),
        );
        registry.register(
            "reflector_leader_election_errors",
            "Reads and writes of the lease that failed for any reason but a lost race",
            self.errors.clone(),
        );
    }

    pub(crate) fn set_leading(&self, name: &str, leading: bool) {
        self.master_status
            .get_or_create(&NameLabels::of(name))
            .set(i64::from(leading));
    }

    pub(crate) fn lost_race(&self, name: &str) {
        self.lost_races.get_or_create(&NameLabels::of(name)).inc();
    }

    pub(crate) fn error(&self, name: &str) {
        self.errors.get_or_create(&NameLabels::of(name)).inc();
    }
}
