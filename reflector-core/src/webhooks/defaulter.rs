//! [`Defaulter`]: the defaulting (mutating) hook of a kind.

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::AdmissionContext;

/// Fills in defaults on an object before the API server stores it: the hook of a
/// mutating admission webhook, as controller-runtime's `CustomDefaulter`.
///
/// Implement it on the kind (the type `#[derive(CustomResource)]` made) and register
/// it with [`WebhookServer::defaulting`](super::WebhookServer::defaulting). The hook
/// changes the typed object in place; the server computes the JSON Patch the API
/// server applies from the object before and after the hook, so fields the type does
/// not know are left alone. It is called on `CREATE` and `UPDATE`.
///
/// A defaulter cannot refuse a request: refuse in a [`Validator`](super::Validator),
/// which the API server calls after every mutating webhook.
///
/// # Example
/// ```
/// use kube::CustomResource;
/// use kube::core::admission::Operation;
/// use reflector::webhooks::{AdmissionContext, Defaulter};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
/// pub struct WidgetSpec {
///     replicas: Option<u32>,
/// }
///
/// impl Defaulter for Widget {
///     fn set_defaults(&mut self, _ctx: &AdmissionContext) {
///         self.spec.replicas.get_or_insert(1);
///     }
/// }
///
/// let mut widget = Widget::new("w", WidgetSpec { replicas: None });
/// widget.set_defaults(&AdmissionContext::new(Operation::Create));
/// assert_eq!(widget.spec.replicas, Some(1));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no defaulting hook: implement `reflector::webhooks::Defaulter` for it",
    label = "no `impl Defaulter for {Self}`",
    note = "`impl Defaulter for {Self} {{ fn set_defaults(&mut self, ctx: &AdmissionContext) {{ .. }} }}`"
)]
pub trait Defaulter:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Sets the defaults of `self`, the object being created or updated, for the
    /// request `ctx` describes.
    fn set_defaults(&mut self, ctx: &AdmissionContext);
}
