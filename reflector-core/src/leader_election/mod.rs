//! Leader election on `coordination.k8s.io/v1` Leases, as client-go's
//! `tools/leaderelection` with its `LeaseLock`: among the replicas of an operator,
//! at most one leads at a time.
//!
//! - [`LeaderElectionConfig`]: lease duration 15 s, renew deadline 10 s, retry
//!   period 2 s (client-go's defaults), the identity, `release_on_cancel`, metrics;
//! - [`LeaderElection`]: one replica's handle: [`run`](LeaderElection::run) it, ask
//!   [`is_leader`](LeaderElection::is_leader), await
//!   [`leading`](LeaderElection::leading) / [`not_leading`](LeaderElection::not_leading),
//!   or follow every change with [`transitions`](LeaderElection::transitions);
//! - [`LeaderState`]: stopped, following (whom), or leading;
//! - [`LeaderTransitions`]: every state the replica passes through, none merged (a
//!   `Stream`);
//! - [`LeaderElectionMetrics`]: the families an election reports to;
//! - [`LeaderElectionError`]: invalid configuration, or a second run.
//!
//! A [`Manager`](crate::manager::Manager) with an election
//! ([`Manager::leader_election`](crate::manager::Manager::leader_election)) runs it,
//! keeps its controllers' informers warm while following and reconciles only while
//! leading.
//!
//! ```no_run
//! use k8s_openapi::api::coordination::v1::Lease;
//! use kube::Api;
//! use reflector::leader_election::{LeaderElection, LeaderElectionConfig};
//! # fn f(client: kube::Client) -> Result<(), reflector::leader_election::LeaderElectionError> {
//! let election = LeaderElection::new(
//!     Api::<Lease>::default_namespaced(client),
//!     "widget-controller",
//!     LeaderElectionConfig::default(),
//! )?;
//! assert!(!election.is_leader(), "not running yet");
//! # Ok(()) }
//! ```

mod config;
mod election;
mod elector;
mod error;
mod lease_lock;
mod metrics;
mod observed_lease;
mod state;
mod transitions;

pub use config::{
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, LeaderElectionConfig,
};
pub use election::LeaderElection;
#[cfg(feature = "sharding")]
pub(crate) use election::RunGuard;
pub use error::LeaderElectionError;
pub use metrics::LeaderElectionMetrics;
pub(crate) use observed_lease::ObservedLease;
pub use state::LeaderState;
pub use transitions::LeaderTransitions;
