//! [`ShardGate`]: the shard side of a ring, inside a sharded controller: which keys
//! its workers may reconcile, and the acknowledgement of drains.
//!
//! The primary informer's handler asks the gate about every event of the shard's
//! objects (`admit_upsert`, `admit_delete`); each worker asks it before a reconcile
//! (`begin`) and holds the answer while reconciling; the gate's own loop
//! (`acknowledge`) hands drained objects back once no reconcile of them runs.
//! One mutex orders the three, so a drain seen before a worker's check stops that
//! reconcile, and a reconcile that started first is waited for.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::object::{Object, ObjectKey};
use crate::store::Indexer;
use crate::workqueue::WorkQueue;

use super::labels;
use super::metadata_patch::{Outcome, patch_metadata};
use super::{Ring, ShardingMetrics};

/// The field manager of a shard's acknowledgements.
const FIELD_MANAGER: &str = "reflector-shard";

/// The keys of one shard's objects in their hand-over states; guarded by
/// [`ShardGate::state`].
#[derive(Default)]
struct GateState {
    /// Keys whose drain annotation this shard has seen: never reconciled again until
    /// the object leaves the cache (then it is not ours) or comes back without one.
    draining: HashSet<ObjectKey>,
    /// Keys a worker is reconciling now.
    in_flight: HashSet<ObjectKey>,
    /// Keys whose object was deleted while this shard held it (not moved away):
    /// their `None` reconcile is due. Any other key without a cached object is not
    /// this shard's (a child's owner on another shard, an object moved away).
    gone: HashSet<ObjectKey>,
}

/// The shard side of a [`Ring`] for one sharded controller.
pub(crate) struct ShardGate {
    ring: Ring,
    /// `shard.reflector.rs/<ring>`.
    label: String,
    /// `shard.reflector.rs/<ring>-drain`.
    drain: String,
    /// The hand-over states; held only to read or update them, never across an
    /// await.
    state: Mutex<GateState>,
    /// Woken when a reconcile ends (an acknowledgement may be waiting for it).
    idle: Notify,
    /// Drained keys to acknowledge, with per-key backoff for failed patches.
    acks: WorkQueue<ObjectKey>,
    metrics: Option<ShardingMetrics>,
}

/// A reconcile the gate let start; dropping it (also when the worker is aborted)
/// ends it.
pub(crate) struct InFlight<'a> {
    gate: &'a ShardGate,
    key: ObjectKey,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.gate.lock().in_flight.remove(&self.key);
        self.gate.idle.notify_waiters();
    }
}

impl InFlight<'_> {
    /// The reconcile ended and its key is not queued again: a deleted object's
    /// `None` reconcile is no longer due.
    pub(crate) fn finished(self) {
        self.gate.lock().gone.remove(&self.key);
    }
}

