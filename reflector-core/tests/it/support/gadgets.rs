//! A kind in two versions for the conversion suites: `v1::Gadget`, the spoke (a size
//! with a unit, `"512Mi"`), and `v2::Gadget`, the hub (`size_mb`), converted by
//! `Convertible`; a size not in `Mi` is refused.

use reflector_core::webhooks::{Convertible, Denial};

pub mod v1 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// The spoke: a size with a unit.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v1", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        pub size: String,
    }
}

pub mod v2 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// The hub, the stored version: the size in MiB.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v2", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        pub size_mb: u64,
    }
}

impl Convertible for v1::Gadget {
    type Hub = v2::Gadget;
    fn to_hub(self) -> Result<v2::Gadget, Denial> {
        let size = &self.spec.size;
        let size_mb = size
            .strip_suffix("Mi")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| Denial::new(format!("size {size:?} is not in Mi")))?;
        Ok(v2::Gadget {
            metadata: self.metadata,
            spec: v2::GadgetSpec { size_mb },
        })
    }
    fn from_hub(hub: v2::Gadget) -> Result<Self, Denial> {
        let size = format!("{}Mi", hub.spec.size_mb);
        Ok(v1::Gadget {
            metadata: hub.metadata,
            spec: v1::GadgetSpec { size },
        })
    }
}
