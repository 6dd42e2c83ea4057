//! [`Elector`]: one run of an election, as client-go's `LeaderElector`
//! (`acquire`, `renew`, `tryAcquireOrRenew`, `release`).

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::jittered;

use super::LeaderState;
use super::ObservedLease;
use super::config::JITTER_FACTOR;
use super::election::RunGuard;
use super::lease_lock::{LeaseChange, Write, record};

/// How one attempt to acquire or renew ended.
#[derive(Debug, PartialEq, Eq)]
enum Attempt {
    /// This replica holds the lease; the request that wrote it was sent at this
    /// instant.
    Held(Instant),
    /// Another replica holds the lease and it has not expired.
    HeldByOther(String),
    /// Another replica wrote first (409).
    LostRace,
    /// The request failed.
    Failed,
}

/// One run of an election. Owned by the `run` future; not shared.
pub(crate) struct Elector {
    guard: RunGuard,
    observed: Option<ObservedLease>,
    /// The lease as the server last returned it (its `resourceVersion` is the
    /// precondition of the next update).
    lease: Option<Lease>,
    /// Whether a candidate may watch the lease between attempts (false once the
    /// server answered 403: then it polls only, as client-go).
    watch_allowed: bool,
}

impl Elector {
    pub(crate) fn new(guard: RunGuard) -> Self {
        Elector {
            guard,
            observed: None,
            lease: None,
            watch_allowed: true,
        }
    }

    fn name(&self) -> &str {
        &self.guard.shared.lock.name
    }

    fn identity(&self) -> &str {
        &self.guard.shared.identity
    }

    /// Whether the lease as last seen names this replica (client-go's `IsLeader`).
    fn observed_as_holder(&self) -> bool {
        self.observed
            .as_ref()
            .and_then(ObservedLease::holder)
            .is_some_and(|h| h == self.identity())
    }

    /// Whether the lease as last seen has not expired at `now`, by this replica's
    /// own clock (client-go's `isLeaseValid`).
    fn observed_valid(&self, now: Instant) -> bool {
        self.observed_expiry().is_some_and(|expiry| expiry > now)
    }

    /// When the lease as last seen expires, by this replica's own clock: its
    /// `leaseDurationSeconds` after this replica saw it change.
    fn observed_expiry(&self) -> Option<Instant> {
        self.observed.as_ref().map(ObservedLease::expiry)
    }

    /// When a candidate tries again: at `retry_at` (one jittered retry period after
    /// its last attempt, as client-go's `JitterUntil`) — or, if sooner, the instant
    /// the lease it saw held by another expires, so an abandoned lease is taken at its
    /// expiry rather than up to one more jittered period later.
    fn next_attempt(&self, retry_at: Instant) -> Instant {
        match self.observed_expiry() {
            Some(expiry) if self.observed_other_holder().is_some() => retry_at.min(expiry),
            _ => retry_at,
        }
    }

    /// Records the lease as the server returned it; the observation time moves only
    /// when the spec changed.
    fn observe(&mut self, lease: Lease) {
        let spec = lease.spec.clone().unwrap_or_default();
        match &mut self.observed {
            Some(observed) => observed.see(spec, Instant::now()),
            None => self.observed = Some(ObservedLease::new(spec, Instant::now())),
        }
        self.lease = Some(lease);
    }

    /// The other replica the lease as last seen names, if any.
    fn observed_other_holder(&self) -> Option<String> {
        self.observed
            .as_ref()
            .and_then(ObservedLease::holder)
            .filter(|h| *h != self.identity())
            .map(str::to_owned)
    }

    fn publish(&self, state: LeaderState) {
        let leading = state.is_leading();
        self.guard.shared.state.publish(state);
        if let Some(m) = &self.guard.shared.config.metrics {
            m.set_leading(self.name(), leading);
        }
    }

    fn lost_race(&self, what: &str) {
        tracing::debug!(lease = %self.name(), identity = %self.identity(), "lost the race to {what} the lease");
        if let Some(m) = &self.guard.shared.config.metrics {
            m.lost_race(self.name());
        }
    }

    fn failed(&self, what: &str, error: &kube::Error) {
        tracing::warn!(lease = %self.name(), identity = %self.identity(), %error, "cannot {what} the lease");
        if let Some(m) = &self.guard.shared.config.metrics {
            m.error(self.name());
        }
    }

