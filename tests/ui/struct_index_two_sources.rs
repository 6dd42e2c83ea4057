use kube::CustomResource;
use reflector::Reflect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[reflect(index(name = "by_app", label = "app", annotation = "app"))]
pub struct WidgetSpec {
    owner: String,
}

fn main() {}
