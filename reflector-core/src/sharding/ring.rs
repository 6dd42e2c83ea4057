//! [`Ring`]: one replica's membership in a ring of shards.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::leader_election::{LeaderElection, LeaderElectionConfig, RunGuard};

use super::ShardingError;
use super::labels::{self, RING_LABEL, SHARDER};
use super::members;

/// One replica's membership in a ring: the shards that split one controller's
/// objects between them.
///
/// - **Membership.** [`run`](Self::run) holds this shard's own Lease,
///   `<ring>-<shard>`, labelled `reflector.rs/ring=<ring>`, with leader-election
///   timings (the `config` given to [`new`](Self::new): lease duration 15 s, renew
///   deadline 10 s, retry period 2 s by default, as client-go's leaderelection). The
///   shard's name is the lease's `holderIdentity`. A graceful stop (cancelling the
///   token) releases the lease — empty holder — so the ring sees the shard leave at
///   once; an abort leaves it to expire. A sharded controller
///   ([`Controller::sharded`](crate::controller::Controller::sharded)) runs the
///   ring itself; call `run` only on a replica without one.
/// - **Observation.** [`run`](Self::run) also watches the ring's leases (by the ring
///   label) and publishes the *available* shards: those whose lease names a holder
///   and has not expired, judged on this replica's clock from when it saw the lease
///   change, as client-go judges leader leases. Read them with
///   [`members`](Self::members) or [`subscribe`](Self::subscribe).
/// - **Assignment.** A [`Sharder`](super::Sharder) built on the ring writes each
///   object's shard into the label [`assignment_label`](Self::assignment_label)
///   (`shard.reflector.rs/<ring>`); [`selector`](Self::selector) is this shard's
///   label selector.
///
/// Shard names must be unique within a ring (the pod name is a good choice): two
/// replicas with one name would both believe they hold the lease. The handle is
/// cheap to clone; clones share the state.
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::coordination::v1::Lease;
/// use kube::Api;
/// use reflector::leader_election::LeaderElectionConfig;
/// use reflector::sharding::Ring;
/// use tokio_util::sync::CancellationToken;
///
/// # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let ring = Ring::new(
///     Api::<Lease>::namespaced(client, "operators"),
///     "widgets",
///     "widgets-7d9f-abcde", // this replica: the pod name
///     LeaderElectionConfig::default(),
/// )?;
/// assert_eq!(ring.selector(), "shard.reflector.rs/widgets=widgets-7d9f-abcde");
/// let stop = CancellationToken::new();
/// let run = tokio::spawn({
///     let (ring, stop) = (ring.clone(), stop.clone());
///     async move { ring.run(stop).await }
/// });
/// let mut members = ring.subscribe();
/// members.wait_for(|m| m.contains(ring.shard())).await?;
/// println!("ring members: {:?}", ring.members());
/// stop.cancel(); // releases this shard's lease
/// run.await??;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Ring {
    shared: Arc<Shared>,
}

/// What the clones of one ring share.
struct Shared {
    name: String,
    shard: String,
    leases: Api<Lease>,
    /// The election's timings, for the sharder election too.
    config: LeaderElectionConfig,
    /// This shard's membership lease, held as an election only this shard runs.
    membership: LeaderElection,
    /// The available members as last observed; the watch channel has its own lock.
    members: watch::Sender<BTreeSet<String>>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("name", &self.shared.name)
            .field("shard", &self.shared.shard)
            .field("members", &*self.shared.members.borrow())
            .finish_non_exhaustive()
    }
}

