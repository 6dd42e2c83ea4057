//! [`LeaderElectionConfig`]: the timings and options of one election.

use std::time::Duration;

use super::{LeaderElectionError, LeaderElectionMetrics};

/// 15 s, as client-go's leaderelection (`LeaseDuration` in its examples and
/// controller-runtime's manager default).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// 10 s, as client-go's leaderelection (`RenewDeadline`, controller-runtime's
/// manager default).
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// 2 s, as client-go's leaderelection (`RetryPeriod`, controller-runtime's manager
/// default).
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// client-go's `JitterFactor`: candidates wait `retry period × (1 + 1.2 × U[0,1))`
/// between attempts, and the renew deadline must exceed `1.2 × retry period`.
pub(crate) const JITTER_FACTOR: f64 = 1.2;

/// The timings and options of a [`LeaderElection`](super::LeaderElection), with
/// client-go's defaults. Checked by [`validate`](Self::validate) (which
/// `LeaderElection::new` calls) as client-go's `NewLeaderElector` checks:
/// `lease_duration > renew_deadline > 1.2 × retry_period > 0`.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use reflector::leader_election::LeaderElectionConfig;
///
/// let config = LeaderElectionConfig::default()
///     .identity("replica-a")
///     .lease_duration(Duration::from_secs(4))
///     .renew_deadline(Duration::from_secs(3))
///     .retry_period(Duration::from_secs(1))
///     .release_on_cancel(true);
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct LeaderElectionConfig {
    pub(crate) lease_duration: Duration,
    pub(crate) renew_deadline: Duration,
    pub(crate) retry_period: Duration,
    pub(crate) identity: Option<String>,
    pub(crate) release_on_cancel: bool,
    pub(crate) metrics: Option<LeaderElectionMetrics>,
}

impl Default for LeaderElectionConfig {
    /// Lease duration 15 s, renew deadline 10 s, retry period 2 s (client-go's),
    /// identity `<hostname>_<random suffix>`, no release on cancel (client-go's
    /// `ReleaseOnCancel` default), no metrics.
    fn default() -> Self {
        LeaderElectionConfig {
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            identity: None,
            release_on_cancel: false,
            metrics: None,
        }
    }
}

impl LeaderElectionConfig {
    /// How long a lease is valid after its holder last renewed it, as other
    /// replicas observe it: a follower takes the lease only once it saw no change
    /// for this long (measured on its own clock, so clock skew does not matter).
    /// A whole number of seconds (the Lease stores integer seconds). Default 15 s,
    /// as client-go's.
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// How long the leader keeps trying to renew before it stops leading, counted
    /// from the last successful renewal. Default 10 s, as client-go's.
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// How often the leader renews, and the base of the jittered wait between a
    /// candidate's attempts. Default 2 s, as client-go's.
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// This replica's identity, written as the lease's `holderIdentity`; unique per
    /// replica. Default: the host name (the pod name in Kubernetes), `_`, and a
    /// random suffix, as controller-runtime's manager.
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// Whether a graceful stop gives the lease up (empty `holderIdentity`,
    /// `leaseDurationSeconds` 1, as client-go's `ReleaseOnCancel`), so a follower
    /// takes over on its next attempt instead of after the lease expires. Only
    /// safe if the leading work has stopped when the election is cancelled, which a
    /// [`Manager`](crate::manager::Manager) ensures. Default false, as client-go's.
    pub fn release_on_cancel(mut self, release: bool) -> Self {
        self.release_on_cancel = release;
        self
    }

    /// Reports `leader_election_master_status{name}` (1 while leading, else 0, as
    /// client-go's) and the lost-race and error counters ([`LeaderElectionMetrics`])
    /// to `metrics`: the process's [`Metrics`](crate::metrics::Metrics) bundle, given
    /// as `&metrics`. Default: no metrics.
    pub fn metrics(mut self, metrics: impl Into<LeaderElectionMetrics>) -> Self {
        self.metrics = Some(metrics.into());
        self
    }

