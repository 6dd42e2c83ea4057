//! [`Convertible`]: a spoke version of a custom resource, converted to and from the
//! hub version.

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Denial;

/// One version of a custom resource (a *spoke*) that converts to and from the
/// *hub*, the one version every other converts through — controller-runtime's
/// `Convertible` and `Hub`. With a hub and `n` spokes, `2n` functions convert
/// between every pair of versions.
///
/// Implement it on each spoke version's type (as `#[derive(CustomResource)]` made
/// it), with `type Hub` the hub version's type (usually the storage version), and
/// register them with
/// [`WebhookServer::conversion`](super::WebhookServer::conversion):
/// `webhooks.conversion::<Hub>().spoke::<V1>()`. The hub itself implements nothing.
///
/// The server keeps the object's `metadata` as sent (the API server refuses a
/// conversion that changes more than labels and annotations; the labels and
/// annotations a conversion sets are kept) and sets `apiVersion` and `kind`, so the
/// functions only map the fields that differ: construct the result with
/// `metadata: other.metadata` and what else is needed.
///
/// # Example
/// ```
/// use reflector::webhooks::{Convertible, Denial};
///
/// mod v1 {
///     use kube::CustomResource;
///     use schemars::JsonSchema;
///     use serde::{Deserialize, Serialize};
///     #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
///     #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub size: String }
/// }
/// mod v2 {
///     use kube::CustomResource;
///     use schemars::JsonSchema;
///     use serde::{Deserialize, Serialize};
///     #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
///     #[kube(group = "example.com", version = "v2", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub size_mb: u64 }
/// }
///
/// impl Convertible for v1::Widget {
///     type Hub = v2::Widget;
///
///     fn to_hub(self) -> Result<v2::Widget, Denial> {
///         let size_mb = self.spec.size.trim_end_matches("Mi").parse()
///             .map_err(|_| Denial::new(format!("size {:?} is not in Mi", self.spec.size)))?;
///         Ok(v2::Widget { metadata: self.metadata, spec: v2::WidgetSpec { size_mb } })
///     }
///
///     fn from_hub(hub: v2::Widget) -> Result<Self, Denial> {
///         let size = format!("{}Mi", hub.spec.size_mb);
///         Ok(v1::Widget { metadata: hub.metadata, spec: v1::WidgetSpec { size } })
///     }
/// }
///
/// let old = v1::Widget::new("w", v1::WidgetSpec { size: "64Mi".into() });
/// assert_eq!(old.to_hub().unwrap().spec.size_mb, 64);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no conversion to a hub: implement `reflector::webhooks::Convertible` for it",
    label = "no `impl Convertible for {Self}`",
    note = "`impl Convertible for {Self} {{ type Hub = ..; fn to_hub(self) -> Result<Self::Hub, Denial> {{ .. }} fn from_hub(hub: Self::Hub) -> Result<Self, Denial> {{ .. }} }}`"
)]
pub trait Convertible:
    Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The hub version's type.
    type Hub;

    /// Converts this version to the hub.
    ///
    /// # Errors
    /// A [`Denial`] when the object cannot be represented in the hub: the whole
    /// conversion review fails with its message.
    fn to_hub(self) -> Result<Self::Hub, Denial>;

    /// Converts the hub to this version.
    ///
    /// # Errors
    /// A [`Denial`] when the object cannot be represented in this version: the whole
    /// conversion review fails with its message.
    fn from_hub(hub: Self::Hub) -> Result<Self, Denial>;
}
