//! [`Term`]: the spans during which a controller reconciles — the terms of a lease
//! it holds (leadership of a manager's election, or a shard's membership of its
//! ring), or one endless term without a lease.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::leader_election::{LeaderElection, LeaderTransitions};
use crate::object::Object;

use super::controller::Controller;
use super::error::ControllerError;
use super::key_gate::KeyGate;

/// The terms a controller's `run` holds, one after the other: each is **acquired**
/// (workers start), then **lost** (no new reconcile; those in flight may finish
/// until another replica could take over) or, on shutdown, **released** (after the
/// workers drained, so a lease is given up only once no reconcile runs).
///
/// A controller without a lease has one term, acquired at once and never lost. A
/// leased term follows every acquisition and loss of its election, none merged (a
/// lease lost and taken back between two polls still ends the term).
pub(crate) struct Term {
    /// The controller's name, for the logs.
    name: String,
    lease: Option<Lease>,
    gate: Option<Arc<dyn KeyGate>>,
    /// Whether the one term of a controller without a lease was acquired.
    acquired_once: bool,
}

/// A lease whose terms a controller follows.
struct Lease {
    /// The election whose terms these are (a shard's membership lease is one): its
    /// transitions mark acquisitions and losses; its takeover bound, how long a lost
    /// term's reconciles may go on.
    election: LeaderElection,
    /// Subscribed before the election runs, so no transition is missed.
    transitions: LeaderTransitions,
    /// Runs the election (and what must end before it gives the lease up) until its
    /// token fires; taken by `start`. `None` for an election run by its owner (a
    /// manager's, shared by its controllers).
    run: Option<Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send>>,
    /// Fired by `release`.
    stop: CancellationToken,
    /// The running `run`; aborted (no release) if the term is dropped.
    task: JoinSet<()>,
}

impl Term {
    /// One endless term, with no lease and no gate.
    pub(crate) fn endless(name: &str) -> Self {
        Term {
            name: name.to_owned(),
            lease: None,
            gate: None,
            acquired_once: false,
        }
    }

    /// Terms of `election`'s lease, whose run (claimed already) is `run`: given a
    /// token, it runs the election until the token fires, then releases. `gate`, if
    /// any, filters the primary's keys.
    #[cfg_attr(not(feature = "sharding"), allow(dead_code))]
    pub(crate) fn leased(
        name: &str,
        election: LeaderElection,
        run: impl FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send + 'static,
        gate: Option<Arc<dyn KeyGate>>,
    ) -> Self {
        Term {
            name: name.to_owned(),
            lease: Some(Lease {
                transitions: election.transitions(),
                election,
                run: Some(Box::new(run)),
                stop: CancellationToken::new(),
                task: JoinSet::new(),
            }),
            gate,
            acquired_once: false,
        }
    }

    /// Terms of `election`'s lease, run by its owner (a manager, which gives the
    /// lease up once every controller following it has drained): the term follows
    /// its acquisitions and losses, and neither runs nor releases it.
    pub(crate) fn following(name: &str, election: LeaderElection) -> Self {
        Term {
            name: name.to_owned(),
            lease: Some(Lease {
                transitions: election.transitions(),
                election,
                run: None,
                stop: CancellationToken::new(),
                task: JoinSet::new(),
            }),
            gate: None,
            acquired_once: false,
        }
    }

    /// The gate of the primary's keys, if this term has one.
    pub(crate) fn gate(&self) -> Option<&Arc<dyn KeyGate>> {
        self.gate.as_ref()
    }

    /// Starts running the lease (from the start of `run`, so the informers sync while
    /// this replica waits for its term).
    pub(crate) fn start(&mut self) {
        if let Some(lease) = &mut self.lease
            && let Some(run) = lease.run.take()
        {
            lease.task.spawn(run(lease.stop.clone()));
        }
    }

