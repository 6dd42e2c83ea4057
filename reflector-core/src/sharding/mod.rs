//! Horizontal sharding of one controller across replicas, on the cluster's own
//! primitives: Leases for membership, labels for assignment, label selectors so each
//! replica watches only its share. None of client-go, controller-runtime or
//! kube-runtime shards a controller; they run one active replica.
//!
//! Enabled by the `sharding` feature (`reflector = { version = "0.2", features =
//! ["sharding"] }`), which also adds [`Controller::sharded`](crate::controller::Controller::sharded);
//! a controller without it builds none of this.
//!
//! - [`Ring`]: one replica's membership: it holds its Lease `<ring>-<shard>`
//!   (labelled `reflector.rs/ring=<ring>`, renewed with leader-election timings,
//!   released on graceful stop) and observes the ring's available members;
//! - [`Sharder`]: on the ring's elected sharder (Lease `<ring>-sharder`), writes each
//!   object's shard into the label `shard.reflector.rs/<ring>`, by rendezvous
//!   hashing ([`winner`]) of its [`shard_key`] over the available members, with a
//!   `resourceVersion` precondition;
//! - [`ShardingError`]: invalid names or timings, or a second run.
//!
//! # Design
//!
//! **Membership** is leader election with one candidate per lease: the shard's
//! [`LeaderElection`](crate::leader_election::LeaderElection) on its own lease gives
//! renewals, the renew deadline and the release on cancel. A shard is *available*
//! while its lease names a holder and has not expired by the observer's clock,
//! counted from when the observer saw the lease change (client-go's rule, immune to
//! clock skew). So an aborted replica leaves the ring one lease duration after its
//! last renewal was seen, and a stopped one at once.
//!
//! **Assignment** is a label, so it survives every restart and is visible to
//! `kubectl get -L shard.reflector.rs/<ring>`; each shard's informers select
//! `shard.reflector.rs/<ring>=<shard>` ([`Ring::selector`]) and cache only their
//! share. Rendezvous hashing needs no table: any replica computes any object's
//! winner from the member list alone, and a membership change moves only the
//! objects whose winner changed — those of a leaver, or the ones a joiner now wins.
//! The `resourceVersion` precondition on every write means a sharder acting on a
//! stale view (a deposed leader, an old cache) is refused instead of overwriting.
//!
//! **Hand-over without overlap.** The sharder never relabels an object whose
//! current shard is still available:
//!
//! 1. it writes the annotation `shard.reflector.rs/<ring>-drain=<new shard>` (merge
//!    patch with the `resourceVersion` precondition);
//! 2. the old shard's sharded [`Controller`](crate::controller::Controller) sees it,
//!    stops starting reconciles of the key, lets one in flight finish, and
//!    acknowledges by removing its assignment label and the annotation in one patch
//!    (with the precondition; a 409 is retried from the fresh cached object);
//! 3. the sharder sees an unassigned object and labels it with its winner, computed
//!    then; the new shard's informer receives it only now.
//!
//! An object whose shard is unavailable (lease expired or released) moves at once,
//! drain annotation or not: that shard stopped reconciling when it lost its lease
//! (its renew deadline comes before the lease's expiry). A drain never acknowledged
//! is resolved only by the old shard's lease expiring. Children (made by
//! [`Sharder::owned`]) move by relabelling: the controller reconciles them only
//! through their owner, whose drain covers them.
//!
//! **The shard side** is [`Controller::sharded`](crate::controller::Controller::sharded):
//! it runs the ring, checks that the primary's and every owned kind's informer
//! select [`Ring::selector`] (a typed error otherwise), reconciles only while
//! [`Ring::is_member`], acknowledges drains, and on a graceful shutdown drains its
//! workers before the lease is released. The watch cannot tell a deleted object
//! from one relabelled away (both arrive as `DELETED`), so the shard reconciles a
//! `DELETED` as a deletion (`object: None`) only if it was not draining, still
//! carried this shard's label and arrived while this shard was a member.
//!
//! **Metrics** (given a [`Metrics`](crate::metrics::Metrics) with
//! [`Sharder::metrics`] and [`Controller::metrics`](crate::controller::Controller::metrics)):
//! `reflector_sharding_assignments_total`, `reflector_sharding_moves_total`,
//! `reflector_sharding_drains_started_total`,
//! `reflector_sharding_drains_acknowledged_total` and
//! `reflector_sharding_ring_members`, each labelled `ring`.
//!
//! **Wiring** one replica (see `examples/sharded_controller.rs`): a [`Ring`] named
//! after the pod; a [`Sharder`] of the primary kind and a [`Sharder::owned`] per
//! owned kind, on one [`InformerFactory`](crate::informer::InformerFactory); the
//! controller's informers from that factory, scoped with
//! `InformerScope::default().labels(ring.selector())`; the controller
//! `.sharded(&ring)`; every replica runs the same code.
//!
//! # Example
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::coordination::v1::Lease;
//! use k8s_openapi::api::core::v1::{ConfigMap, Secret};
//! use kube::Api;
//! use reflector::controller::{Action, Controller, Request};
//! use reflector::informer::{InformerFactory, InformerScope};
//! use reflector::leader_election::LeaderElectionConfig;
//! use reflector::sharding::{Ring, Sharder};
//! use tokio_util::sync::CancellationToken;
//!
//! async fn reconcile(req: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> {
//!     println!("reconciling {}", req.key);
//!     Ok(Action::done())
//! }
//!
//! # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let ring = Ring::new(
//!     Api::<Lease>::namespaced(client.clone(), "operators"),
//!     "config-maps",
//!     "replica-0", // this pod's name
//!     LeaderElectionConfig::default(),
//! )?;
//! let factory = InformerFactory::new(client);
//! let primaries = Sharder::<ConfigMap>::new(&ring, &factory)?;
//! let children = Sharder::<Secret>::owned(&ring, &factory)?;
//! let mine = InformerScope::default().labels(ring.selector());
//! let stop = CancellationToken::new();
//! let controller = Controller::new(factory.scoped::<ConfigMap>(&mine))
//!     .owns(factory.scoped::<Secret>(&mine))
//!     .sharded(&ring)
//!     .start_informers(false)
//!     .graceful_shutdown_on(stop.clone().cancelled_owned());
//! factory.start();
//! let (run, _, _) = tokio::join!(
//!     controller.run(reconcile, Arc::new(())),
//!     primaries.run(stop.clone()),
//!     children.run(stop.clone()),
//! );
//! run?;
//! # Ok(()) }
//! ```

mod error;
mod labels;
mod members;
mod metadata_patch;
mod metrics;
mod rendezvous;
mod ring;
mod shard_gate;
mod shard_key;
mod sharder;

pub use error::ShardingError;
pub use metrics::ShardingMetrics;
pub use rendezvous::winner;
pub use ring::Ring;
pub(crate) use shard_gate::{InFlight, ShardGate};
pub use shard_key::shard_key;
pub use sharder::Sharder;
