// The keys a typed index query answers carry their kind: Widget keys cannot be
// taken for ConfigMap keys (an untyped `ObjectKey` could).
use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use reflector::Reflect;
use reflector::object::ObjectRef;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    #[reflect(index)]
    owner: String,
}

fn config_maps_of(widgets: &reflector::lister::Lister<Widget>) -> Vec<ObjectRef<ConfigMap>> {
    widgets.by_owner_keys("alice").unwrap_or_default()
}

fn main() {
    let _ = config_maps_of;
}
