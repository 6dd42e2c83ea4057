//! The Widget CRD of the user story with every kind of `#[derive(Reflect)]` index:
//! a field, a list, an option, an integer, an optional set, a label, an
//! annotation and a `with` function.

use std::collections::BTreeSet;

use kube::CustomResource;
use reflector::Reflect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Status of a widget.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    /// Whether it is ready.
    pub ready: bool,
}

/// The user story's spec, plus an annotation, a `with` index and an integer field.
#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget")]
#[kube(namespaced, status = "WidgetStatus")]
#[reflect(index(name = "by_app", label = "app"))]
#[reflect(index(name = "by_team", annotation = "example.com/team"))]
#[reflect(index(name = "by_size_class", with = size_class))]
pub struct WidgetSpec {
    /// Who owns it (index `by_owner`).
    #[reflect(index)]
    pub owner: String,
    /// Its tags (index `by_tags`, one entry per tag).
    #[reflect(index)]
    pub tags: Vec<String>,
    /// Its parent, if any (index `by_parent`).
    #[reflect(index)]
    pub parent: Option<String>,
    /// How many replicas (index `by_replicas`).
    #[reflect(index(name = "by_replicas"))]
    pub replicas: u32,
    /// Where it runs, if pinned (index `by_zones`).
    #[reflect(index)]
    pub zones: Option<BTreeSet<String>>,
    /// Its size (index `by_size_class`: "big" from 10, else "small").
    pub size: u32,
}

impl WidgetSpec {
    /// A spec of size 1 with one replica, no zones, owned by `owner`.
    pub fn owned_by(owner: &str, tags: Vec<String>, parent: Option<String>) -> Self {
        WidgetSpec {
            owner: owner.to_owned(),
            tags,
            parent,
            replicas: 1,
            zones: None,
            size: 1,
        }
    }
}

fn size_class(w: &Widget) -> Vec<String> {
    vec![if w.spec.size >= 10 { "big" } else { "small" }.to_owned()]
}
