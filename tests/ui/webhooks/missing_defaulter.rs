use kube::CustomResource;
use reflector::webhooks::{Validator, WebhookServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    replicas: Option<u32>,
}

impl Validator for Widget {}

fn main() {
    let mut webhooks = WebhookServer::new("widget-webhooks");
    webhooks.defaulting::<Widget>().validating::<Widget>();
}
