//! The bundle's leader-election families, handed to an election: what makes
//! `LeaderElectionConfig::metrics(&metrics)` take the bundle while the
//! `leader_election` module never names it.

use crate::leader_election::LeaderElectionMetrics;

use super::Metrics;

impl From<&Metrics> for LeaderElectionMetrics {
    /// The bundle's leader-election families (shared, not copied).
    fn from(metrics: &Metrics) -> Self {
        metrics.leader_election().clone()
    }
}
