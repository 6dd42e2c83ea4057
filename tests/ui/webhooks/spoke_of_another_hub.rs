use kube::CustomResource;
use reflector::webhooks::{Convertible, Denial, WebhookServer};
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

mod v3 {
    use super::*;
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v3", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        pub size_kb: u64,
    }
}

impl Convertible for v1::Gadget {
    type Hub = v3::Gadget;

    fn to_hub(self) -> Result<v3::Gadget, Denial> {
        Err(Denial::new("unused"))
    }

    fn from_hub(_: v3::Gadget) -> Result<Self, Denial> {
        Err(Denial::new("unused"))
    }
}

fn main() {
    let mut webhooks = WebhookServer::new("gadget-webhooks");
    webhooks.conversion::<v2::Gadget>().spoke::<v1::Gadget>();
}
