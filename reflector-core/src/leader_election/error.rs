//! [`LeaderElectionError`]: why a leader election cannot be built or run.

use std::sync::Arc;
use std::time::Duration;

/// Errors of the leader-election module. Failed requests to the API server are not
/// errors: the elector logs them, counts them and tries again, as client-go's.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::leader_election::{LeaderElectionConfig, LeaderElectionError};
///
/// let err = LeaderElectionConfig::default()
///     .renew_deadline(Duration::from_secs(20))
///     .validate()
///     .unwrap_err();
/// assert!(matches!(err, LeaderElectionError::LeaseDurationNotAboveRenewDeadline { .. }));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderElectionError {
    /// The lease name is empty. Not retryable: fix the name.
    #[error("the lease name is empty")]
    EmptyName,
    /// The identity is empty. Not retryable: fix the identity.
    #[error("the leader election identity is empty")]
    EmptyIdentity,
    /// The `Api<Lease>` has no namespace (`Api::all`); Leases are namespaced. Not
    /// retryable: use `Api::namespaced` or `Api::default_namespaced`.
    #[error("the Lease API has no namespace; use Api::namespaced")]
    NoNamespace,
    /// The lease duration is not a whole number of seconds of at least 1 s (the
    /// Lease stores `leaseDurationSeconds` as an integer). Not retryable.
    #[error("the lease duration {0:?} is not a whole number of seconds of at least 1 s")]
    LeaseDurationNotWholeSeconds(Duration),
    /// The lease duration is not longer than the renew deadline, so a leader could
    /// still be working when another replica takes the lease (client-go's check).
    /// Not retryable.
    #[error(
        "the lease duration {lease_duration:?} must be greater than the renew deadline {renew_deadline:?}"
    )]
    LeaseDurationNotAboveRenewDeadline {
        /// The configured lease duration.
        lease_duration: Duration,
        /// The configured renew deadline.
        renew_deadline: Duration,
    },
    /// The renew deadline is not longer than `1.2 × retry period` (client-go's
    /// `JitterFactor`), or the retry period is zero. Not retryable.
    #[error(
        "the renew deadline {renew_deadline:?} must be greater than 1.2 × the retry period {retry_period:?} (and the retry period above zero)"
    )]
    RenewDeadlineNotAboveRetryPeriod {
        /// The configured renew deadline.
        renew_deadline: Duration,
        /// The configured retry period.
        retry_period: Duration,
    },
    /// No identity was set and the host name cannot be read to make one. Not
    /// retryable: set an identity.
    #[error("cannot read the host name for the default identity")]
    Hostname(#[source] Arc<std::io::Error>),
    /// This election is already running (a second `run` of the same
    /// `LeaderElection`, e.g. two controllers given one election). Not retryable
    /// while the first run lasts.
    #[error("leader election {0} is already running")]
    AlreadyRunning(String),
}
