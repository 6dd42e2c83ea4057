//! [`Sharder`]: assigns a ring's objects to its available shards.

use std::fmt::Debug;

use kube::core::PartialObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::informer::{Change, InformerFactory, SharedIndexInformer};
use crate::leader_election::LeaderElection;
use crate::object::{Object, ObjectKey, meta_namespace_key};
use crate::workqueue::WorkQueue;

use super::labels;
use super::metadata_patch::{Outcome, patch_metadata};
use super::{Ring, ShardingError, ShardingMetrics, shard_key, winner};

/// The field manager of the sharder's patches.
const FIELD_MANAGER: &str = "reflector-sharder";

/// Assigns every `K` to one of a [`Ring`]'s available shards, by writing the ring's
/// assignment label (`shard.reflector.rs/<ring>=<shard>`).
///
/// - **One sharder at a time.** Every replica may run a sharder; they elect one on
///   the Lease `<ring>-sharder` (with the ring's leader-election timings) and only
///   the leader writes.
/// - **Metadata only.** It watches `K` through the factory's metadata-only informer
///   (`PartialObjectMeta<K>`), so it never caches whole objects.
/// - **Placement.** Each object goes to the [`winner`] of its [`shard_key`] over
///   the ring's available members (rendezvous hashing): children follow their
///   controller owner; a join moves about `1/N` of the objects (to the joiner); a
///   leave or an expired lease moves exactly the leaver's objects, at once.
/// - **Writes.** Only objects whose label differs from their winner are patched, with
///   a JSON merge patch that carries the object's `resourceVersion` as a
///   precondition: a patch computed from a stale view is refused (409) and retried
///   from the fresh one, so two sharders (or a deposed one) never write competing
///   assignments. 409s, 5xx and transport errors are retried with per-object
///   exponential backoff (5 ms to 1000 s, as the controller's work queue).
/// - **Drains.** An object whose winner changed while its shard is still available
///   is not relabelled: the sharder writes the annotation
///   `shard.reflector.rs/<ring>-drain=<new shard>`, the shard's sharded
///   [`Controller`](crate::controller::Controller) lets a reconcile of it in flight
///   finish and acknowledges by removing the label and the annotation, and the
///   sharder then labels the unassigned object with its winner (computed then). An
///   object whose shard is unavailable (lease expired or released) moves at once,
///   drain or not; a drain never acknowledged is resolved by the old shard's lease
///   expiring. A sharder made with [`owned`](Self::owned) (children) never drains.
///
/// Start the factory ([`InformerFactory::start`]) after building the sharder, and run
/// the [`Ring`] beside it: with no available members, nothing is assigned.
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::coordination::v1::Lease;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use reflector::informer::InformerFactory;
/// use reflector::leader_election::LeaderElectionConfig;
/// use reflector::sharding::{Ring, Sharder};
/// use tokio_util::sync::CancellationToken;
///
/// # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let ring = Ring::new(
///     Api::<Lease>::namespaced(client.clone(), "operators"),
///     "config-maps",
///     "replica-0",
///     LeaderElectionConfig::default(),
/// )?;
/// let factory = InformerFactory::new(client);
/// let sharder = Sharder::<ConfigMap>::new(&ring, &factory)?;
/// factory.start();
/// let stop = CancellationToken::new();
/// tokio::try_join!(ring.run(stop.clone()), sharder.run(stop.clone()))?;
/// # Ok(()) }
/// ```
pub struct Sharder<K: Object> {
    ring: Ring,
    informer: SharedIndexInformer<PartialObjectMeta<K>>,
    election: LeaderElection,
    client: kube::Client,
    /// Whether a move off a live shard goes through a drain (primaries) or is a
    /// relabel (owned children, which nobody reconciles by their own key).
    drains: bool,
    metrics: Option<ShardingMetrics>,
}

impl<K: Object> Debug for Sharder<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sharder")
            .field("ring", &self.ring)
            .field("election", &self.election)
            .finish_non_exhaustive()
    }
}

/// What [`Sharder::assign`] writes on one object.
#[derive(Debug, Clone, Copy)]
enum Write {
    /// Labels an unassigned object with its winner.
    Assign,
    /// Relabels an object off an unavailable shard (at once: that shard stopped).
    Move,
    /// Asks the object's live shard to hand it over (the drain annotation).
    Drain,
    /// Removes a drain annotation whose object's winner is its shard again.
    CancelDrain,
}

