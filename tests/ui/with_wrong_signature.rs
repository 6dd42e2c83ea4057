use kube::CustomResource;
use reflector::Reflect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[reflect(index(name = "by_size", with = size_of))]
pub struct WidgetSpec {
    size: u32,
}

fn size_of(w: &Widget) -> u32 {
    w.spec.size
}

fn main() {}
