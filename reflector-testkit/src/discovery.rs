//! Discovery documents: `/api`, `/apis`, `/api/v1`, `/apis/{group}/{version}`, `/version`.

use axum::response::Response;
use serde_json::{Value, json};

use crate::router::{Target, json_response};
use crate::server::Shared;
use crate::status::ApiError;

/// The verbs of a custom resource, in the order the real CRD discovery lists them.
const CUSTOM_VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// The storage version of the CRD `crd`, if it is stored.
fn storage_version(state: &crate::state::State, crd: &str) -> Option<String> {
    let rid = state.find(crate::crd::GROUP, "v1", "customresourcedefinitions")?;
    let crd = state.get(rid, crd)?.value();
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str())
        .map(str::to_owned)
}

/// The real `StorageVersionHash`: base64 of the first 8 bytes of the SHA-256 of
/// `group/version/kind`.
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{kind}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

/// A group's entry in `/apis`, and (with `kind` and `apiVersion`) its own `/apis/{group}`
/// document: its versions and the preferred one, the first served.
fn group_doc(group: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"name": group, "versions": versions, "preferredVersion": versions.first()})
}

pub(crate) fn respond(shared: &Shared, target: &Target) -> Result<Response, ApiError> {
    let state = shared.state();
    let doc = match target {
        Target::CoreVersions => json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": shared.addr.to_string()}],
        }),
        Target::Groups => {
            let mut groups: Vec<(String, Vec<String>)> = Vec::new();
            for (_, r) in state.served().filter(|(_, r)| !r.group.is_empty()) {
                match groups.iter_mut().find(|(g, _)| *g == r.group) {
                    Some((_, versions)) if !versions.contains(&r.version) => {
                        versions.push(r.version.clone())
                    }
                    Some(_) => {}
                    None => groups.push((r.group.clone(), vec![r.version.clone()])),
                }
            }
            let groups: Vec<Value> = groups
                .iter()
                .map(|(group, versions)| group_doc(group, versions))
                .collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        Target::Group(group) => {
            let mut versions: Vec<String> = Vec::new();
            for (_, r) in state.served().filter(|(_, r)| r.group == *group) {
                if !versions.contains(&r.version) {
                    versions.push(r.version.clone());
                }
            }
            let mut doc = group_doc(group, &versions);
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            doc
        }
        Target::Version => json!({
            "major": "1",
            "minor": "34",
            "gitVersion": "v1.34.0-reflector-testkit",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z",
            "goVersion": "none",
            "compiler": "rustc",
            "platform": "linux/amd64",
        }),
        Target::ResourceList { group, version } => {
            let mut resources = Vec::new();
            for (rid, r) in state
                .served()
                .filter(|(_, r)| r.group == *group && r.version == *version)
            {
                let mut resource = json!({
                    "name": r.plural,
                    "singularName": r.singular(),
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": r.verbs(),
                });
                if let Some(served) = state.custom.served(rid) {
                    // The CRD handler's discovery: its verb order and the storage
                    // version's hash.
                    resource["verbs"] = json!(CUSTOM_VERBS);
                    let storage = storage_version(&state, &served.crd).unwrap_or(r.version.clone());
                    resource["storageVersionHash"] =
                        json!(storage_version_hash(&r.group, &storage, &r.kind));
                }
                // Both are `omitempty` in the real APIResource.
                if !r.short_names.is_empty() {
                    resource["shortNames"] = json!(r.short_names);
                }
                if !r.categories.is_empty() {
                    resource["categories"] = json!(r.categories);
                }
                resources.push(resource);
                if r.status_subresource {
                    resources.push(json!({
                        "name": format!("{}/status", r.plural),
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "kind": r.kind,
                        "verbs": ["get", "patch", "update"],
                    }));
                }
                if state.custom.scale(rid).is_some() {
                    resources.push(json!({
                        "name": format!("{}/scale", r.plural),
                        "singularName": "",
                        "namespaced": r.namespaced,
                        "group": "autoscaling",
                        "version": "v1",
                        "kind": "Scale",
                        "verbs": ["get", "patch", "update"],
                    }));
                }
            }
            let group_version = if group.is_empty() {
                version.clone()
            } else {
                format!("{group}/{version}")
            };
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
        }
        _ => return Err(ApiError::path_not_found()),
    };
    Ok(json_response(
        200,
        serde_json::to_vec(&doc).unwrap_or_default(),
    ))
}
