//! CRD conversion through a hub: [`Conversion`], the registration of a hub and its
//! spokes, and the answer to an `apiextensions.k8s.io/v1` ConversionReview.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::{CustomResourceExt, Resource, Status};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::hook::{Answer, Handler, HookKind, guarded};
use super::{Convertible, Denial, WebhookServer};

/// A ConversionReview's `apiVersion`.
const META_API_VERSION_V1: &str = "apiextensions.k8s.io/v1";
/// A ConversionReview's `kind`.
const META_KIND: &str = "ConversionReview";

/// The registration of a CRD's conversion: its hub and spokes, made by
/// [`WebhookServer::conversion`] and added to the server when dropped (at the end
/// of the statement that makes it).
///
/// `spoke::<S>()` accepts only a spoke whose [`Convertible::Hub`] is this hub: a
/// spoke converting to another type does not compile.
///
/// # Example
/// ```
/// use reflector::webhooks::{Convertible, Denial, WebhookServer};
///
/// mod v1 {
///     use kube::CustomResource;
///     use schemars::JsonSchema;
///     use serde::{Deserialize, Serialize};
///     #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
///     #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub size: u32 }
/// }
/// mod v2 {
///     use kube::CustomResource;
///     use schemars::JsonSchema;
///     use serde::{Deserialize, Serialize};
///     #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
///     #[kube(group = "example.com", version = "v2", kind = "Widget", namespaced)]
///     pub struct WidgetSpec { pub size: u64 }
/// }
///
/// impl Convertible for v1::Widget {
///     type Hub = v2::Widget;
///     fn to_hub(self) -> Result<v2::Widget, Denial> {
///         let spec = v2::WidgetSpec { size: self.spec.size.into() };
///         Ok(v2::Widget { metadata: self.metadata, spec })
///     }
///     fn from_hub(hub: v2::Widget) -> Result<Self, Denial> {
///         let size = hub.spec.size.try_into().map_err(|_| Denial::new("too large for v1"))?;
///         Ok(v1::Widget { metadata: hub.metadata, spec: v1::WidgetSpec { size } })
///     }
/// }
///
/// let mut webhooks = WebhookServer::new("widget-webhooks");
/// webhooks.conversion::<v2::Widget>().spoke::<v1::Widget>();
/// ```
pub struct Conversion<'a, H>
where
    H: Resource<DynamicType = ()> + CustomResourceExt + Serialize + DeserializeOwned,
    H: Send + Sync + 'static,
{
    server: &'a mut WebhookServer,
    table: Option<Table<H>>,
}

impl<'a, H> Conversion<'a, H>
where
    H: Resource<DynamicType = ()> + CustomResourceExt + Serialize + DeserializeOwned,
    H: Send + Sync + 'static,
{
    pub(super) fn new(server: &'a mut WebhookServer) -> Self {
        let mut versions = BTreeMap::new();
        versions.insert(
            HookKind::of::<H>().api_version(),
            Version {
                to_hub: decode::<H>,
                from_hub: encode::<H>,
                crd: H::crd,
            },
        );
        Conversion {
            server,
            table: Some(Table {
                hub: HookKind::of::<H>(),
                versions,
            }),
        }
    }

    /// Adds the spoke version `S`, converted through this hub. A spoke of another
    /// group, kind or resource than the hub's is not a version of its CRD: it is
    /// left out, with an error logged.
    pub fn spoke<S>(mut self) -> Self
    where
        S: Convertible<Hub = H> + CustomResourceExt,
    {
        let (hub, spoke) = (HookKind::of::<H>(), HookKind::of::<S>());
        if (&hub.group, &hub.kind, &hub.plural) != (&spoke.group, &spoke.kind, &spoke.plural) {
            tracing::error!(
                hub = %format!("{} {}", hub.api_version(), hub.kind),
                spoke = %format!("{} {}", spoke.api_version(), spoke.kind),
                "a spoke must be another version of its hub's CRD; left out"
            );
            return self;
        }
        if let Some(table) = &mut self.table {
            table.versions.insert(
                HookKind::of::<S>().api_version(),
                Version {
                    to_hub: spoke_to_hub::<S>,
                    from_hub: hub_to_spoke::<S>,
                    crd: S::crd,
                },
            );
        }
        self
    }
}

impl<H> fmt::Debug for Conversion<'_, H>
where
    H: Resource<DynamicType = ()> + CustomResourceExt + Serialize + DeserializeOwned,
    H: Send + Sync + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conversion")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl<H> Drop for Conversion<'_, H>
where
    H: Resource<DynamicType = ()> + CustomResourceExt + Serialize + DeserializeOwned,
    H: Send + Sync + 'static,
{
    fn drop(&mut self) {
        if let Some(table) = self.table.take() {
            self.server.add_conversion(table.into_route());
        }
    }
}

/// A registered conversion, as the server and the manifests need it.
#[derive(Clone)]
pub(crate) struct ConversionRoute {
    /// The hub's kind (its group and plural name the CRD).
    pub(crate) hub: HookKind,
    /// Every version's CRD (one version each), hub first.
    pub(crate) crds: Vec<fn() -> CustomResourceDefinition>,
    pub(crate) handler: Handler,
}

impl fmt::Debug for ConversionRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConversionRoute")
            .field("hub", &self.hub)
            .finish_non_exhaustive()
    }
}

