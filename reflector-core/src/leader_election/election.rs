//! [`LeaderElection`]: one replica's handle on a Lease election.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::default_identity;
use super::elector::Elector;
use super::lease_lock::LeaseLock;
use super::transitions::StatePublisher;
use super::{LeaderElectionConfig, LeaderElectionError, LeaderState, LeaderTransitions};

/// Leader election on a `coordination.k8s.io/v1` Lease, with client-go's
/// `tools/leaderelection` semantics: among the replicas running an election on the
/// same lease, at most one leads at a time.
///
/// - **Acquire.** A candidate reads the lease every retry period (jittered ×
///   `1 + 1.2 × U[0,1)`, as client-go's `wait.JitterUntil`), and also at the instant
///   the lease it saw held by another expires (client-go waits for its next jittered
///   tick). Between attempts it watches the lease (client-go only polls), so it sees
///   each renewal when it happens and tries at once when the lease is released or
///   deleted (RBAC: `get`, `create`, `update` on leases as client-go, plus `watch`;
///   without `watch` the candidate is answered 403 once and then polls only). It
///   creates the lease
///   if missing, or takes it with an update conditioned on the `resourceVersion` it
///   read, when the lease has no holder or has expired. Expiry is judged on the
///   candidate's own clock: the lease expired once the candidate has seen no change
///   of it for `leaseDurationSeconds` — never from the `renewTime` written by
///   another machine, so clock skew does not matter. A 409 means another replica
///   wrote first: a lost race, logged and counted as such, not an error.
/// - **Renew.** The leader renews every retry period. If no renewal succeeds within
///   the renew deadline, counted from the last successful one, it stops leading —
///   before any other replica can see the lease expire (the lease duration, counted
///   by the others from when they saw that renewal, is longer). This is stricter
///   than client-go, which counts the deadline from the start of each renewal round
///   (up to one retry period later).
/// - **After a loss** the replica is a candidate again (client-go's `Run` returns
///   instead; a caller that wants to exit can stop on
///   [`not_leading`](Self::not_leading)).
/// - **Record.** `holderIdentity`, `leaseDurationSeconds`, `acquireTime` (kept while
///   the holder does not change), `renewTime`, and `leaseTransitions`, incremented
///   each time the holder changes.
/// - **Release.** With `release_on_cancel`, a graceful stop of the leader writes the
///   record client-go's `release` writes: `holderIdentity: ""`,
///   `leaseDurationSeconds: 1`, `acquireTime` and `renewTime` the release time,
///   `leaseTransitions` kept; a follower sees it through its watch and takes over
///   at once.
///
/// The handle is cheap to clone; clones share the state. Run it yourself with
/// [`run`](Self::run), or let a [`Manager`](crate::manager::Manager) make and run
/// it ([`Manager::leader_election`](crate::manager::Manager::leader_election)): its
/// controllers then reconcile only while leading. Readiness:
/// [`Health::leader_election`](crate::metrics::Health::leader_election).
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::coordination::v1::Lease;
/// use kube::Api;
/// use reflector::leader_election::{LeaderElection, LeaderElectionConfig};
/// use tokio_util::sync::CancellationToken;
///
/// # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let election = LeaderElection::new(
///     Api::<Lease>::namespaced(client, "default"),
///     "my-operator",
///     LeaderElectionConfig::default().release_on_cancel(true),
/// )?;
/// let stop = CancellationToken::new();
/// let run = tokio::spawn({
///     let (election, stop) = (election.clone(), stop.clone());
///     async move { election.run(stop).await }
/// });
/// election.leading().await;
/// println!("{} leads", election.identity());
/// // ... lead, until `election.not_leading()` resolves or we stop:
/// stop.cancel(); // gives the lease up (release_on_cancel)
/// run.await??;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaderElection {
    shared: Arc<Shared>,
}

/// What the clones of one election share.
pub(crate) struct Shared {
    pub(crate) lock: LeaseLock,
    pub(crate) identity: String,
    pub(crate) config: LeaderElectionConfig,
    /// Where this replica stands, and its transitions streams (locks of their own).
    pub(crate) state: StatePublisher,
    /// Whether a `run` is under way; atomic, no lock.
    running: AtomicBool,
    /// While leading: the earliest instant another replica could take the lease
    /// over (the send time of the last successful write plus the lease duration).
    /// Guarded by its own mutex, held only to read or write it.
    pub(crate) takeover_bound: Mutex<Option<Instant>>,
}

impl Shared {
    pub(crate) fn set_takeover_bound(&self, bound: Option<Instant>) {
        *self
            .takeover_bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = bound;
    }
}

impl std::fmt::Debug for LeaderElection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElection")
            .field("name", &self.shared.lock.name)
            .field("identity", &self.shared.identity)
            .field("state", &self.shared.state.current())
            .finish_non_exhaustive()
    }
}

/// Marks a run as under way; clears the mark and publishes
/// [`LeaderState::Stopped`] when dropped, however the run ends.
pub(crate) struct RunGuard {
    pub(crate) shared: Arc<Shared>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.shared.set_takeover_bound(None);
        self.shared.state.publish(LeaderState::Stopped);
        if let Some(m) = &self.shared.config.metrics {
            m.set_leading(&self.shared.lock.name, false);
        }
        self.shared.running.store(false, Ordering::SeqCst);
    }
}

