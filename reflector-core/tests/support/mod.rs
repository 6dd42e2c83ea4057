//! Objects shared by the queue's integration tests.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

/// ConfigMap `ns/cm-{k}` at resource version `version`.
pub fn cm(k: u8, version: u64) -> Arc<ConfigMap> {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(format!("cm-{k}"));
    c.metadata.namespace = Some("ns".into());
    c.metadata.resource_version = Some(version.to_string());
    Arc::new(c)
}
