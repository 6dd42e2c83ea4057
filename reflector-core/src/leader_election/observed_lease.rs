//! [`ObservedLease`]: a Lease as one replica last saw it, and when it saw it change —
//! what client-go's leader election judges expiry by.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use tokio::time::Instant;

use super::lease_lock::holder;

/// A lease's spec as last seen and when this replica saw it change (its own clock).
/// A lease is valid for its `leaseDurationSeconds` after that instant — never
/// counted from the `renewTime` another machine wrote, so clock skew does not matter;
/// seeing the same record again (a re-read, a relist) does not extend it.
#[derive(Debug)]
pub(crate) struct ObservedLease {
    pub(crate) spec: LeaseSpec,
    at: Instant,
}

impl ObservedLease {
    /// `spec` seen at `now`.
    pub(crate) fn new(spec: LeaseSpec, now: Instant) -> Self {
        ObservedLease { spec, at: now }
    }

    /// Records `spec` as seen at `now`; the observation time moves only when the
    /// spec changed.
    pub(crate) fn see(&mut self, spec: LeaseSpec, now: Instant) {
        if self.spec != spec {
            *self = ObservedLease::new(spec, now);
        }
    }

    /// When the lease expires by this replica's clock.
    pub(crate) fn expiry(&self) -> Instant {
        let secs = self.spec.lease_duration_seconds.unwrap_or(0).max(0);
        self.at + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
    }

    /// The holder the lease names, if any (an empty identity is no holder).
    pub(crate) fn holder(&self) -> Option<&str> {
        holder(&self.spec)
    }
}