impl ShardGate {
    pub(crate) fn new(ring: &Ring, metrics: Option<ShardingMetrics>) -> Self {
        ShardGate {
            label: ring.assignment_label(),
            drain: labels::drain_annotation(ring.name()),
            ring: ring.clone(),
            state: Mutex::new(GateState::default()),
            idle: Notify::new(),
            acks: WorkQueue::new(),
            metrics,
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_draining(&self, meta: &ObjectMeta) -> bool {
        meta.annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(&self.drain))
    }

    fn is_ours(&self, meta: &ObjectMeta) -> bool {
        meta.labels
            .as_ref()
            .and_then(|l| l.get(&self.label))
            .is_some_and(|s| s == self.ring.shard())
    }

    /// An add or update of `key` (state `meta`) arrived: whether to enqueue it. An
    /// object carrying the drain annotation is not enqueued but handed to the
    /// acknowledgement loop.
    pub(crate) fn admit_upsert(&self, key: &ObjectKey, meta: &ObjectMeta) -> bool {
        let draining = self.is_draining(meta);
        {
            let mut state = self.lock();
            state.gone.remove(key);
            if draining {
                state.draining.insert(key.clone());
            } else {
                state.draining.remove(key);
            }
        }
        if draining {
            self.acks.add(key.clone());
        }
        !draining
    }

    /// `key` left the cache (last known state `meta`): whether to enqueue its
    /// `None` reconcile. The watch cannot tell a deletion from a relabel (both are
    /// `DELETED`, carrying the last state this shard saw), so: an object that was
    /// draining, whose last state is not ours, or that left while this shard was
    /// not a member (the sharder moves a lapsed shard's objects at once) moved
    /// away; any other was deleted.
    pub(crate) fn admit_delete(&self, key: &ObjectKey, meta: &ObjectMeta) -> bool {
        let member = self.ring.is_member();
        let mut state = self.lock();
        let moved =
            state.draining.remove(key) || self.is_draining(meta) || !self.is_ours(meta) || !member;
        if !moved {
            state.gone.insert(key.clone());
        }
        !moved
    }

    /// A worker took `key`, whose cached object is `cached` (the one the reconcile
    /// will get): the reconcile may start while the returned guard lives, or must
    /// be skipped (`None`): the key is draining (known to the gate, or the cached
    /// object already carries the annotation while its event is on its way), or
    /// has no object here and was not deleted here.
    pub(crate) fn begin(
        &self,
        key: &ObjectKey,
        cached: Option<&ObjectMeta>,
    ) -> Option<InFlight<'_>> {
        let mut state = self.lock();
        let skip = match cached {
            Some(meta) => state.draining.contains(key) || self.is_draining(meta),
            None => state.draining.contains(key) || !state.gone.contains(key),
        };
        if skip {
            return None;
        }
        state.in_flight.insert(key.clone());
        Some(InFlight {
            gate: self,
            key: key.clone(),
        })
    }

