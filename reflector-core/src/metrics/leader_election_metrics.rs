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

/// The leader-election families, labelled with the lease name.
#[derive(Clone, Debug, Default)]
pub(crate) struct LeaderElectionMetrics {
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
