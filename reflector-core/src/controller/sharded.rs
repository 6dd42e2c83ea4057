//! A controller sharded over a [`Ring`]: its terms are the shard's membership of the
//! ring, and its keys pass the shard's gate ([`Controller::sharded`] sets it up).

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio_util::sync::CancellationToken;

use crate::leader_election::RunGuard;
use crate::object::{Object, ObjectKey, short_type_name};
use crate::sharding::{InFlight, Ring, ShardGate, ShardingError};
use crate::store::Indexer;

use super::controller::Controller;
use super::error::ControllerError;
use super::key_gate::{KeyGate, Pass};
use super::term::Term;

/// A sharded controller's ring, and its drain acknowledgement loop (made by
/// `sharded`, where `K`'s dynamic type is known to have a default).
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
    ///   [`for_kind`](Controller::for_kind),
    ///   [`for_kind_with`](Controller::for_kind_with) or
    ///   [`for_api`](Controller::for_api) adds it to its own primary informer's
    ///   label selector (an object must match both) and keeps the informer's other
    ///   options; given informers must come from an
    ///   [`InformerFactory`](crate::informer::InformerFactory) scope with
    ///   [`InformerScope::labels`](crate::informer::InformerScope::labels)`(ring.selector())`,
    ///   or `run` fails with
    ///   [`ControllerError::Sharding`](super::ControllerError::Sharding) (never a
    ///   silently unsharded controller). [`watches`](Self::watches) sources are not
    ///   checked.
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
    /// # use reflector::controller::{Action, Controller, Request};
    /// # use reflector::informer::{InformerFactory, InformerScope};
    /// # use reflector::sharding::Ring;
    /// # async fn reconcile(_: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
    /// # async fn f(ring: Ring, factory: InformerFactory) -> Result<(), reflector::controller::ControllerError> {
    /// let mine = InformerScope::default().labels(ring.selector());
    /// Controller::new(factory.scoped::<ConfigMap>(&mine))
    ///     .owns(factory.scoped::<Secret>(&mine))
    ///     .sharded(&ring)
    ///     .shutdown_on_signal()
    ///     .run(reconcile, Arc::new(()))
    ///     .await
    /// # }
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "sharding")))]
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
    /// The terms of a controller sharded over `shard`'s ring: its membership lease,
    /// with the shard's gate on the primary's keys. Checks that the controller
    /// watches only its share, and claims the ring's run.
    ///
    /// The lease's run holds the membership and observes the ring, and acknowledges
    /// drains until told to stop; then the acknowledgements stop first and the lease
    /// is released after them.
    pub(super) fn shard_term(&self, shard: Shard<K>) -> Result<Term, ControllerError> {
        let Shard { ring, acknowledge } = shard;
        let guard = self.check_sharded(&ring)?;
        let metrics = self.metrics.as_ref().map(Into::into);
        let gate = Arc::new(ShardGate::new(&ring, metrics));
        let membership = ring.membership().clone();
        let cache = self.primary.indexer().clone();
        let run = {
            let gate = Arc::clone(&gate);
            move |stop: CancellationToken| -> BoxFuture<'static, ()> {
                Box::pin(async move {
                    let release = CancellationToken::new();
                    let acknowledge = async {
                        acknowledge(gate, cache, stop.clone()).await;
                        stop.cancelled().await;
                        release.cancel();
                    };
                    tokio::join!(ring.run_claimed(guard, release.clone()), acknowledge);
                })
            }
        };
        Ok(Term::leased(&self.name, membership, run, Some(gate)))
    }

    /// Checks that a controller sharded over `ring` watches only its share, and
    /// claims the ring's run.
    fn check_sharded(&self, ring: &Ring) -> Result<RunGuard, ControllerError> {
        let unsharded = |informer: String, reason| ControllerError::Sharding {
            informer: Some(informer),
            reason,
        };
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

/// The shard's gate, as a term's gate of the primary's keys.
impl KeyGate for ShardGate {
    fn admit_upsert(&self, key: &ObjectKey, meta: &ObjectMeta) -> bool {
        ShardGate::admit_upsert(self, key, meta)
    }

    fn admit_delete(&self, key: &ObjectKey, meta: &ObjectMeta) -> bool {
        ShardGate::admit_delete(self, key, meta)
    }

    fn begin(&self, key: &ObjectKey, cached: Option<&ObjectMeta>) -> Option<Box<dyn Pass + '_>> {
        ShardGate::begin(self, key, cached).map(|in_flight| Box::new(in_flight) as Box<dyn Pass>)
    }
}

impl Pass for InFlight<'_> {
    fn settled(self: Box<Self>) {
        self.finished();
    }
}
