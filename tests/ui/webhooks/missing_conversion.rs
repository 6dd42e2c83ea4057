use kube::CustomResource;
use reflector::webhooks::WebhookServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod v1 {
    use super::*;
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v1", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        pub size: String,
    }
}

mod v2 {
    use super::*;
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v2", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        pub size_mb: u64,
    }
}

fn main() {
    let mut webhooks = WebhookServer::new("gadget-webhooks");
    webhooks.conversion::<v2::Gadget>().spoke::<v1::Gadget>();
}