    /// One attempt to acquire or renew the lease, as client-go's
    /// `tryAcquireOrRenew`.
    ///
    /// # Cancel safety
    /// Dropping it may leave a write done without this replica knowing; the next
    /// attempt reads the lease again.
    async fn try_acquire_or_renew(&mut self) -> Attempt {
        let lock = self.guard.shared.lock.clone();
        let config = &self.guard.shared.config;
        let seconds = config.lease_duration_seconds();
        let sent = Instant::now();
        let now = MicroTime(Timestamp::now());
        let identity = self.identity().to_owned();

        // 1. The leader's fast path: update the lease as last seen, optimistically.
        if self.observed_as_holder()
            && self.observed_valid(sent)
            && let (Some(lease), Some(o)) = (self.lease.clone(), self.observed.as_ref())
        {
            let spec = record(
                &identity,
                seconds,
                o.spec.acquire_time.clone(),
                now.clone(),
                o.spec.lease_transitions.unwrap_or(0),
            );
            match lock.update(lease, spec).await {
                Write::Done(lease) => {
                    self.observe(*lease);
                    return Attempt::Held(sent);
                }
                Write::LostRace => {
                    tracing::debug!(lease = %self.name(), "optimistic renewal conflicted; reading the lease");
                }
                Write::Failed(error) => {
                    tracing::debug!(lease = %self.name(), %error, "optimistic renewal failed; reading the lease");
                }
            }
        }

        // 2. Read the lease; create it if missing.
        let lease = match lock.get().await {
            Ok(Some(lease)) => lease,
            Ok(None) => {
                let spec = record(&identity, seconds, Some(now.clone()), now, 0);
                let write = lock.create(spec).await;
                return self.settle(write, "create", sent);
            }
            Err(e) => {
                self.failed("read", &e);
                return Attempt::Failed;
            }
        };

        // 3. Held by another and not expired by our own clock: wait.
        self.observe(lease.clone());
        if !self.observed_as_holder()
            && self.observed_valid(sent)
            && let Some(other) = self.observed_other_holder()
        {
            return Attempt::HeldByOther(other);
        }

        // 4. Take it (or renew it on the slow path), conditioned on what we read.
        let old = self
            .observed
            .as_ref()
            .map(|o| o.spec.clone())
            .unwrap_or_default();
        let spec = if self.observed_as_holder() {
            record(
                &identity,
                seconds,
                old.acquire_time,
                now,
                old.lease_transitions.unwrap_or(0),
            )
        } else {
            record(
                &identity,
                seconds,
                Some(now.clone()),
                now,
                old.lease_transitions.unwrap_or(0).saturating_add(1),
            )
        };
        let write = lock.update(lease, spec).await;
        self.settle(write, "update", sent)
    }

    /// The attempt's outcome from the write (`what`: create or update) sent at
    /// `sent`: the lease held, a lost race, or a failure, each logged and counted.
    fn settle(&mut self, write: Write, what: &str, sent: Instant) -> Attempt {
        match write {
            Write::Done(lease) => {
                self.observe(*lease);
                Attempt::Held(sent)
            }
            Write::LostRace => {
                self.lost_race(what);
                Attempt::LostRace
            }
            Write::Failed(e) => {
                self.failed(what, &e);
                Attempt::Failed
            }
        }
    }

    /// Runs until `cancel` fires: candidate, leader, candidate again after a loss.
    ///
    /// # Cancel safety
    /// Cancelling the token is the clean stop (with the release if configured);
    /// dropping the future stops at once, without a release.
    pub(crate) async fn run(mut self, cancel: &CancellationToken) {
        loop {
            let Some(acquired) = self.acquire(cancel).await else {
                return;
            };
            tracing::info!(lease = %self.name(), identity = %self.identity(), "acquired the lease; leading");
            if self.lead(acquired, cancel).await {
                self.publish(LeaderState::Stopped);
                if self.guard.shared.config.release_on_cancel {
                    self.release().await;
                }
                return;
            }
        }
    }

