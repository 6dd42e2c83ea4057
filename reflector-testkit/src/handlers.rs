//! Single-object verbs: get, create, update (PUT), patch, delete, and deletecollection.

use std::sync::Arc;

use axum::response::Response;
use serde_json::Value;

use crate::list::list_body;
use crate::managed_fields::{Writer, manager_of};
use crate::object::{Repr, key_of};
use crate::patch::Patch;
use crate::query::{ListOptions, param};
use crate::router::{RequestBody, json_response};
use crate::selectable_fields::FieldLabels;
use crate::server::Shared;
use crate::state::{Deleted, Preconditions, ResourceId};
use crate::status::{ApiError, status_details};
use crate::table::TableRequest;

fn parse_json(body: &[u8], content_type: &str) -> Result<Value, ApiError> {
    let media = content_type.split(';').next().unwrap_or_default().trim();
    if !media.is_empty() && media != "application/json" && media != "*/*" {
        return Err(ApiError::unsupported_media_type(&["application/json"]));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })
}

/// GET of one object: the object in `repr`, or its one-row Table when asked for one.
pub(crate) fn get(
    shared: &Shared,
    repr: Repr,
    table: Option<TableRequest>,
    rid: ResourceId,
    namespace: Option<&str>,
    name: &str,
) -> Result<Response, ApiError> {
    let state = shared.state();
    let info = &state.resources[rid];
    let object = state
        .get(rid, &key_of(namespace, name))
        .ok_or_else(|| ApiError::not_found(&info.plural, &info.group, name))?;
    Ok(match table {
        Some(table) => {
            let mut metadata = serde_json::Map::new();
            metadata.insert("resourceVersion".to_owned(), object.rv.to_string().into());
            json_response(200, table.render(&state, rid, &[object], metadata))
        }
        None => json_response(200, repr.render(&object)),
    })
}

/// The field manager of a non-apply write (`fieldManager`, else the user agent).
fn manager(pairs: &[(String, String)], body: &RequestBody) -> String {
    manager_of(param(pairs, "fieldManager"), &body.user_agent)
}

pub(crate) fn create(
    shared: &Shared,
    repr: Repr,
    rid: ResourceId,
    namespace: Option<&str>,
    pairs: &[(String, String)],
    body: &RequestBody,
) -> Result<Response, ApiError> {
    let value = parse_json(&body.bytes, &body.content_type)?;
    let manager = manager(pairs, body);
    let created = shared
        .state()
        .create(rid, namespace, value, Writer::Update(&manager))?;
    Ok(json_response(201, repr.render(&created)))
}

/// A write to one object or its status subresource (`PUT` or `PATCH`), as routed.
#[derive(Clone, Copy)]
pub(crate) struct ObjectWrite<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) repr: Repr,
    pub(crate) rid: ResourceId,
    pub(crate) namespace: Option<&'a str>,
    pub(crate) name: &'a str,
    /// Whether the write is to the `status` subresource.
    pub(crate) status: bool,
    pub(crate) pairs: &'a [(String, String)],
    pub(crate) body: &'a RequestBody,
}

pub(crate) fn update(write: ObjectWrite<'_>) -> Result<Response, ApiError> {
    let body = write.body;
    let value = parse_json(&body.bytes, &body.content_type)?;
    let manager = manager(write.pairs, body);
    let updated = write.shared.state().update(
        write.rid,
        write.namespace,
        write.name,
        value,
        write.status,
        Writer::Update(&manager),
    )?;
    Ok(json_response(200, write.repr.render(&updated)))
}

pub(crate) fn patch(write: ObjectWrite<'_>) -> Result<Response, ApiError> {
    let (body, rid, name) = (write.body, write.rid, write.name);
    let media = body
        .content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    if media == crate::apply::APPLY_PATCH {
        return crate::apply::apply(write);
    }
    if param(write.pairs, "force").is_some() {
        return Err(crate::apply::invalid_patch_options(
            "force",
            "FieldValueForbidden",
            "Forbidden: may not be specified for non-apply patch",
        ));
    }
    let patch = Patch::decode(media, &body.bytes)?;
    let manager = manager(write.pairs, body);
    // One lock from read to write: the patch applies to the state it replaces.
    let mut state = write.shared.state();
    let info = state.resources[rid].clone();
    let current = state
        .get(rid, &key_of(write.namespace, name))
        .ok_or_else(|| ApiError::not_found(&info.plural, &info.group, name))?;
    let mut value = current.value();
    patch.apply(&mut value)?;
    let updated = state.update(
        rid,
        write.namespace,
        name,
        value,
        write.status,
        Writer::Update(&manager),
    )?;
    Ok(json_response(200, write.repr.render(&updated)))
}

pub(crate) fn delete(
    shared: &Shared,
    repr: Repr,
    rid: ResourceId,
    namespace: Option<&str>,
    name: &str,
    body: &[u8],
) -> Result<Response, ApiError> {
    let preconditions = delete_preconditions(body)?;
    let mut state = shared.state();
    let deleted = state.delete(rid, namespace, name, &preconditions)?;
    let info = &state.resources[rid];
    match deleted {
        // Like the real generic registry: an object removed at once is answered with a
        // success `Status` (details.kind is the plural resource), unless the resource's
        // storage returns the deleted object.
        Deleted::Removed(object) if !info.delete_returns_object => {
            let mut details = status_details(&object.name, &info.group, &info.plural);
            if let Some(uid) = object.value().pointer("/metadata/uid") {
                details["uid"] = uid.clone();
            }
            let status = serde_json::json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            });
            Ok(json_response(
                200,
                serde_json::to_vec(&status).unwrap_or_default(),
            ))
        }
        Deleted::Removed(object) | Deleted::Pending(object) => {
            Ok(json_response(200, repr.render(&object)))
        }
    }
}

fn delete_preconditions(body: &[u8]) -> Result<Preconditions, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Preconditions::default());
    }
    let options: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
    let pre = options.get("preconditions");
    let field = |f: &str| {
        pre.and_then(|p| p.get(f))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(Preconditions {
        resource_version: field("resourceVersion"),
        uid: field("uid"),
    })
}

/// DELETE on a collection. Like the real generic registry, the answer is the list of the
/// matching objects as they were before the deletes (list resourceVersion included).
pub(crate) fn delete_collection(
    shared: &Arc<Shared>,
    repr: Repr,
    rid: ResourceId,
    namespace: Option<&str>,
    pairs: &[(String, String)],
) -> Result<Response, ApiError> {
    let mut state = shared.state();
    let info = state.resources[rid].clone();
    let options = ListOptions::parse(pairs, FieldLabels::of(&info.group, &info.kind))?;
    let listed_at = state.rv;
    let mut items = state.snapshot(rid, namespace);
    items.retain(|o| options.filter.matches(o));
    for object in &items {
        let namespace = object.namespace.as_deref();
        state.delete(rid, namespace, &object.name, &Preconditions::default())?;
    }
    let mut metadata = serde_json::Map::new();
    metadata.insert(
        "resourceVersion".to_owned(),
        Value::String(listed_at.to_string()),
    );
    Ok(json_response(200, list_body(repr, &info, metadata, items)))
}
