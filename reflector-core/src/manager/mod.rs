//! The [`Manager`]: one operator process running several controllers and tasks
//! behind one leader election, one shared informer factory, one metrics registry
//! and one `/metrics`, `/healthz`, `/readyz` server, shut down in order — as
//! controller-runtime's `Manager`, in kube-runtime's Rust shape.
//!
//! - [`Manager`]: the builder and its [`run`](Manager::run);
//! - [`Task`]: a plain function run beside the controllers, leader-only or on
//!   every replica;
//! - [`Rbac`], [`DeployOptions`] and [`Manifests`]: the least RBAC for what the
//!   manager runs, and the objects that deploy it;
//! - `add_webhooks` (feature `webhooks`): a `webhooks::WebhookServer` run on every
//!   replica, its Service and webhook configurations in the manifests;
//! - [`ManagerError`]: why it could not start, or how its run failed.
//!
//! One controller alone, with no election and no server, needs no manager:
//! [`Controller::run`](crate::controller::Controller::run) runs it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use reflector::manager::Task;
//! use reflector::prelude::*;
//!
//! async fn reconcile(req: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> {
//!     println!("{}", req.key);
//!     Ok(Action::done())
//! }
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let client = kube::Client::try_default().await?;
//! let mut manager = Manager::new(client)
//!     .leader_election("configmap-operator", LeaderElectionConfig::default())?;
//! let config_maps = manager.factory().informer::<ConfigMap>();
//! manager.add(Controller::new(config_maps), reconcile, Arc::new(()));
//! manager.add_task(Task::new("warm-up", |_stop| async {}).every_replica());
//! manager.run().await?;
//! # Ok(()) }
//! ```

mod error;
#[allow(clippy::module_inception)]
mod manager;
mod manifests;
mod rbac;
mod run;
#[cfg(feature = "metrics-server")]
mod serving;
mod task;
mod tasks;
#[cfg(feature = "webhooks")]
mod webhooks;

pub use error::ManagerError;
pub use manager::Manager;
pub use manifests::{DeployOptions, Manifests};
pub use rbac::Rbac;
pub use task::Task;
