//! What the suites share: certificate files, a kind in two versions, clients of the embedded server as a
//! replica has them, namespaces created through the API, how long a wait may take,
//! waiting for an object's state, an HTTPS client of a webhook server, and the queue
//! tests' ConfigMaps.

pub mod certificate_files;
pub mod clients;
pub mod gadgets;
pub mod namespaces;
pub mod patience;
pub mod wait_object;
pub mod webhook_client;

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
