//! The `scale` subresource of custom resources (`autoscaling/v1` `Scale`), read from and
//! written to the paths a CRD version's `subresources.scale` names.

use axum::response::Response;
use http::Method;
use kube::core::admission::Operation;
use serde_json::{Value, json};

use super::scale_fields::{self, ReplicasPaths};
use crate::field_set::PathElement;
use crate::object::{key_of, metadata, metadata_mut};
use crate::patch::Patch;
use crate::router::{RequestBody, json_response};
use crate::server::Shared;
use crate::state::{ResourceId, State};
use crate::status::ApiError;

/// `subresources.scale` of a CRD version: JSON paths (`.spec.replicas`) split into keys.
#[derive(Debug, Clone)]
pub(crate) struct ScalePaths {
    pub spec_replicas: Vec<String>,
    pub status_replicas: Vec<String>,
    pub label_selector: Option<Vec<String>>,
}

/// Splits a CRD JSON path (`.spec.replicas`) into keys.
pub(super) fn json_path(path: &str) -> Vec<String> {
    path.split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn get_path<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

fn set_path(value: &mut Value, path: &[String], new: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut target = value;
    for key in parents {
        if !target.get(key).is_some_and(Value::is_object) {
            target[key.as_str()] = json!({});
        }
        target = &mut target[key.as_str()];
    }
    target[last.as_str()] = new;
}

/// The `autoscaling/v1` Scale of a custom object, as the real `scaleFromCustomResource`.
pub(crate) fn scale_of(object: &Value, paths: &ScalePaths) -> Value {
    let replicas = |path: &[String]| get_path(object, path).and_then(Value::as_i64).unwrap_or(0);
    let meta = metadata(object).cloned().unwrap_or_default();
    let mut scale_meta = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(field) {
            scale_meta.insert(field.to_owned(), v.clone());
        }
    }
    let spec_replicas = replicas(&paths.spec_replicas);
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    if let Some(selector) = paths
        .label_selector
        .as_deref()
        .and_then(|p| get_path(object, p))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": if spec_replicas == 0 { json!({}) } else { json!({"replicas": spec_replicas}) },
        "status": status,
    })
}

/// `GET`, `PUT` and `PATCH` on `{object}/scale` of a custom resource with a `scale`
/// subresource. A write sets the object's `specReplicasPath` (a `metadata.resourceVersion`
/// in the Scale is a precondition, as on the real server), records its `managedFields`
/// entry as the real server does (see `scale_fields`) and answers the new Scale; under
/// `dryRun=All` (`pairs`) it stores nothing.
pub(crate) fn scale(
    shared: &Shared,
    method: &Method,
    rid: ResourceId,
    namespace: Option<&str>,
    name: &str,
    pairs: &[(String, String)],
    body: Option<&RequestBody>,
) -> Result<Response, ApiError> {
    let mut state = shared.write_state(pairs);
    let info = state.resources[rid].clone();
    let paths = state
        .custom
        .scale(rid)
        .cloned()
        .ok_or_else(ApiError::path_not_found)?;
    let object = state
        .get(rid, &key_of(namespace, name))
        .ok_or_else(|| ApiError::not_found(&info.plural, &info.group, name))?
        .value();
    let current = scale_of(&object, &paths);
    let requested = match (method.as_str(), body) {
        ("GET", _) => return Ok(scale_response(&current)),
        ("PUT", Some(body)) => serde_json::from_slice::<Value>(&body.bytes).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?,
        ("PATCH", Some(body)) => {
            let mut patched = current.clone();
            let scale = crate::strategic_merge::Kind {
                group: "autoscaling",
                kind: "Scale",
            };
            Patch::decode(body.media_type(), &body.bytes)?.apply(scale, &mut patched)?;
            patched
        }
        (other, _) => return Err(ApiError::method_not_allowed(other)),
    };
    let mut requested = requested;
    state.admission_point(Some(&mut requested), |state, scale| {
        let mut seen = state.seen(rid, Operation::Update, "scale", scale, Some(&object));
        seen.namespace = namespace.map(str::to_owned).filter(|_| info.namespaced);
        seen.namespace_labels =
            (seen.namespace.as_deref()).and_then(|ns| state.namespace_labels(ns));
        seen.name = name.to_owned();
        seen.kind = Some(["autoscaling", "v1", "Scale"]);
        seen.scale = Some(paths.clone());
        seen
    });
    let Some(replicas) = requested
        .pointer("/spec/replicas")
        .map_or(Some(0), Value::as_i64)
    else {
        return Err(ApiError::bad_request(
            "Scale in version \"v1\" cannot be handled as a Scale: spec.replicas must be an integer",
        ));
    };
    if replicas < 0 {
        return Err(ApiError::invalid(
            "Scale",
            "autoscaling",
            name,
            "spec.replicas",
            "FieldValueInvalid",
            &format!("Invalid value: {replicas}: must be greater than or equal to 0"),
        ));
    }
    let changed = get_path(&object, &paths.spec_replicas) != Some(&json!(replicas));
    let mut updated = object;
    set_path(&mut updated, &paths.spec_replicas, json!(replicas));
    let rv = requested
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty());
    match rv {
        Some(rv) => metadata_mut(&mut updated).insert("resourceVersion".to_owned(), json!(rv)),
        None => metadata_mut(&mut updated).remove("resourceVersion"),
    };
    let manager = crate::managed_fields::manager_of(
        crate::query::param(pairs, "fieldManager"),
        body.map_or("", |b| b.user_agent.as_str()),
    );
    let entries = crate::managed_fields::decode(&updated).unwrap_or_default();
    let entries = scale_fields::after_scale_write(
        entries,
        &replicas_paths(&state, rid),
        &info.api_version(),
        &manager,
        changed,
    );
    crate::managed_fields::encode(&mut updated, entries);
    let writer = crate::managed_fields::Writer::Computed;
    let stored = state.update(rid, namespace, name, updated, false, writer)?;
    Ok(scale_response(&scale_of(&stored.value(), &paths)))
}

/// The replicas path of every served version of `rid`'s CRD, by apiVersion.
fn replicas_paths(state: &State, rid: ResourceId) -> ReplicasPaths {
    let Some(crd) = state.custom.served(rid).map(|s| s.crd.clone()) else {
        return Vec::new();
    };
    state
        .custom
        .of_crd(&crd)
        .into_iter()
        .filter_map(|version| {
            let served = state.custom.served(version)?;
            let path = served.scale.as_ref().map(|scale| {
                (scale.spec_replicas.iter())
                    .map(|key| PathElement::Field(key.clone()))
                    .collect()
            });
            Some((state.resources[version].api_version(), path))
        })
        .collect()
}

fn scale_response(scale: &Value) -> Response {
    json_response(200, serde_json::to_vec(scale).unwrap_or_default())
}
