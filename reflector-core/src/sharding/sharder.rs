//! [`Sharder`]: assigns a ring's objects to its available shards.

use std::fmt::Debug;

use kube::api::{Patch, PatchParams};
use kube::core::PartialObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::informer::{Event, InformerFactory, SharedIndexInformer};
use crate::leader_election::LeaderElection;
use crate::object::{Object, ObjectKey, meta_namespace_key};
use crate::workqueue::WorkQueue;

use super::labels;
use super::{Ring, ShardingError, shard_key, winner};

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
/// - **Not yet: drains.** An object whose winner changed while its old shard is
///   still available is relabelled at once; see the [module docs](super) for the
///   drain hand-over that will go in between.
///
/// Start the factory ([`InformerFactory::start`]) after building the sharder, and run
/// the [`Ring`] beside it: with no available members, nothing is assigned.
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::coordination::v1::Lease;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use reflector_core::informer::InformerFactory;
/// use reflector_core::leader_election::LeaderElectionConfig;
/// use reflector_core::sharding::{Ring, Sharder};
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
    dyntype: K::DynamicType,
}

impl<K: Object> Debug for Sharder<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sharder")
            .field("ring", &self.ring)
            .field("election", &self.election)
            .finish_non_exhaustive()
    }
}

/// How one object's assignment ended.
enum Outcome {
    /// Nothing (more) to do for this object now.
    Settled,
    /// The patch failed; try again later.
    Retry,
}

impl<K> Sharder<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
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
            dyntype: K::DynamicType::default(),
        })
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
        tokio::join!(LeaderElection::run_claimed(guard, cancel.clone()), work);
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
            move |ev: Event<PartialObjectMeta<K>>| match ev {
                Event::Added { obj, .. } | Event::Updated { new: obj, .. } => {
                    if let Ok(key) = meta_namespace_key(&*obj) {
                        queue.add(key);
                    }
                }
                Event::Deleted(_) => {}
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
                        Outcome::Settled => queue.forget(&key),
                        Outcome::Retry => queue.add_rate_limited(key.clone()),
                    }
                    queue.done(&key);
                }
            }
        }
        self.informer.remove_event_handler(&registration);
        queue.shut_down();
        tracing::info!(ring = %self.ring.name(), identity = %self.election.identity(), "stopped sharding");
    }

    /// Brings one object's assignment label in line with its winner among the
    /// available members.
    ///
    /// # Cancel safety
    /// Dropping it may leave the patch applied unknown to the caller; the informer's
    /// next event of the object shows it.
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
        let current = obj.metadata.labels.as_ref().and_then(|l| l.get(&label));
        if current == Some(desired) {
            return Outcome::Settled;
        }
        // Where the drain hand-over goes: a `current` that is still in `members` is a
        // live shard that may be reconciling this object.
        let live_move = current.is_some_and(|c| members.contains(c));
        let patch = Patch::Merge(json!({
            "metadata": {"resourceVersion": rv, "labels": {&label: desired}}
        }));
        let result = self.patch(key, &patch).await;
        let ring = self.ring.name();
        match result {
            Ok(()) => {
                tracing::debug!(%ring, %key, from = ?current, to = %desired, live_move, "assigned");
                Outcome::Settled
            }
            Err(kube::Error::Api(status)) if status.code == 404 => Outcome::Settled,
            Err(kube::Error::Api(status)) if status.code == 409 => {
                tracing::debug!(%ring, %key, "assignment conflicted; retrying from a fresh view");
                Outcome::Retry
            }
            Err(error) => {
                tracing::warn!(%ring, %key, %error, "cannot write the assignment; retrying");
                Outcome::Retry
            }
        }
    }

    /// Sends `patch` for the object `key`, asking for its metadata only.
    ///
    /// # Cancel safety
    /// As [`assign`](Self::assign).
    async fn patch(
        &self,
        key: &ObjectKey,
        patch: &Patch<serde_json::Value>,
    ) -> Result<(), kube::Error> {
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        let request = kube::core::Request::new(K::url_path(&self.dyntype, key.namespace()))
            .patch_metadata(key.name(), &params, patch)
            .map_err(kube::Error::BuildRequest)?;
        self.client
            .request::<PartialObjectMeta<K>>(request)
            .await
            .map(drop)
    }
}
