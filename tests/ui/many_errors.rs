use kube::CustomResource;
use reflector::Reflect;
use reflector::lister::Lister;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
#[reflect(index(name = "by_app", lable = "app"))]
pub struct WidgetSpec {
    #[reflect(index)]
    owner: String,
    #[reflect(index)]
    labels: std::collections::HashMap<String, String>,
    #[reflect(index(name = "by_owner"))]
    boss: String,
}

fn query(lister: &Lister<Widget>) {
    let _ = lister.by_owner("alice");
    let _ = lister.by_app("web");
    let _ = lister.by_labels("x");
}

fn main() {}
