//! Admission and conversion webhooks typed from the kinds (feature `webhooks`):
//! defaulting, validation and hub-and-spoke CRD conversion, served over HTTPS with
//! certificates that look after themselves — controller-runtime's webhook builder,
//! in kube-runtime's Rust shape.
//!
//! - [`Defaulter`]: fill in defaults on the typed object; the JSON Patch is the
//!   library's.
//! - [`Validator`]: admit with warnings, or refuse with a [`Denial`] (message and
//!   code), on create, update and (opt-in) delete.
//! - [`Convertible`]: each spoke version converts to and from one hub version.
//! - [`AdmissionContext`]: the operation, dry run, user and namespace a hook is
//!   called for.
//! - [`WebhookServer`]: registers hooks by type (`defaulting::<Widget>()`,
//!   `validating::<Widget>()`, `conversion::<Hub>().spoke::<V1>()`) on paths derived
//!   from the type, and serves them; a
//!   [`Manager`](crate::manager::Manager) runs it on every replica
//!   ([`add_webhooks`](crate::manager::Manager::add_webhooks)) and writes its
//!   Service, webhook configurations and CRD conversion stanza into its
//!   [`manifests`](crate::manager::Manager::manifests).
//! - [`Certificates`]: self-signed and renewed, or mounted files reloaded when they
//!   change; the caBundle keeper
//!   ([`WebhookServer::keep_ca_bundle`]) keeps the API server trusting them.
//! - [`WebhookError`]: why the server could not start or serve.
//!
//! A kind without the hook it is registered for does not compile, and says so:
//!
//! ```text
//! error[E0277]: `Widget` has no defaulting hook: implement `reflector::webhooks::Defaulter` for it
//! ```
//!
//! # Example
//! ```no_run
//! use kube::CustomResource;
//! use reflector::manager::Manager;
//! use reflector::webhooks::{AdmissionContext, Defaulter, Denial, Validator, WebhookServer};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//! pub struct WidgetSpec {
//!     replicas: Option<u32>,
//! }
//!
//! impl Defaulter for Widget {
//!     fn set_defaults(&mut self, _: &AdmissionContext) {
//!         self.spec.replicas.get_or_insert(1);
//!     }
//! }
//!
//! impl Validator for Widget {
//!     fn validate_update(&self, old: &Self, _: &AdmissionContext) -> Result<Vec<String>, Denial> {
//!         if self.spec.replicas < old.spec.replicas {
//!             return Err(Denial::new("replicas may only grow"));
//!         }
//!         Ok(Vec::new())
//!     }
//! }
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let client = kube::Client::try_default().await?;
//! let mut manager = Manager::new(client.clone());
//! let mut webhooks = WebhookServer::new("widget-webhooks").keep_ca_bundle(client);
//! webhooks.defaulting::<Widget>().validating::<Widget>();
//! manager.add_webhooks(webhooks);
//! manager.run().await?;
//! # Ok(()) }
//! ```

mod admission;
mod ca_bundle;
mod certs;
mod context;
mod conversion;
mod convertible;
mod defaulter;
mod denial;
mod error;
mod hook;
mod manifests;
mod patch;
mod serve;
mod server;
mod validator;

pub use certs::Certificates;
pub use context::AdmissionContext;
pub use conversion::Conversion;
pub use convertible::Convertible;
pub use defaulter::Defaulter;
pub use denial::Denial;
pub use error::WebhookError;
pub use server::WebhookServer;
pub use validator::Validator;