    /// Tries every jittered retry period until the lease is held (`Some(send time
    /// of the winning write)`) or `cancel` fires (`None`).
    ///
    /// Between attempts the candidate also watches the lease (client-go polls
    /// only): a renewal is then observed when it happens, so the expiry this
    /// replica counts starts at the real last renewal instead of up to a jittered
    /// retry period later, and a released or deleted lease is tried at once. The
    /// semantics are client-go's — expiry is still judged on this replica's clock
    /// from when it saw the record change; if the watch cannot be opened or ends,
    /// polling alone goes on and the next attempt reopens it.
    ///
    /// # Cancel safety
    /// Cancelling the token returns `None`; dropping the future is safe (an attempt
    /// in flight may have written the lease, which the next run reads).
    async fn acquire(&mut self, cancel: &CancellationToken) -> Option<Instant> {
        let retry = self.guard.shared.config.retry_period;
        let mut changes: Option<BoxStream<'static, LeaseChange>> = None;
        loop {
            let attempt = tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                attempt = self.try_acquire_or_renew() => attempt,
            };
            match attempt {
                Attempt::Held(sent) => return Some(sent),
                Attempt::HeldByOther(holder) => self.publish(LeaderState::Following {
                    holder: Some(holder),
                }),
                Attempt::LostRace | Attempt::Failed => self.publish(LeaderState::Following {
                    holder: self.observed_other_holder(),
                }),
            }
            if changes.is_none() {
                changes = self.watch_from_observed();
            }
            let retry_at = Instant::now() + jittered(retry, JITTER_FACTOR);
            loop {
                let change = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return None,
                    () = tokio::time::sleep_until(self.next_attempt(retry_at)) => break,
                    change = next_change(&mut changes) => change,
                };
                match change {
                    Some(LeaseChange::Written(lease)) => {
                        self.observe(*lease);
                        if self.observed_other_holder().is_none() {
                            break; // released: try now
                        }
                    }
                    Some(LeaseChange::Deleted) => break, // create it now
                    Some(LeaseChange::Forbidden) => {
                        tracing::info!(lease = %self.name(), "no permission to watch the lease; polling only, as client-go");
                        self.watch_allowed = false;
                        changes = None;
                    }
                    None => changes = None,
                }
            }
        }
    }

    /// A watch of the lease from the resourceVersion last read, if one was read and
    /// watching is allowed.
    fn watch_from_observed(&self) -> Option<BoxStream<'static, LeaseChange>> {
        if !self.watch_allowed {
            return None;
        }
        let version = self.lease.as_ref()?.metadata.resource_version.clone()?;
        Some(self.guard.shared.lock.changes(version))
    }

    /// Leads from the write sent at `renewed`, renewing every retry period, until
    /// `cancel` fires (`true`) or no renewal succeeded within the renew deadline
    /// (`false`; the state is then `Following`).
    async fn lead(&mut self, mut renewed: Instant, cancel: &CancellationToken) -> bool {
        let config = self.guard.shared.config.clone();
        let shared = std::sync::Arc::clone(&self.guard.shared);
        shared.set_takeover_bound(Some(renewed + config.lease_duration));
        self.publish(LeaderState::Leading);
        loop {
            let deadline = renewed + config.renew_deadline;
            tokio::select! {
                biased;
                () = cancel.cancelled() => return true,
                () = tokio::time::sleep(config.retry_period) => {}
            }
            let attempts = async {
                loop {
                    match self.try_acquire_or_renew().await {
                        Attempt::Held(sent) => return Some(sent),
                        Attempt::HeldByOther(_) => return None,
                        Attempt::LostRace | Attempt::Failed => {
                            tokio::time::sleep(config.retry_period).await;
                        }
                    }
                }
            };
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => return true,
                outcome = tokio::time::timeout_at(deadline, attempts) => outcome,
            };
            match outcome {
                Ok(Some(sent)) => {
                    renewed = sent;
                    shared.set_takeover_bound(Some(sent + config.lease_duration));
                }
                Ok(None) | Err(_) => {
                    tracing::warn!(lease = %self.name(), identity = %self.identity(),
                        renew_deadline = ?config.renew_deadline, "failed to renew the lease; stopped leading");
                    self.publish(LeaderState::Following {
                        holder: self.observed_other_holder(),
                    });
                    return false;
                }
            }
        }
    }

    /// Gives the lease up if this replica still holds it, writing the record
    /// client-go's `release` writes: `holderIdentity: ""`, `leaseDurationSeconds: 1`,
    /// `acquireTime` and `renewTime` now, `leaseTransitions` kept. Bounded by the
    /// renew deadline; a failure is logged (the lease then expires normally).
    async fn release(&mut self) {
        let deadline = self.guard.shared.config.renew_deadline;
        let lock = self.guard.shared.lock.clone();
        let released = tokio::time::timeout(deadline, async {
            let lease = match lock.get().await {
                Ok(Some(lease)) => lease,
                Ok(None) => return,
                Err(e) => return self.failed("read (to release)", &e),
            };
            self.observe(lease.clone());
            if !self.observed_as_holder() {
                return;
            }
            let now = MicroTime(Timestamp::now());
            let transitions = self
                .observed
                .as_ref()
                .and_then(|o| o.spec.lease_transitions)
                .unwrap_or(0);
            let spec = record("", 1, Some(now.clone()), now, transitions);
            match lock.update(lease, spec).await {
                Write::Done(lease) => {
                    self.observe(*lease);
                    tracing::info!(lease = %self.name(), identity = %self.identity(), "released the lease");
                }
                Write::LostRace => self.lost_race("release"),
                Write::Failed(e) => self.failed("release", &e),
            }
        })
        .await;
        if released.is_err() {
            tracing::warn!(lease = %self.name(), ?deadline, "releasing the lease timed out");
        }
    }
}

