use kube::CustomResource;
use reflector::webhooks::{AdmissionContext, Defaulter, Denial, Validator, WebhookServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    replicas: Option<u32>,
}

impl Defaulter for Widget {
    fn set_defaults(&mut self, ctx: AdmissionContext) {
        let _ = ctx;
    }
}

impl Validator for Widget {
    fn validate_create(&self, _: &AdmissionContext) -> Result<(), Denial> {
        Ok(())
    }
}

fn main() {
    let mut webhooks = WebhookServer::new("widget-webhooks");
    webhooks.defaulting::<Widget>().validating::<Widget>();
}