    /// Waits for the next term: `true` once acquired, `false` if `cancel` fired
    /// first. A leased term starts with every cached object queued, by `requeue`
    /// (the previous holder's requeue timers are gone, as after a restart).
    ///
    /// # Cancel safety
    /// Cancel-safe: a term acquired meanwhile is found by the next call.
    pub(crate) async fn acquired(
        &mut self,
        cancel: &CancellationToken,
        requeue: impl FnOnce(),
    ) -> bool {
        let Some(lease) = &mut self.lease else {
            let first = !std::mem::replace(&mut self.acquired_once, true);
            return first && !cancel.is_cancelled();
        };
        tracing::info!(controller = %self.name, lease = %lease.election.name(), "waiting for the lease");
        tokio::select! {
            biased;
            () = cancel.cancelled() => return false,
            () = lease.transitions.acquired() => {}
        }
        tracing::info!(controller = %self.name, "term acquired: reconciling every cached object");
        requeue();
        true
    }

    /// Resolves when the term is lost, with the instant until which its reconciles
    /// may go on (the earliest another replica could take the lease; `None`: no
    /// bound known). Never without a lease.
    ///
    /// # Cancel safety
    /// Cancel-safe: a loss meanwhile is found by the next call.
    pub(crate) async fn lost(&mut self) -> Option<Instant> {
        let Some(lease) = &mut self.lease else {
            return std::future::pending().await;
        };
        lease.transitions.lost().await;
        tracing::warn!(controller = %self.name, "term lost: no new reconciles; waiting for those in flight");
        lease.election.takeover_bound()
    }

    /// Stops the lease's run, which releases the lease if configured, and waits for
    /// it. Call once no reconcile runs. Nothing to do without a lease, or for a
    /// lease its owner runs.
    ///
    /// # Cancel safety
    /// Dropping the future aborts the run (no release: the lease expires).
    pub(crate) async fn release(&mut self) {
        let Some(lease) = &mut self.lease else {
            return;
        };
        lease.stop.cancel();
        while let Some(joined) = lease.task.join_next().await {
            if let Err(e) = joined {
                tracing::error!(controller = %self.name, error = %e, "the lease's task failed");
            }
        }
    }
}

impl<K: Object, P> Controller<K, P> {
    /// The terms this controller reconciles in when it runs alone: its shard's, or
    /// one endless term. A shard's lease is claimed here, before anything starts.
    pub(super) fn term(&mut self) -> Result<Term, ControllerError> {
        #[cfg(feature = "sharding")]
        if let Some(shard) = self.shard.take() {
            return self.shard_term(shard);
        }
        Ok(Term::endless(&self.name))
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use kube::Api;

    use super::*;
    use crate::leader_election::{LeaderElectionConfig, LeaderState};

    /// An election whose client is never used: these tests publish its states.
    fn election() -> LeaderElection {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let config = LeaderElectionConfig::default().identity("me");
        LeaderElection::new(Api::namespaced(client, "ns"), "lease", config).unwrap()
    }

    /// A lease lost and taken back before the term looks still ends the term, and
    /// the next term starts with every cached object queued again.
    #[tokio::test]
    async fn a_loss_and_a_retake_seen_late_are_two_terms() {
        let election = election();
        let mut term = Term::leased("c", election.clone(), |_| Box::pin(async {}), None);
        let cancel = CancellationToken::new();
        election.publish(LeaderState::Leading);
        election.publish(LeaderState::Following { holder: None });
        election.publish(LeaderState::Leading);

        let mut requeues = 0;
        assert!(term.acquired(&cancel, || requeues += 1).await);
        assert!(
            term.lost().now_or_never().is_some(),
            "the loss was merged into the retake"
        );
        assert!(term.acquired(&cancel, || requeues += 1).await);
        assert_eq!(requeues, 2, "each term starts with every object queued");
        assert!(term.lost().now_or_never().is_none(), "leading now");
        cancel.cancel();
        assert!(!term.acquired(&cancel, || requeues += 1).await);
        assert_eq!(requeues, 2);
    }

    /// Without a lease: one term, acquired at once (no requeue: the informers'
    /// initial lists queued every object) and never lost; none after a cancel.
    #[tokio::test]
    async fn without_a_lease_one_endless_term() {
        let cancel = CancellationToken::new();
        let mut term = Term::endless("c");
        assert!(term.acquired(&cancel, || panic!("no requeue")).await);
        assert!(term.lost().now_or_never().is_none());
        let mut cancelled = Term::endless("c");
        cancel.cancel();
        assert!(!cancelled.acquired(&cancel, || panic!("no requeue")).await);
    }
}