impl<K> Sharder<K>
where
    K: kube::Resource + serde::Serialize + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Default + Clone + Send + Sync + 'static,
{
    /// A sharder of `K` for `ring`, watching `K` with `factory`'s metadata-only
    /// informer (every namespace) and patching through the ring's client. Nothing
    /// runs until [`run`](Self::run).
    ///
    /// # Errors
    /// [`ShardingError::LeaderElection`] if the sharder election cannot be built
    /// (the ring's timings were checked already, so only a missing host name).
    pub fn new(ring: &Ring, factory: &InformerFactory) -> Result<Self, ShardingError> {
        let election = LeaderElection::new(
            ring.leases().clone(),
            &labels::sharder_lease(ring.name()),
            ring.config().clone(),
        )?;
        Ok(Sharder {
            ring: ring.clone(),
            informer: factory.informer::<PartialObjectMeta<K>>(),
            election,
            client: ring.leases().clone().into_client(),
            drains: true,
            metrics: None,
        })
    }

    /// A sharder of an owned kind `K` (the children of a sharded controller's
    /// primaries), as [`new`](Self::new) but moving an object off a live shard by
    /// relabelling it at once, without a drain: children follow their controller
    /// owner's [`shard_key`], and the sharded controller reconciles them only through
    /// their owner, whose own drain keeps the hand-over free of overlap.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    ///
    /// # Example
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// # use reflector::informer::InformerFactory;
    /// # use reflector::sharding::{Ring, Sharder};
    /// # fn f(ring: Ring, factory: InformerFactory) -> Result<(), reflector::sharding::ShardingError> {
    /// let primaries = Sharder::<ConfigMap>::new(&ring, &factory)?;
    /// let children = Sharder::<Secret>::owned(&ring, &factory)?;
    /// # let _ = (primaries, children);
    /// # Ok(()) }
    /// ```
    pub fn owned(ring: &Ring, factory: &InformerFactory) -> Result<Self, ShardingError> {
        let mut sharder = Self::new(ring, factory)?;
        sharder.drains = false;
        Ok(sharder)
    }

    /// Reports the ring's `reflector_sharding_*` families (assignments, moves,
    /// drains started, ring members) to `metrics`. Default: no metrics.
    ///
    /// # Example
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use reflector::informer::InformerFactory;
    /// # use reflector::metrics::Metrics;
    /// # use reflector::sharding::{Ring, Sharder};
    /// # fn f(ring: Ring, factory: InformerFactory, metrics: Metrics) -> Result<(), reflector::sharding::ShardingError> {
    /// let sharder = Sharder::<ConfigMap>::new(&ring, &factory)?.metrics(&metrics);
    /// # let _ = sharder;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn metrics(mut self, metrics: impl Into<ShardingMetrics>) -> Self {
        self.metrics = Some(metrics.into());
        self
    }

    /// The sharder election (`<ring>-sharder`): whether this replica shards now.
    #[must_use]
    pub fn election(&self) -> &LeaderElection {
        &self.election
    }

    /// Contends for the sharder election until `cancel` fires, and while leading
    /// assigns objects as they appear and change and as the ring's membership
    /// changes. API errors are logged and retried, never returned.
    ///
    /// # Errors
    /// [`ShardingError::LeaderElection`] with
    /// [`AlreadyRunning`](crate::leader_election::LeaderElectionError::AlreadyRunning)
    /// if this sharder is running already.
    ///
    /// # Cancel safety
    /// Cancelling the token is the clean stop: assignment stops, then the sharder
    /// lease is released. Dropping the future stops at once; the lease then expires.
    /// Either way an assignment patch in flight is safe: its `resourceVersion`
    /// precondition makes it a no-op if the object changed meanwhile.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), ShardingError> {
        let guard = self.election.claim()?;
        let work = async {
            loop {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    () = self.election.leading() => {}
                }
                tracing::info!(ring = %self.ring.name(), identity = %self.election.identity(), "sharding");
                self.lead(&cancel).await;
            }
        };
        let ring_size = async {
            let Some(metrics) = &self.metrics else { return };
            let mut members = self.ring.subscribe();
            loop {
                let size = members.borrow_and_update().len();
                metrics.set_members(self.ring.name(), size);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => return,
                    changed = members.changed() => if changed.is_err() { return },
                }
            }
        };
        tokio::join!(
            LeaderElection::run_claimed(guard, cancel.clone()),
            work,
            ring_size
        );
        Ok(())
    }

    /// Resolves once this replica must stop assigning: cancelled, or not leading.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes.
    async fn stopped(&self, cancel: &CancellationToken) {
        tokio::select! {
            () = cancel.cancelled() => {}
            () = self.election.not_leading() => {}
        }
    }

    /// Assigns while leading: every object once the cache has synced, each object
    /// again when it changes, and every object when the membership changes.
    ///
    /// # Cancel safety
    /// Dropping it loses nothing: the next term starts from the cache again.
    async fn lead(&self, cancel: &CancellationToken) {
        tokio::select! {
            biased;
            () = self.stopped(cancel) => return,
            synced = self.informer.wait_synced() => if let Err(error) = synced {
                tracing::error!(ring = %self.ring.name(), %error, "the sharder's informer stopped");
                return self.stopped(cancel).await;
            }
        }
        let queue = WorkQueue::<ObjectKey>::new();
        let registration = self.informer.add_event_fn({
            let queue = queue.clone();
            move |ev: Change<PartialObjectMeta<K>>| match ev {
                Change::Added { obj, .. } | Change::Updated { new: obj, .. } => {
                    if let Ok(key) = meta_namespace_key(&*obj) {
                        queue.add(key);
                    }
                }
                Change::Deleted(_) => {}
            }
        });
        let registration = match registration {
            Ok(r) => r,
            Err(error) => {
                tracing::error!(ring = %self.ring.name(), %error, "the sharder's informer stopped");
                return self.stopped(cancel).await;
            }
        };
        let mut members = self.ring.subscribe();
        loop {
            tokio::select! {
                biased;
                () = self.stopped(cancel) => break,
                changed = members.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    for obj in self.informer.lister().list() {
                        if let Ok(key) = meta_namespace_key(&*obj) {
                            queue.add(key);
                        }
                    }
                }
                key = queue.get() => {
                    let Some(key) = key else { break };
                    match self.assign(&key).await {
                        Outcome::Written | Outcome::Settled => queue.forget(&key),
                        Outcome::Retry => queue.add_rate_limited(key.clone()),
                    }
                    queue.done(&key);
                }
            }
        }
        self.informer.remove_event_handler(&registration);
        queue.shutdown();
        tracing::info!(ring = %self.ring.name(), identity = %self.election.identity(), "stopped sharding");
    }

    /// Brings one object's assignment label in line with its winner among the
    /// available members: assigns an unassigned object, moves one off an
    /// unavailable shard at once, and asks a live shard to drain it (see
    /// [`Sharder`]).
    ///
    /// # Cancel safety
    /// As [`patch_metadata`].
    async fn assign(&self, key: &ObjectKey) -> Outcome {
        let members = self.ring.members();
        let Some(obj) = self.informer.lister().get(key.namespace(), key.name()) else {
            return Outcome::Settled;
        };
        let (Some(desired), Some(rv)) = (
            shard_key(&obj.metadata).and_then(|k| winner(k.as_str(), &members)),
            obj.metadata.resource_version.as_deref(),
        ) else {
            // No members (a membership change queues every object again), or an
            // object without a name or version (not from a real server).
            return Outcome::Settled;
        };
        let label = self.ring.assignment_label();
        let drain = labels::drain_annotation(self.ring.name());
        let current = obj.metadata.labels.as_ref().and_then(|l| l.get(&label));
        let draining = obj
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(&drain));
        let (write, metadata) = match current {
            Some(c) if c == desired => match draining {
                // The winner came back to the shard being drained: call it off.
                Some(_) => (Write::CancelDrain, json!({"annotations": {&drain: null}})),
                None => return Outcome::Settled,
            },
            Some(c) if self.drains && members.contains(c) => {
                if draining == Some(desired) {
                    // Asked already; the shard acknowledges when it is idle.
                    return Outcome::Settled;
                }
                (Write::Drain, json!({"annotations": {&drain: desired}}))
            }
            Some(_) => (
                Write::Move,
                json!({"labels": {&label: desired}, "annotations": {&drain: null}}),
            ),
            None if draining.is_some() => (
                Write::Assign,
                json!({"labels": {&label: desired}, "annotations": {&drain: null}}),
            ),
            None => (Write::Assign, json!({"labels": {&label: desired}})),
        };
        let mut patch = json!({"metadata": metadata});
        patch["metadata"]["resourceVersion"] = json!(rv);
        let ring = self.ring.name();
        let outcome = patch_metadata::<K>(
            &self.client,
            key,
            patch,
            FIELD_MANAGER,
            (ring, "assignment"),
        )
        .await;
        if let Outcome::Written = outcome {
            tracing::debug!(%ring, %key, from = ?current, to = %desired, ?write, "written");
            if let Some(m) = &self.metrics {
                match write {
                    Write::Assign => m.assigned(ring),
                    Write::Move => {
                        m.assigned(ring);
                        m.moved(ring);
                    }
                    Write::Drain => {
                        m.drain_started(ring);
                        m.moved(ring);
                    }
                    Write::CancelDrain => {}
                }
            }
        }
        outcome
    }
}