/// The next change on `changes`, `None` once the watch ended (pending forever
/// without a watch).
///
/// # Cancel safety
/// Cancel-safe: `StreamExt::next` on a stream the caller keeps.
async fn next_change(changes: &mut Option<BoxStream<'static, LeaseChange>>) -> Option<LeaseChange> {
    match changes {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kube::Api;

    use super::*;
    use crate::leader_election::{LeaderElection, LeaderElectionConfig};

    fn elector() -> Elector {
        // A client that is never used: these tests only feed observations.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let election = LeaderElection::new(
            Api::namespaced(client, "ns"),
            "lease",
            LeaderElectionConfig::default().identity("me"),
        )
        .unwrap();
        Elector::new(election.claim().unwrap())
    }

    fn lease(holder: &str, seconds: i32, renew_secs: i64) -> Lease {
        let mut l = Lease::default();
        let t = Timestamp::from_second(renew_secs).unwrap();
        l.spec = Some(record(holder, seconds, Some(MicroTime(t)), MicroTime(t), 0));
        l
    }

    /// The lease is valid for `leaseDurationSeconds` after this replica last saw
    /// it change; seeing the same record again does not extend it, a new one
    /// (a renewal: new renewTime) does.
    #[tokio::test(start_paused = true)]
    async fn validity_counts_from_the_last_observed_change() {
        let mut e = elector();
        assert!(!e.observed_valid(Instant::now()), "nothing observed");
        e.observe(lease("other", 15, 100));
        let seen = Instant::now();
        tokio::time::advance(Duration::from_secs(10)).await;
        e.observe(lease("other", 15, 100));
        assert!(e.observed_valid(seen + Duration::from_secs(14)));
        assert!(
            !e.observed_valid(seen + Duration::from_secs(15)),
            "the unchanged record did not extend the lease"
        );
        e.observe(lease("other", 15, 101));
        assert!(e.observed_valid(seen + Duration::from_secs(24)));
        assert_eq!(e.observed_other_holder().as_deref(), Some("other"));
        assert!(!e.observed_as_holder());
    }

    /// A released record (`leaseDurationSeconds: 1`, no holder) expires after one
    /// second and names no holder.
    #[tokio::test(start_paused = true)]
    async fn a_released_record_names_nobody_and_expires_in_a_second() {
        let mut e = elector();
        let mut released = lease("x", 1, 5);
        released.spec.as_mut().unwrap().holder_identity = Some(String::new());
        e.observe(released);
        let seen = Instant::now();
        assert_eq!(e.observed_other_holder(), None);
        assert!(!e.observed_valid(seen + Duration::from_secs(1)));
        e.observe(lease("me", 15, 6));
        assert!(e.observed_as_holder());
        assert_eq!(e.observed_other_holder(), None, "never names itself");
    }
}