/// One version: to and from the hub, and its CRD.
struct Version<H> {
    to_hub: fn(Value) -> Result<H, Denial>,
    from_hub: fn(H) -> Result<Value, Denial>,
    crd: fn() -> CustomResourceDefinition,
}

/// Every version of a CRD, by `apiVersion`.
struct Table<H> {
    hub: HookKind,
    versions: BTreeMap<String, Version<H>>,
}

impl<H> fmt::Debug for Table<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("hub", &self.hub)
            .field("versions", &self.versions.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<H: Send + Sync + 'static> Table<H> {
    fn into_route(self) -> ConversionRoute {
        let hub_version = self.hub.api_version();
        let mut crds: Vec<fn() -> CustomResourceDefinition> = Vec::new();
        crds.extend(self.versions.get(&hub_version).map(|v| v.crd));
        crds.extend(
            self.versions
                .iter()
                .filter(|(version, _)| **version != hub_version)
                .map(|(_, v)| v.crd),
        );
        let hub = self.hub.clone();
        let table = Arc::new(self);
        ConversionRoute {
            hub,
            crds,
            handler: Arc::new(move |body| table.answer(body)),
        }
    }

    /// Answers a ConversionReview: every object converted, or the review failed
    /// with the first object that could not be.
    fn answer(&self, body: &[u8]) -> Answer {
        let review: ConversionReview = match serde_json::from_slice(body) {
            Ok(review) => review,
            Err(e) => {
                return Answer::BadRequest(format!("the body is not a {META_KIND}: {e}"));
            }
        };
        let types = (
            review.types.api_version.as_str(),
            review.types.kind.as_str(),
        );
        if types != (META_API_VERSION_V1, META_KIND) {
            return Answer::BadRequest(format!(
                "expected a {META_API_VERSION_V1} {META_KIND}, got apiVersion {:?}, kind {:?}",
                types.0, types.1
            ));
        }
        let request = match ConversionRequest::try_from(review) {
            Ok(request) => request,
            Err(_) => return Answer::BadRequest(format!("the {META_KIND} has no request")),
        };
        let desired = request.desired_api_version.clone();
        let converted = match self.versions.get(&desired) {
            None => Err(format!(
                "cannot convert to {desired}: this webhook converts {} to {}",
                self.hub.kind,
                self.versions.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
            Some(target) => request
                .objects
                .iter()
                .enumerate()
                .map(|(i, object)| self.convert(object, &desired, target, i))
                .collect(),
        };
        let response = ConversionResponse::for_request(request);
        let response = match converted {
            Ok(objects) => response.success(objects),
            Err(message) => response.failure(Status::failure(&message, "Invalid").with_code(422)),
        };
        match serde_json::to_value(response.into_review()) {
            Ok(value) => Answer::Review(value),
            Err(e) => Answer::BadRequest(format!("cannot encode the response: {e}")),
        }
    }

    /// `object` (the `index`th of the review) converted to `desired`: its metadata
    /// as sent, but for the labels and annotations the conversion set (the only
    /// metadata the API server lets a conversion change; a conversion that drops
    /// them keeps those sent).
    fn convert(
        &self,
        object: &Value,
        desired: &str,
        target: &Version<H>,
        index: usize,
    ) -> Result<Value, String> {
        let named = |message: &str| {
            let meta = object.get("metadata");
            let field = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str);
            let name = match (field("namespace"), field("name")) {
                (Some(ns), Some(name)) => format!(" ({ns}/{name})"),
                (None, Some(name)) => format!(" ({name})"),
                _ => String::new(),
            };
            format!("object {index}{name}: {message}")
        };
        let from = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if from == desired {
            return Ok(object.clone());
        }
        let Some(source) = self.versions.get(from) else {
            return Err(named(&format!(
                "{} {from:?} is not a version this webhook converts",
                self.hub.kind
            )));
        };
        let hub = guarded(|| (source.to_hub)(object.clone()))
            .and_then(|r| r)
            .map_err(|d| named(d.message()))?;
        let mut converted = guarded(|| (target.from_hub)(hub))
            .and_then(|r| r)
            .map_err(|d| named(d.message()))?;
        let Some(fields) = converted.as_object_mut() else {
            return Err(named("the conversion did not make an object"));
        };
        let mut metadata = object
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        let set = fields.remove("metadata");
        if let Some(meta) = metadata.as_object_mut() {
            for key in ["labels", "annotations"] {
                if let Some(value) = set
                    .as_ref()
                    .and_then(|s| s.get(key))
                    .filter(|v| !v.is_null())
                {
                    meta.insert(key.to_owned(), value.clone());
                }
            }
        }
        fields.insert("apiVersion".to_owned(), Value::String(desired.to_owned()));
        fields.insert("kind".to_owned(), Value::String(self.hub.kind.clone()));
        fields.insert("metadata".to_owned(), metadata);
        Ok(converted)
    }
}

fn decode<T: DeserializeOwned>(object: Value) -> Result<T, Denial> {
    serde_json::from_value(object).map_err(|e| Denial::new(format!("does not decode: {e}")))
}

fn encode<T: Serialize>(object: T) -> Result<Value, Denial> {
    serde_json::to_value(object).map_err(|e| Denial::new(format!("does not encode: {e}")))
}

fn spoke_to_hub<S: Convertible>(object: Value) -> Result<S::Hub, Denial> {
    decode::<S>(object)?.to_hub()
}

fn hub_to_spoke<S: Convertible>(hub: S::Hub) -> Result<Value, Denial> {
    encode(S::from_hub(hub)?)
}
