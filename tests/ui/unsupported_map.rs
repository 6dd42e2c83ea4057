use kube::CustomResource;
use reflector::Reflect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    #[reflect(index)]
    owners: std::collections::BTreeMap<String, String>,
}

fn main() {}