    /// Acknowledges drains until `cancel` fires: for each drained key, once no
    /// reconcile of it runs, removes this shard's label and the drain annotation in
    /// one merge patch with the cached object's `resourceVersion`; a 409 is retried
    /// from the then-cached object, a 404 ends it.
    ///
    /// # Cancel safety
    /// Cancelling is the clean stop; a patch in flight is safe either way (its
    /// precondition), and a drain not acknowledged is resolved by this shard's lease
    /// expiring.
    pub(crate) async fn acknowledge<K>(&self, cache: &Indexer<K>, cancel: &CancellationToken)
    where
        K: Object,
        K::DynamicType: Default,
    {
        let client = self.ring.leases().clone().into_client();
        loop {
            let Some(key) = self.acks.get_unless_cancelled(cancel).await else {
                break;
            };
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                outcome = self.ack::<K>(&client, cache, &key) => outcome,
            };
            match outcome {
                Outcome::Written => {
                    tracing::debug!(ring = %self.ring.name(), %key, "drain acknowledged");
                    if let Some(m) = &self.metrics {
                        m.drain_acknowledged(self.ring.name());
                    }
                    self.acks.forget(&key);
                }
                Outcome::Settled => self.acks.forget(&key),
                Outcome::Retry => self.acks.add_rate_limited(key.clone()),
            }
            self.acks.done(&key);
        }
        self.acks.shutdown();
    }

    /// Waits until no reconcile of `key` runs, then acknowledges its drain.
    ///
    /// # Cancel safety
    /// As [`patch_metadata`].
    async fn ack<K>(&self, client: &kube::Client, cache: &Indexer<K>, key: &ObjectKey) -> Outcome
    where
        K: Object,
        K::DynamicType: Default,
    {
        loop {
            let idle = self.idle.notified();
            {
                let state = self.lock();
                if !state.draining.contains(key) {
                    // Called off, or gone from the cache: nothing to hand over.
                    return Outcome::Settled;
                }
                if !state.in_flight.contains(key) {
                    break;
                }
            }
            idle.await;
        }
        let Some(obj) = cache.get(key) else {
            return Outcome::Settled;
        };
        let meta = obj.meta();
        let Some(rv) = meta.resource_version.as_deref() else {
            return Outcome::Settled;
        };
        if !self.is_ours(meta) || !self.is_draining(meta) {
            return Outcome::Settled;
        }
        let patch = json!({"metadata": {
            "resourceVersion": rv,
            "labels": {&self.label: null},
            "annotations": {&self.drain: null},
        }});
        patch_metadata::<K>(
            client,
            key,
            patch,
            FIELD_MANAGER,
            (self.ring.name(), "drain acknowledgement"),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::Api;

    use super::*;
    use crate::leader_election::LeaderElectionConfig;
    use crate::listwatch::mock_api::MockApi;

    /// A gate for shard `a` of ring `cms` whose ring never runs (so it is not a
    /// member); no request is made (kube's client needs a runtime to be built).
    fn gate() -> ShardGate {
        let api = MockApi::new("", "");
        let ring = Ring::new(
            Api::namespaced(api.client(), "ops"),
            "cms",
            "a",
            LeaderElectionConfig::default(),
        )
        .unwrap();
        ShardGate::new(&ring, None)
    }

    /// Metadata labelled for `shard`, with the drain annotation if `drain` is set.
    fn meta(shard: &str, drain: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some("x".into()),
            labels: Some(BTreeMap::from([(
                "shard.reflector.rs/cms".to_owned(),
                shard.to_owned(),
            )])),
            annotations: drain.map(|to| {
                BTreeMap::from([("shard.reflector.rs/cms-drain".to_owned(), to.to_owned())])
            }),
            ..ObjectMeta::default()
        }
    }

    fn key() -> ObjectKey {
        ObjectKey::new(Some("ns"), "x")
    }

    /// An object of this shard is admitted and may be reconciled; once its drain
    /// annotation arrives it is not admitted, no reconcile of it starts (even one
    /// taken from the queue before), and it waits for acknowledgement; a drain
    /// called off (the annotation gone) admits it again.
    #[tokio::test]
    async fn a_drain_stops_new_reconciles_until_it_is_called_off() {
        let gate = gate();
        let (ours, draining) = (meta("a", None), meta("a", Some("b")));
        assert!(gate.admit_upsert(&key(), &ours));
        assert!(gate.begin(&key(), Some(&ours)).is_some());

        assert!(!gate.admit_upsert(&key(), &draining));
        assert_eq!(gate.acks.len(), 1, "queued for acknowledgement");
        assert!(gate.begin(&key(), Some(&ours)).is_none(), "known draining");

        assert!(gate.admit_upsert(&key(), &ours), "called off");
        assert!(gate.begin(&key(), Some(&ours)).is_some());
    }

    /// A worker whose cached object already carries the annotation (its event is
    /// still on the way to the handler) does not reconcile it.
    #[tokio::test]
    async fn a_cached_drain_annotation_is_enough_to_skip() {
        let gate = gate();
        assert!(gate.begin(&key(), Some(&meta("a", Some("b")))).is_none());
    }

    /// A reconcile in flight is recorded until its guard is dropped, which wakes
    /// an acknowledgement waiting for it.
    #[tokio::test]
    async fn a_reconcile_in_flight_holds_the_key_until_it_ends() {
        let gate = gate();
        let guard = gate.begin(&key(), Some(&meta("a", None))).unwrap();
        assert!(gate.lock().in_flight.contains(&key()));
        let idle = gate.idle.notified();
        drop(guard);
        idle.await;
        assert!(!gate.lock().in_flight.contains(&key()));
    }

    /// Leaving the cache: a draining object, one last seen labelled for another
    /// shard, and any object while this shard is not a member moved away — no
    /// `None` reconcile, and a worker that still takes the key skips it.
    #[tokio::test]
    async fn objects_that_moved_away_get_no_deletion_reconcile() {
        let gate = gate();
        assert!(!gate.ring.is_member());
        for last in [meta("a", Some("b")), meta("b", None), meta("a", None)] {
            assert!(!gate.admit_delete(&key(), &last), "{last:?}");
            assert!(gate.begin(&key(), None).is_none());
        }
        assert!(gate.lock().gone.is_empty());
    }
}
