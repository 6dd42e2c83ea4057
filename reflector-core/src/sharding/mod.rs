//! Horizontal sharding of one controller across replicas, on the cluster's own
//! primitives: Leases for membership, labels for assignment, label selectors so each
//! replica watches only its share. None of client-go, controller-runtime or
//! kube-runtime shards a controller; they run one active replica.
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
//! # Not yet: drain hand-over and the shard side
//!
//! Today a move is a relabel: an object whose old shard is still available can be
//! reconciled by the old shard (until its informer sees the label change) and the
//! new one at the same time. The intended protocol, which the types here are shaped
//! for:
//!
//! 1. The sharder, instead of relabelling an object whose current shard is live
//!    (the `live_move` case in [`Sharder`]), sets the annotation
//!    `shard.reflector.rs/<ring>-drain=<new shard>` (with the `resourceVersion`
//!    precondition).
//! 2. The old shard's controller (`Controller::sharded(ring)`) sees the annotation,
//!    lets any in-flight reconcile of the key finish, stops taking the key, and
//!    acknowledges by removing its assignment label and the annotation in one patch.
//! 3. The sharder sees the unassigned object and labels it with the new shard.
//!    Objects of an unavailable shard (expired or released lease) skip steps 1–2:
//!    their shard has stopped, so they move at once. A drain not acknowledged
//!    within a lease duration is treated as the old shard being dead only once its
//!    lease has expired.
//!
//! The shard side — `Controller::sharded(ring)` adding [`Ring::selector`] to the
//! primary's and owned kinds' informers, stopping while not a member
//! ([`Ring::is_member`]), acknowledging drains — and metrics (assignments, moves,
//! drains, ring size) are still to come.
//!
//! # Example
//! ```no_run
//! use k8s_openapi::api::coordination::v1::Lease;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use reflector_core::informer::{InformerFactory, InformerScope};
//! use reflector_core::leader_election::LeaderElectionConfig;
//! use reflector_core::sharding::{Ring, Sharder};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let ring = Ring::new(
//!     Api::<Lease>::namespaced(client.clone(), "operators"),
//!     "config-maps",
//!     "replica-0",
//!     LeaderElectionConfig::default(),
//! )?;
//! let factory = InformerFactory::new(client);
//! let sharder = Sharder::<ConfigMap>::new(&ring, &factory)?;
//! // This replica's share, for its controller:
//! let mine = factory.scoped::<ConfigMap>(&InformerScope::default().labels(ring.selector()));
//! factory.start();
//! let stop = CancellationToken::new();
//! tokio::try_join!(ring.run(stop.clone()), sharder.run(stop.clone()))?;
//! # let _ = mine;
//! # Ok(()) }
//! ```

mod error;
mod labels;
mod members;
mod metadata_patch;
mod rendezvous;
mod ring;
mod shard_gate;
mod shard_key;
mod sharder;

pub use error::ShardingError;
pub use rendezvous::winner;
pub use ring::Ring;
pub(crate) use shard_gate::ShardGate;
pub use shard_key::shard_key;
pub use sharder::Sharder;
