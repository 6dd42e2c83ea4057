//! [`Validator`]: the validating hook of a kind.

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{AdmissionContext, Denial};

/// Accepts or refuses an object before the API server stores (or deletes) it: the
/// hook of a validating admission webhook, as controller-runtime's
/// `CustomValidator`.
///
/// Implement it on the kind and register it with
/// [`WebhookServer::validating`](super::WebhookServer::validating). Each method
/// answers `Ok(warnings)` to admit (the warnings reach the client: `kubectl` prints
/// them) or `Err(Denial)` to refuse with a message and a status code. Every method
/// admits by default, so implement only those that check something.
///
/// Deletions reach [`validate_delete`](Self::validate_delete) only when
/// [`VALIDATES_DELETE`](Self::VALIDATES_DELETE) is `true`: the webhook
/// configuration's rules then include `DELETE`, so the API server calls the webhook
/// on deletes.
///
/// # Example
/// ```
/// use kube::CustomResource;
/// use kube::core::admission::Operation;
/// use reflector::webhooks::{AdmissionContext, Denial, Validator};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
/// pub struct WidgetSpec {
///     replicas: u32,
/// }
///
/// impl Validator for Widget {
///     fn validate_create(&self, _ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
///         match self.spec.replicas {
///             0 => Err(Denial::new("replicas must be at least 1").code(422)),
///             n if n > 10 => Ok(vec![format!("{n} replicas is a lot")]),
///             _ => Ok(Vec::new()),
///         }
///     }
///
///     fn validate_update(&self, old: &Self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
///         if self.spec.replicas < old.spec.replicas {
///             return Err("replicas may only grow".into());
///         }
///         self.validate_create(ctx)
///     }
/// }
///
/// let ctx = AdmissionContext::new(Operation::Create);
/// assert!(Widget::new("w", WidgetSpec { replicas: 0 }).validate_create(&ctx).is_err());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no validating hook: implement `reflector::webhooks::Validator` for it",
    label = "no `impl Validator for {Self}`",
    note = "`impl Validator for {Self} {{ fn validate_create(&self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {{ .. }} }}`"
)]
pub trait Validator:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Whether deletes are validated: `true` adds `DELETE` to the webhook's rules and
    /// calls [`validate_delete`](Self::validate_delete). Default `false`, so a delete
    /// costs no webhook call.
    const VALIDATES_DELETE: bool = false;

    /// Validates `self`, the object being created. Default: admitted, no warnings.
    ///
    /// # Errors
    /// A [`Denial`] refuses the create.
    fn validate_create(&self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
        let _ = ctx;
        Ok(Vec::new())
    }

    /// Validates `self`, the object as updated, against `old`, the object stored.
    /// Default: admitted, no warnings.
    ///
    /// # Errors
    /// A [`Denial`] refuses the update.
    fn validate_update(&self, old: &Self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
        let _ = (old, ctx);
        Ok(Vec::new())
    }

    /// Validates deleting `self`, the object stored; called only when
    /// [`VALIDATES_DELETE`](Self::VALIDATES_DELETE) is `true`. Default: admitted, no
    /// warnings.
    ///
    /// # Errors
    /// A [`Denial`] refuses the delete.
    fn validate_delete(&self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
        let _ = ctx;
        Ok(Vec::new())
    }
}
