//! Namespaces created through the API, as a user creates them before writing objects in
//! them: the API server (the embedded one too) refuses writes in a namespace that does not
//! exist.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};

/// Creates each namespace of `names`; panics (naming it) if the server refuses one.
pub async fn create_namespaces(client: &kube::Client, names: &[&str]) {
    let api = Api::<Namespace>::all(client.clone());
    for name in names {
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some((*name).to_owned());
        api.create(&PostParams::default(), &namespace)
            .await
            .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
    }
}