impl Ring {
    /// Shard `shard` of ring `ring`, with its leases in `leases`' namespace and the
    /// timings of `config` (its identity is replaced by `shard`, and a graceful stop
    /// always releases the lease). Nothing runs until [`run`](Self::run).
    ///
    /// # Errors
    /// [`ShardingError::InvalidName`] unless both names are DNS-1123 labels,
    /// [`ShardingError::ReservedShardName`] for the shard name `sharder`, and
    /// [`ShardingError::LeaderElection`] for invalid timings or an `Api::all`.
    pub fn new(
        leases: Api<Lease>,
        ring: &str,
        shard: &str,
        config: LeaderElectionConfig,
    ) -> Result<Self, ShardingError> {
        labels::validate("ring", ring)?;
        labels::validate("shard", shard)?;
        if shard == SHARDER {
            return Err(ShardingError::ReservedShardName);
        }
        let config = config.identity(shard).release_on_cancel(true);
        let membership = LeaderElection::with_lease_labels(
            leases.clone(),
            &labels::member_lease(ring, shard),
            config.clone(),
            BTreeMap::from([(RING_LABEL.to_owned(), ring.to_owned())]),
        )?;
        Ok(Ring {
            shared: Arc::new(Shared {
                name: ring.to_owned(),
                shard: shard.to_owned(),
                leases,
                config,
                membership,
                members: watch::Sender::new(BTreeSet::new()),
            }),
        })
    }

    /// The ring's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// This replica's shard name.
    #[must_use]
    pub fn shard(&self) -> &str {
        &self.shared.shard
    }

    /// The label whose value names an object's shard: `shard.reflector.rs/<ring>`.
    #[must_use]
    pub fn assignment_label(&self) -> String {
        labels::assignment_label(&self.shared.name)
    }

    /// The label selector of this shard's objects: `shard.reflector.rs/<ring>=<shard>`.
    #[must_use]
    pub fn selector(&self) -> String {
        format!("{}={}", self.assignment_label(), self.shared.shard)
    }

    /// Whether this shard holds its membership lease now.
    #[must_use]
    pub fn is_member(&self) -> bool {
        self.shared.membership.is_leader()
    }

    /// The available shards as last observed (empty until [`run`](Self::run) has
    /// listed the ring's leases).
    #[must_use]
    pub fn members(&self) -> BTreeSet<String> {
        self.shared.members.borrow().clone()
    }

    /// Every change of [`members`](Self::members), as a `tokio::sync::watch`
    /// receiver.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<BTreeSet<String>> {
        self.shared.members.subscribe()
    }

    /// Holds this shard's membership lease and observes the ring until `cancel`
    /// fires, then releases the lease. API errors are logged and retried, never
    /// returned.
    ///
    /// # Errors
    /// [`ShardingError::LeaderElection`] with
    /// [`AlreadyRunning`](crate::leader_election::LeaderElectionError::AlreadyRunning)
    /// if this ring (or a clone) is running already.
    ///
    /// # Cancel safety
    /// Cancelling the token is the clean stop: the lease is released before `run`
    /// returns. Dropping the future stops at once without a release: the other
    /// replicas see the shard leave when its lease expires.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), ShardingError> {
        let guard = self.claim()?;
        self.run_claimed(guard, cancel).await;
        Ok(())
    }

    /// Claims the ring's run (the membership lease's election), so a caller that
    /// runs the ring later (a sharded controller) fails before it starts anything.
    pub(crate) fn claim(&self) -> Result<RunGuard, ShardingError> {
        Ok(self.shared.membership.claim()?)
    }

    /// [`run`](Self::run) with the run claimed by [`claim`](Self::claim).
    ///
    /// Boxed here, in a function generic over nothing, so that the ring's code (the
    /// election, the Lease informer) is compiled once in this crate and not again
    /// in every crate whose generic controller code awaits it.
    ///
    /// # Cancel safety
    /// As [`run`](Self::run).
    pub(crate) fn run_claimed(
        &self,
        guard: RunGuard,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            tokio::join!(
                LeaderElection::run_claimed(guard, cancel.clone()),
                members::observe(
                    self.shared.leases.clone(),
                    &self.shared.name,
                    &self.shared.members,
                    &cancel,
                ),
            );
        })
    }

    /// This shard's membership lease, held as an election only this shard runs.
    pub(crate) fn membership(&self) -> &LeaderElection {
        &self.shared.membership
    }

    /// The `Api<Lease>` of the ring's leases.
    pub(crate) fn leases(&self) -> &Api<Lease> {
        &self.shared.leases
    }

    /// The ring's leader-election timings.
    pub(crate) fn config(&self) -> &LeaderElectionConfig {
        &self.shared.config
    }
}