    /// Checks the timings and the identity (if set) as client-go's
    /// `NewLeaderElector` does.
    ///
    /// # Errors
    /// [`LeaderElectionError::LeaseDurationNotWholeSeconds`],
    /// [`LeaseDurationNotAboveRenewDeadline`](LeaderElectionError::LeaseDurationNotAboveRenewDeadline),
    /// [`RenewDeadlineNotAboveRetryPeriod`](LeaderElectionError::RenewDeadlineNotAboveRetryPeriod)
    /// or [`EmptyIdentity`](LeaderElectionError::EmptyIdentity).
    pub fn validate(&self) -> Result<(), LeaderElectionError> {
        let (lease_duration, renew_deadline, retry_period) =
            (self.lease_duration, self.renew_deadline, self.retry_period);
        if lease_duration < Duration::from_secs(1) || lease_duration.subsec_nanos() != 0 {
            return Err(LeaderElectionError::LeaseDurationNotWholeSeconds(
                lease_duration,
            ));
        }
        if lease_duration <= renew_deadline {
            return Err(LeaderElectionError::LeaseDurationNotAboveRenewDeadline {
                lease_duration,
                renew_deadline,
            });
        }
        if retry_period.is_zero() || renew_deadline <= retry_period.mul_f64(JITTER_FACTOR) {
            return Err(LeaderElectionError::RenewDeadlineNotAboveRetryPeriod {
                renew_deadline,
                retry_period,
            });
        }
        if self.identity.as_deref().is_some_and(str::is_empty) {
            return Err(LeaderElectionError::EmptyIdentity);
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as written in the lease.
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// `<hostname>_<random suffix>`, as controller-runtime's manager builds its default
/// identity (`os.Hostname() + "_" + uuid`).
pub(crate) fn default_identity() -> Result<String, LeaderElectionError> {
    let host = hostname::get()
        .map_err(|e| LeaderElectionError::Hostname(std::sync::Arc::new(e)))?
        .to_string_lossy()
        .into_owned();
    let suffix = crate::random::random_u64();
    Ok(format!("{host}_{suffix:016x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn defaults_are_client_gos_and_valid() {
        let c = LeaderElectionConfig::default();
        assert_eq!(
            (c.lease_duration, c.renew_deadline, c.retry_period),
            (S(15), S(10), S(2))
        );
        assert!(!c.release_on_cancel);
        c.validate().unwrap();
    }

    #[test]
    fn timings_are_checked_as_client_go_does() {
        let base = LeaderElectionConfig::default;
        assert!(matches!(
            base().lease_duration(S(10)).validate(),
            Err(LeaderElectionError::LeaseDurationNotAboveRenewDeadline { .. })
        ));
        // 10 s is not above 1.2 × 9 s = 10.8 s.
        assert!(matches!(
            base().retry_period(S(9)).validate(),
            Err(LeaderElectionError::RenewDeadlineNotAboveRetryPeriod { .. })
        ));
        assert!(matches!(
            base().retry_period(Duration::ZERO).validate(),
            Err(LeaderElectionError::RenewDeadlineNotAboveRetryPeriod { .. })
        ));
        assert!(matches!(
            base()
                .lease_duration(Duration::from_millis(15_500))
                .validate(),
            Err(LeaderElectionError::LeaseDurationNotWholeSeconds(_))
        ));
        assert!(matches!(
            base().identity("").validate(),
            Err(LeaderElectionError::EmptyIdentity)
        ));
        // Just inside every bound.
        base()
            .lease_duration(S(3))
            .renew_deadline(Duration::from_millis(2_500))
            .retry_period(S(2))
            .validate()
            .unwrap();
    }

    #[test]
    fn default_identity_is_hostname_and_a_random_suffix() {
        let (a, b) = (default_identity().unwrap(), default_identity().unwrap());
        let host = hostname::get().unwrap().to_string_lossy().into_owned();
        assert!(a.starts_with(&format!("{host}_")), "{a}");
        assert_ne!(a, b, "two replicas on one host differ");
    }
}
