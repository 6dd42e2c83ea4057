//! A controller as a [`Manager`](crate::manager::Manager) runs it: its types erased,
//! its term the manager's (a leader-only controller follows the manager's election;
//! one that runs on every replica has one endless term; a sharded one keeps its
//! shard's), its shutdown the manager's.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::leader_election::LeaderElection;
use crate::metrics::Metrics;
use crate::object::Object;

use super::action::Action;
use super::controller::Controller;
use super::error::ControllerError;
use super::error_policy::ErrorPolicy;
use super::footprint::Footprint;
use super::request::Request;
use super::run::Prepared;
use super::term::Term;

/// What a manager gives each of its controllers.
pub(crate) struct Managed {
    /// The manager's election, if it has one: a leader-only controller reconciles
    /// in its terms. The manager runs it and gives the lease up.
    pub(crate) election: Option<LeaderElection>,
    /// The manager's metrics, for a controller not given its own.
    pub(crate) metrics: Metrics,
    /// The manager's: how long reconciles in flight may run once it shuts down.
    pub(crate) graceful_shutdown_timeout: Duration,
}

/// A controller added to a manager, not yet started.
pub(crate) trait ManagedController: Send {
    /// The controller's name.
    fn name(&self) -> &str;
    /// The kinds it watches and how it uses them; their readiness checks.
    fn footprint(&mut self) -> &mut Footprint;
    /// Whether it reconciles only while the manager's replica leads (false for one
    /// that runs on every replica, and for a sharded one).
    fn leader_only(&self) -> bool;
    /// Registers its handlers and claims a shard's lease, as `run` does first.
    ///
    /// # Errors
    /// [`ControllerError::Informer`] if an informer has stopped; with the
    /// `sharding` feature, [`ControllerError::LeaderElection`] or
    /// `ControllerError::Sharding` as `run`.
    fn prepare(
        self: Box<Self>,
        managed: Managed,
    ) -> Result<Box<dyn PreparedController>, ControllerError>;
}

/// A managed controller ready to run: the steps of [`Prepared`], in its order.
pub(crate) trait PreparedController: Send {
    /// The controller's name.
    fn name(&self) -> &str;
    /// Starts the informers nobody started, and a shard's lease.
    fn start(&mut self);
    /// Reconciles term after term until `graceful` fires, then drains.
    fn reconcile<'a>(
        &'a mut self,
        graceful: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), ControllerError>>;
    /// Gives a shard's lease up (the manager gives its own election's up).
    fn release(&mut self) -> BoxFuture<'_, ()>;
    /// Removes the handlers and stops the informers it started.
    fn stop(self: Box<Self>) -> BoxFuture<'static, ()>;
}

/// A controller with its reconcile function and context.
struct WithReconcile<K: Object, P, R, Ctx> {
    controller: Controller<K, P>,
    reconcile: R,
    ctx: Arc<Ctx>,
}

impl<K: Object, P> Controller<K, P> {
    /// This controller, to be run by a manager with `reconcile` and `ctx`.
    pub(crate) fn managed<R, Fut, E, Ctx>(
        self,
        reconcile: R,
        ctx: Arc<Ctx>,
    ) -> Box<dyn ManagedController>
    where
        R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Display + 'static,
        P: ErrorPolicy<K, E, Ctx>,
        Ctx: Send + Sync + 'static,
    {
        Box::new(WithReconcile {
            controller: self,
            reconcile,
            ctx,
        })
    }
}

impl<K, P, R, Fut, E, Ctx> ManagedController for WithReconcile<K, P, R, Ctx>
where
    K: Object,
    R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Display + 'static,
    P: ErrorPolicy<K, E, Ctx>,
    Ctx: Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.controller.name
    }

    fn footprint(&mut self) -> &mut Footprint {
        &mut self.controller.footprint
    }

    fn leader_only(&self) -> bool {
        #[cfg(feature = "sharding")]
        if self.controller.shard.is_some() {
            return false;
        }
        self.controller.leader_only
    }

    fn prepare(
        self: Box<Self>,
        managed: Managed,
    ) -> Result<Box<dyn PreparedController>, ControllerError> {
        let leader_only = self.leader_only();
        let WithReconcile {
            mut controller,
            reconcile,
            ctx,
        } = *self;
        if controller.shutdown.is_some() || controller.shutdown_on_signal {
            tracing::warn!(controller = %controller.name,
                "a managed controller shuts down with its manager: its own shutdown trigger and signals are ignored");
        }
        if controller.metrics.is_none() {
            controller.metrics = Some(managed.metrics);
        }
        let term = match managed.election {
            Some(election) if leader_only => Term::following(&controller.name, election),
            _ => controller.term()?,
        };
        let mut prepared = controller.prepare(reconcile, ctx, term)?;
        prepared.set_graceful_shutdown_timeout(managed.graceful_shutdown_timeout);
        Ok(Box::new(prepared))
    }
}

impl<K, R, Fut, E, P, Ctx> PreparedController for Prepared<K, R, P, Ctx>
where
    K: Object,
    R: Fn(Request<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Display + 'static,
    P: ErrorPolicy<K, E, Ctx>,
    Ctx: Send + Sync + 'static,
{
    fn name(&self) -> &str {
        Prepared::name(self)
    }

    fn start(&mut self) {
        Prepared::start(self);
    }

    fn reconcile<'a>(
        &'a mut self,
        graceful: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), ControllerError>> {
        Box::pin(Prepared::reconcile(self, graceful))
    }

    fn release(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(Prepared::release(self))
    }

    fn stop(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(Prepared::stop(*self))
    }
}
