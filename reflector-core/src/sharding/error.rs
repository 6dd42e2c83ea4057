//! [`ShardingError`]: why a ring or a sharder cannot be built or run.

use crate::leader_election::LeaderElectionError;

/// Errors of the sharding module. Failed requests to the API server are not errors:
/// the ring and the sharder log them and try again (the membership lease as leader
/// election does; an assignment patch after a per-object backoff).
///
/// # Example
/// ```
/// use k8s_openapi::api::coordination::v1::Lease;
/// use reflector::leader_election::LeaderElectionConfig;
/// use reflector::sharding::{Ring, ShardingError};
/// # fn f(client: kube::Client) {
/// let err = Ring::new(
///     kube::Api::<Lease>::namespaced(client, "default"),
///     "Widgets",
///     "shard-a",
///     LeaderElectionConfig::default(),
/// )
/// .unwrap_err();
/// assert!(matches!(err, ShardingError::InvalidName { .. }));
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ShardingError {
    /// A ring or shard name is not a DNS-1123 label (1 to 63 lowercase letters, digits
    /// and `-`, starting and ending with a letter or digit): it goes into a Lease name,
    /// a label key and a label value. Not retryable: fix the name.
    #[error("the {what} name {name:?} is not a DNS-1123 label: {reason}")]
    InvalidName {
        /// `"ring"` or `"shard"`.
        what: &'static str,
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The shard name is `sharder`, whose lease name (`<ring>-sharder`) is the ring's
    /// sharder election. Not retryable: pick another name.
    #[error("the shard name \"sharder\" is reserved for the ring's sharder election")]
    ReservedShardName,
    /// The leader-election part (membership lease or sharder election) cannot be
    /// built or run: invalid timings, no namespace, or already running. Retryable
    /// only for [`LeaderElectionError::AlreadyRunning`], once the first run ended.
    #[error("leader election for the ring failed")]
    LeaderElection(#[from] LeaderElectionError),
}
