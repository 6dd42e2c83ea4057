//! Not part of any operator: what the examples' `--print-manifests` share.
#![allow(dead_code)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use reflector::manager::Manifests;

/// What printing fails with.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A client that sends nothing (printing manifests needs no API server): its default
/// namespace, `default`, is where the operator's Lease would go.
pub fn offline_client() -> Result<kube::Client, Error> {
    let config = kube::Config::new("https://kubernetes.default.svc".parse()?);
    Ok(kube::Client::try_from(config)?)
}

/// Prints `crds`, then `manifests`, as one YAML stream for `kubectl apply -f -`.
pub fn print_yaml(
    crds: impl IntoIterator<Item = CustomResourceDefinition>,
    manifests: Manifests,
) -> Result<(), Error> {
    let crds = crds.into_iter().map(serde_json::to_value);
    let objects = crds.collect::<Result<Vec<_>, _>>()?;
    for object in objects.into_iter().chain(manifests.objects()) {
        print!("---\n{}", serde_norway::to_string(&object)?);
    }
    Ok(())
}
