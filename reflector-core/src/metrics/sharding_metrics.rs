//! The bundle's sharding families, handed to a sharder: what makes
//! `Sharder::metrics(&metrics)` take the bundle while the `sharding` module never
//! names it.

use crate::sharding::ShardingMetrics;

use super::Metrics;

impl From<&Metrics> for ShardingMetrics {
    /// The bundle's sharding families (shared, not copied).
    fn from(metrics: &Metrics) -> Self {
        metrics.sharding().clone()
    }
}
