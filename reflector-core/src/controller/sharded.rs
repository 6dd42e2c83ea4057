//! A controller sharded over a [`Ring`]: [`Controller::sharded`] and the checks `run`
//! makes before it reconciles a shard.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::leader_election::RunGuard;
use crate::object::{Object, short_type_name};
use crate::sharding::{Ring, ShardGate, ShardingError};
use crate::store::Indexer;

use super::controller::Controller;
use super::error::ControllerError;

/// A sharded controller's ring, and its drain acknowledgement loop (made where `K`'s
/// dynamic type is known to have a default).
pub(super) struct Shard<K: Object> {
    pub(super) ring: Ring,
    pub(super) acknowledge:
        fn(Arc<ShardGate>, Indexer<K>, CancellationToken) -> BoxFuture<'static, ()>,
}

impl<K, P> Controller<K, P>
where
    K: Object,
    K::DynamicType: Default,
    K::Scope: 'static,
{
    /// Shards this controller over `ring`: it reconciles only the objects the ring's
    /// [`Sharder`](crate::sharding::Sharder) assigned to this replica's shard, and
    /// hands them over without overlap when they move.
    ///
    /// - **Its share only.** The primary informer and every owned one
    ///   ([`owns`](Self::owns)) must select [`Ring::selector`]. A controller made by
    ///   [`for_kind`](Controller::for_kind) or [`for_api`](Controller::for_api) adds
    ///   it to its own primary informer; given informers must come from an
    ///   [`InformerFactory`](crate::informer::InformerFactory) scope with
    ///   [`InformerScope::labels`](crate::informer::InformerScope::labels)`(ring.selector())`,
    ///   or `run` fails with [`ControllerError::Sharding`] (never a silently
    ///   unsharded controller). [`watches`](Self::watches) sources are not checked.
    /// - **Membership.** `run` runs the ring ([`Ring::run`]: its membership lease and
    ///   the observation of the others), so do not run it yourself. Reconciles run
    ///   only while this shard holds its lease, in terms as with
    ///   [`leader_elected`](Self::leader_elected) (which cannot be combined with
    ///   this); on a graceful shutdown the workers are drained first and the lease
    ///   is released after them, so the objects move only once no reconcile runs.
    /// - **Drains.** When an object carries the drain annotation
    ///   (`shard.reflector.rs/<ring>-drain`), its key is no longer reconciled here;
    ///   once a reconcile of it in flight has ended, the shard removes its label and
    ///   the annotation in one patch (`resourceVersion` precondition; a 409 is
    ///   retried from the fresh cached object, a 404 ends it) and the sharder
    ///   assigns it to its new shard. The object then leaves this shard's cache
    ///   without a `None` reconcile: only a deletion gets one.
    /// - **Children** follow their controller owner's shard: run a
    ///   [`Sharder::owned`](crate::sharding::Sharder::owned) per owned kind beside the
    ///   primary's [`Sharder`](crate::sharding::Sharder) (both on this ring). A key
    ///   mapped from a child whose owner is not in this shard's cache is skipped.
    ///
    /// With [`metrics`](Self::metrics), the shard counts its acknowledged drains in
    /// `reflector_sharding_drains_acknowledged_total{ring}`.
    ///
    /// Wiring the sharders and the informers: see the [sharding module](crate::sharding).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// # use reflector_core::controller::{Action, Controller, Request};
    /// # use reflector_core::informer::{InformerFactory, InformerScope};
    /// # use reflector_core::sharding::Ring;
    /// # async fn reconcile(_: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
    /// # async fn f(ring: Ring, factory: InformerFactory) -> Result<(), reflector_core::controller::ControllerError> {
    /// let mine = InformerScope::default().labels(ring.selector());
    /// Controller::new(factory.scoped::<ConfigMap>(&mine))
    ///     .owns(factory.scoped::<Secret>(&mine))
    ///     .sharded(&ring)
    ///     .shutdown_on_signal()
    ///     .run(reconcile, Arc::new(()))
    ///     .await
    /// # }
    /// ```
    #[must_use]
    pub fn sharded(mut self, ring: &Ring) -> Self {
        if let Some(rescope) = &self.rescope {
            self.primary = rescope(&ring.selector());
        }
        self.shard = Some(Shard {
            ring: ring.clone(),
            acknowledge: |gate, cache, cancel| {
                Box::pin(async move { gate.acknowledge(&cache, &cancel).await })
            },
        });
        self
    }
}

impl<K: Object, P> Controller<K, P> {
    /// Checks that a controller sharded over `ring` watches only its share and is
    /// not leader-elected too, and claims the ring's run.
    pub(super) fn check_sharded(&self, ring: &Ring) -> Result<RunGuard, ControllerError> {
        let unsharded = |informer: String, reason| ControllerError::Sharding {
            informer: Some(informer),
            reason,
        };
        if self.election.is_some() {
            return Err(ControllerError::Sharding {
                informer: None,
                reason: "a sharded controller cannot be leader-elected too: its shard's membership lease decides when it reconciles",
            });
        }
        let wanted = ring.selector();
        let selects = |selector: Option<String>| {
            selector.is_some_and(|s| s.split(',').any(|r| r.trim() == wanted))
        };
        if !selects(self.primary.label_selector().map(str::to_owned)) {
            return Err(unsharded(
                format!("{}/{}", self.name, short_type_name::<K>()),
                "the primary informer does not select the shard's label: make it with InformerScope::labels(ring.selector())",
            ));
        }
        for s in self.sources.iter().filter(|s| s.is_owned()) {
            if !selects(s.label_selector()) {
                return Err(unsharded(
                    format!("{}/{}", self.name, s.kind()),
                    "an owned informer does not select the shard's label: make it with InformerScope::labels(ring.selector())",
                ));
            }
        }
        ring.claim().map_err(|e| match e {
            ShardingError::LeaderElection(e) => ControllerError::LeaderElection(e),
            _ => ControllerError::Sharding {
                informer: None,
                reason: "the ring cannot run",
            },
        })
    }
}
