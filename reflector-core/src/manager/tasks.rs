//! The manager's [`Task`]s while it runs: each started once the informers synced,
//! a leader-only one in each term of the election, and stopped on shutdown.

use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::informer::InformerFactory;
use crate::leader_election::{LeaderElection, LeaderTransitions};

use super::task::Task;

/// The election a leader-only task follows: subscribed before the election runs,
/// so no term is missed.
struct Terms {
    election: LeaderElection,
    transitions: LeaderTransitions,
}

/// The manager's tasks, each with the terms it runs in (`None`: one run, from the
/// start until the shutdown).
pub(super) struct Tasks(Vec<(Task, Option<Terms>)>);

impl Tasks {
    /// `tasks`; the leader-only ones follow `election`, if there is one.
    pub(super) fn new(tasks: Vec<Task>, election: Option<&LeaderElection>) -> Self {
        Tasks(
            tasks
                .into_iter()
                .map(|task| {
                    let terms = election.filter(|_| task.leader_only).map(|e| Terms {
                        election: e.clone(),
                        transitions: e.transitions(),
                    });
                    (task, terms)
                })
                .collect(),
        )
    }

    /// Runs every task once `factory`'s informers have synced, until `graceful`
    /// fires; then lets each finish within `timeout` and aborts the rest.
    ///
    /// # Cancel safety
    /// Dropping the future aborts every task.
    pub(super) async fn run(
        self,
        factory: &InformerFactory,
        graceful: &CancellationToken,
        timeout: Duration,
    ) {
        if self.0.is_empty() {
            return;
        }
        tokio::select! {
            biased;
            () = graceful.cancelled() => return,
            synced = factory.wait_synced() => {
                if let Err(e) = synced {
                    tracing::warn!(error = %e, "an informer stopped before it synced; starting the tasks anyway");
                }
            }
        }
        let runs = self.0.into_iter().map(|(task, terms)| async move {
            match terms {
                None => once(&task, graceful, timeout).await,
                Some(terms) => in_terms(&task, terms, graceful, timeout).await,
            }
        });
        futures::future::join_all(runs).await;
    }
}

/// Runs `task` from now until `graceful` fires, then lets it finish within `timeout`.
async fn once(task: &Task, graceful: &CancellationToken, timeout: Duration) {
    let mut run = JoinSet::new();
    run.spawn((task.run)(graceful.child_token()));
    tracing::info!(task = %task.name, "task started");
    tokio::select! {
        () = graceful.cancelled() => {}
        ended = run.join_next() => {
            log_end(&task.name, ended);
            return;
        }
    }
    finish(&task.name, run, Some(Instant::now() + timeout)).await;
}

/// Runs `task` in each term of `terms` until `graceful` fires: stopped when the
/// term is lost, awaited until another replica could take over, then aborted.
async fn in_terms(task: &Task, mut terms: Terms, graceful: &CancellationToken, timeout: Duration) {
    loop {
        tokio::select! {
            biased;
            () = graceful.cancelled() => return,
            () = terms.transitions.acquired() => {}
        }
        let stop = graceful.child_token();
        let mut run = JoinSet::new();
        run.spawn((task.run)(stop.clone()));
        tracing::info!(task = %task.name, "term acquired: task started");
        let until = tokio::select! {
            () = graceful.cancelled() => {
                finish(&task.name, run, Some(Instant::now() + timeout)).await;
                return;
            }
            () = terms.transitions.lost() => terms.election.takeover_bound(),
            ended = run.join_next() => {
                log_end(&task.name, ended);
                tokio::select! {
                    () = graceful.cancelled() => return,
                    () = terms.transitions.lost() => continue,
                }
            }
        };
        tracing::warn!(task = %task.name, "term lost: stopping the task");
        stop.cancel();
        finish(&task.name, run, until).await;
    }
}

/// Waits for the task in `run` until `deadline` (`None`: no limit), then aborts it.
async fn finish(name: &str, mut run: JoinSet<()>, deadline: Option<Instant>) {
    let ended = match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, run.join_next())
            .await
            .ok(),
        None => Some(run.join_next().await),
    };
    match ended {
        Some(ended) => log_end(name, ended),
        None => {
            tracing::error!(task = %name, "task still running at its deadline; aborting it");
            run.abort_all();
            while run.join_next().await.is_some() {}
        }
    }
}

fn log_end(name: &str, ended: Option<Result<(), tokio::task::JoinError>>) {
    match ended {
        Some(Err(e)) if e.is_panic() => tracing::error!(task = %name, "task panicked"),
        _ => tracing::info!(task = %name, "task ended"),
    }
}
