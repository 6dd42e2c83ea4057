//! The resources equivalent to a write's resource, as the real `EquivalentResourceMapper`
//! knows them, and how an object moves between their versions.
//!
//! A CRD registers every version in `spec.versions` (served or not), in that order: the
//! object itself for each, `status` for the versions with a status subresource, `scale`
//! (kind `autoscaling/v1` `Scale`) for those with a scale subresource. A webhook with
//! `matchPolicy: Equivalent` whose rules miss the request's own version is called for the
//! first of those its rules match ([`super::rules::Hook::invocation`]), and is sent the
//! object converted to that version: through the CRD's conversion webhook, or for
//! strategy `None` by its `apiVersion` alone.

use std::sync::Arc;

use kube::core::{GroupVersionKind, GroupVersionResource};
use serde_json::{Value, json};

use super::conversion::{Conversion, convert};
use crate::server::Shared;
use crate::state::{ResourceId, State};

/// One resource a write's resource is equivalent to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Equivalent {
    /// Its group, version and plural.
    pub resource: GroupVersionResource,
    /// The kind a webhook is sent for it (`autoscaling/v1` `Scale` for `scale`).
    pub kind: GroupVersionKind,
}

/// The resources equivalent to one (itself included), in the real mapper's order, and
/// how objects convert between them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Equivalents {
    /// In the order the real server registers them.
    pub members: Vec<Equivalent>,
    /// The CRD's conversion webhook (None: strategy `None`, or not a CRD).
    conversion: Option<Arc<Conversion>>,
}

impl Equivalents {
    /// The resources equivalent to `rid` with `subresource` (empty: the object itself);
    /// none for a resource that is not a CRD's.
    pub(crate) fn of(state: &State, rid: ResourceId, subresource: &str) -> Self {
        let Some((_, crd)) = state.crd_of(rid) else {
            return Self::default();
        };
        let crd = crd.value();
        let info = &state.resources[rid];
        let members = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|version| match subresource {
                "" => true,
                sub => version.pointer(&format!("/subresources/{sub}")).is_some(),
            })
            .filter_map(|version| version.get("name")?.as_str())
            .map(|version| Equivalent {
                resource: GroupVersionResource::gvr(&info.group, version, &info.plural),
                kind: if subresource == "scale" {
                    GroupVersionKind::gvk("autoscaling", "v1", "Scale")
                } else {
                    GroupVersionKind::gvk(&info.group, version, &info.kind)
                },
            })
            .collect();
        Self {
            members,
            conversion: Conversion::of_crd(&crd).map(Arc::new),
        }
    }

    /// `object` (of kind `from`) as an object of kind `to`: itself when the kinds are the
    /// same, else converted as the CRD converts. The error is the real message.
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is stored.
    pub(crate) async fn convert(
        &self,
        shared: &Shared,
        object: &Value,
        from: &GroupVersionKind,
        to: &GroupVersionKind,
    ) -> Result<Value, String> {
        if from == to {
            return Ok(object.clone());
        }
        match &self.conversion {
            Some(conversion) => convert(shared, conversion, object, &to.api_version()).await,
            None => {
                let mut converted = object.clone();
                converted["apiVersion"] = json!(to.api_version());
                Ok(converted)
            }
        }
    }

    /// [`Self::convert`] of an object that may be missing (a create's old object, a
    /// delete's new one).
    ///
    /// # Cancel safety
    /// Cancel safe: nothing is stored.
    pub(crate) async fn convert_some(
        &self,
        shared: &Shared,
        object: Option<&Value>,
        from: &GroupVersionKind,
        to: &GroupVersionKind,
    ) -> Result<Option<Value>, String> {
        match object {
            Some(object) => self.convert(shared, object, from, to).await.map(Some),
            None => Ok(None),
        }
    }
}