impl LeaderElection {
    /// An election on the lease `name` in `api`'s namespace, with `config`.
    /// Nothing runs until [`run`](Self::run).
    ///
    /// # Errors
    /// [`LeaderElectionError::EmptyName`], [`NoNamespace`](LeaderElectionError::NoNamespace),
    /// a timing error of [`LeaderElectionConfig::validate`], or
    /// [`Hostname`](LeaderElectionError::Hostname) if no identity was set and the
    /// host name cannot be read.
    pub fn new(
        api: Api<Lease>,
        name: &str,
        config: LeaderElectionConfig,
    ) -> Result<Self, LeaderElectionError> {
        Self::with_lease_labels(api, name, config, BTreeMap::new())
    }

    /// As [`new`](Self::new), with `labels` on the lease (a ring's membership
    /// leases carry the ring's label, so the ring can list its members).
    pub(crate) fn with_lease_labels(
        api: Api<Lease>,
        name: &str,
        config: LeaderElectionConfig,
        labels: BTreeMap<String, String>,
    ) -> Result<Self, LeaderElectionError> {
        if name.is_empty() {
            return Err(LeaderElectionError::EmptyName);
        }
        if api.namespace().is_none() {
            return Err(LeaderElectionError::NoNamespace);
        }
        config.validate()?;
        let identity = match &config.identity {
            Some(id) => id.clone(),
            None => default_identity()?,
        };
        if let Some(m) = &config.metrics {
            m.set_leading(name, false);
        }
        Ok(LeaderElection {
            shared: Arc::new(Shared {
                lock: LeaseLock {
                    api,
                    name: name.to_owned(),
                    labels,
                },
                identity,
                config,
                state: StatePublisher::new(),
                running: AtomicBool::new(false),
                takeover_bound: Mutex::new(None),
            }),
        })
    }

    /// The lease's name (the `name` label of the metrics).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.shared.lock.name
    }

    /// The lease's namespace.
    pub(crate) fn namespace(&self) -> &str {
        self.shared.lock.api.namespace().unwrap_or_default()
    }

    /// This replica's identity (`holderIdentity` while it leads).
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.shared.identity
    }

    /// Where this replica stands now.
    #[must_use]
    pub fn state(&self) -> LeaderState {
        self.shared.state.current()
    }

    /// Whether this replica leads now.
    #[must_use]
    pub fn is_leader(&self) -> bool {
        self.shared.state.is_leading()
    }

    /// Every state this replica passes through from now on, none merged: the state
    /// now, then each acquisition, loss and stop in order (client-go's
    /// `OnStartedLeading` / `OnStoppedLeading` / `OnNewLeader`), however late the
    /// stream is read. See [`LeaderTransitions`].
    #[doc(alias = "OnStartedLeading")]
    #[doc(alias = "OnStoppedLeading")]
    #[doc(alias = "OnNewLeader")]
    pub fn transitions(&self) -> LeaderTransitions {
        self.shared.state.stream()
    }

    /// Resolves once this replica leads (at once if it does).
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes.
    pub async fn leading(&self) {
        let mut rx = self.shared.state.latest();
        // The sender lives in `self.shared`, so the channel cannot close here.
        let _ = rx.wait_for(LeaderState::is_leading).await;
    }

    /// Resolves once this replica does not lead (at once if it does not): the
    /// moment to stop leading work.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes.
    pub async fn not_leading(&self) {
        let mut rx = self.shared.state.latest();
        let _ = rx.wait_for(|s| !s.is_leading()).await;
    }

    /// Runs the election until `cancel` fires: a candidate until it acquires the
    /// lease, then the leader until it fails to renew (then a candidate again).
    /// On `cancel` it stops leading and, with `release_on_cancel`, gives the lease
    /// up before returning. API errors are logged, counted and retried, never
    /// returned.
    ///
    /// # Errors
    /// [`LeaderElectionError::AlreadyRunning`] if this election (or a clone) is
    /// running already.
    ///
    /// # Cancel safety
    /// Cancelling the token is the clean stop. Dropping the future stops the
    /// election at once without releasing the lease: it expires after the lease
    /// duration.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), LeaderElectionError> {
        let guard = self.claim()?;
        Self::run_claimed(guard, cancel).await;
        Ok(())
    }

    /// Runs a claimed election until `cancel` fires (as [`run`](Self::run)).
    ///
    /// Boxed here, in a function generic over nothing, so that the election is
    /// compiled once in this crate and not again in every crate whose generic
    /// controller code awaits it.
    ///
    /// # Cancel safety
    /// As [`run`](Self::run).
    pub(crate) fn run_claimed(
        guard: RunGuard,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move { Elector::new(guard).run(&cancel).await })
    }

    /// Marks the election as running, or says it already is.
    pub(crate) fn claim(&self) -> Result<RunGuard, LeaderElectionError> {
        if self.shared.running.swap(true, Ordering::SeqCst) {
            return Err(LeaderElectionError::AlreadyRunning(
                self.shared.lock.name.clone(),
            ));
        }
        Ok(RunGuard {
            shared: Arc::clone(&self.shared),
        })
    }

    /// Publishes `state` as if the election had reached it (for tests of its
    /// observers).
    #[cfg(test)]
    pub(crate) fn publish(&self, state: LeaderState) {
        self.shared.state.publish(state);
    }

    /// While leading: the earliest instant another replica could take the lease.
    pub(crate) fn takeover_bound(&self) -> Option<Instant> {
        *self
            .shared
            .takeover_bound
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
