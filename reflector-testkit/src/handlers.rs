//! Single-object verbs: get, create, update (PUT), patch, delete, and deletecollection.

use std::sync::Arc;

use axum::response::Response;
use serde_json::Value;

use crate::list::list_body;
use crate::managed_fields::{Writer, manager_of};
use crate::object::{Repr, key_of, meta_str};
use crate::patch::{JSON_PATCH, MERGE_PATCH, Patch, STRATEGIC_MERGE_PATCH};
use crate::protobuf_codec::PROTOBUF;
use crate::query::{ListOptions, param};
use crate::router::{RequestBody, json_response};
use crate::selectable_fields::FieldLabels;
use crate::server::Shared;
use crate::state::{Deleted, Preconditions, ResourceId, State};
use crate::status::{ApiError, status_details};
use crate::table::TableRequest;
use crate::unknown_fields::{FieldValidation, drop_unknown};

/// The object a create or update body holds: JSON, or for the built-in kinds that have
/// one their protobuf message in the `k8s\0` envelope (the envelope's `apiVersion` and
/// `kind` go into the object, so a wrong type answers the usual 400). Any other media
/// type answers 415.
fn read_object(shared: &Shared, rid: ResourceId, body: &RequestBody) -> Result<Value, ApiError> {
    match body.media_type() {
        "" | "application/json" | "*/*" => serde_json::from_slice(&body.bytes).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        }),
        PROTOBUF => {
            let descriptor = {
                let state = shared.state();
                let info = &state.resources[rid];
                let custom = state.custom.served(rid).is_some();
                (!custom)
                    .then(|| {
                        crate::protobuf_codec::descriptor(&info.group, &info.version, &info.kind)
                    })
                    .flatten()
            };
            // Custom resources have no protobuf, as on the real server.
            let descriptor = descriptor
                .ok_or_else(|| ApiError::unsupported_media_type(&["application/json"]))?;
            let envelope = crate::protobuf_codec::open(&body.bytes)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            let mut value = crate::protobuf_codec::decode(&descriptor, &envelope.raw)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            if let Value::Object(object) = &mut value {
                for (field, text) in [
                    ("apiVersion", envelope.api_version),
                    ("kind", envelope.kind),
                ] {
                    if !text.is_empty() {
                        object.insert(field.to_owned(), Value::String(text));
                    }
                }
            }
            Ok(value)
        }
        _ => Err(ApiError::unsupported_media_type(&["application/json"])),
    }
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
    let validation = FieldValidation::of(pairs)?;
    let mut value = read_object(shared, rid, body)?;
    let manager = manager(pairs, body);
    let mut state = shared.write_state(pairs);
    let name = meta_str(&value, "name").unwrap_or_default().to_owned();
    let unknown = drop_unknown(&state, rid, &mut value);
    let duplicates = decode_custom(&state, rid, body, &value, &name, validation, &unknown)?;
    validation.check(&unknown)?;
    let created = state.create(rid, namespace, value, Writer::Update(&manager))?;
    let response = validation.warn(json_response(201, repr.render(&created)), &unknown);
    Ok(validation.warn_duplicates(response, &duplicates))
}

/// For a custom object's create or update body: the real decoder's checks (`kind` and
/// `apiVersion`, then under `Strict` repeated keys and unknown fields); returns the keys
/// the body repeats, for `Warn`'s headers. Built-in kinds: nothing to check here.
fn decode_custom(
    state: &State,
    rid: ResourceId,
    body: &RequestBody,
    value: &Value,
    name: &str,
    validation: FieldValidation,
    unknown: &[String],
) -> Result<Vec<String>, ApiError> {
    if state.custom.served(rid).is_none() || body.media_type() == PROTOBUF {
        return Ok(Vec::new());
    }
    let info = &state.resources[rid];
    crate::custom_decode::check_type(info, &body.bytes, value, name)?;
    let duplicates = crate::custom_decode::duplicate_fields(&body.bytes);
    let prefix = crate::custom_decode::strict_prefix(info);
    validation.check_custom(&prefix, &duplicates, unknown)?;
    Ok(duplicates)
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
    let validation = FieldValidation::of(write.pairs)?;
    let mut value = read_object(write.shared, write.rid, body)?;
    let manager = manager(write.pairs, body);
    let mut state = write.shared.write_state(write.pairs);
    let unknown = drop_unknown(&state, write.rid, &mut value);
    let duplicates = decode_custom(
        &state, write.rid, body, &value, write.name, validation, &unknown,
    )?;
    validation.check(&unknown)?;
    require_resource_version(&state, write, &value)?;
    let updated = state.update(
        write.rid,
        write.namespace,
        write.name,
        value,
        write.status,
        Writer::Update(&manager),
    )?;
    let response = validation.warn(json_response(200, write.repr.render(&updated)), &unknown);
    Ok(validation.warn_duplicates(response, &duplicates))
}

/// The real 422 of a `PUT` of a custom object without `metadata.resourceVersion`: the
/// custom resource strategy allows no unconditional update (checked once the object is
/// known to exist; a missing one is the usual 404).
fn require_resource_version(
    state: &State,
    write: ObjectWrite<'_>,
    value: &Value,
) -> Result<(), ApiError> {
    let custom = state.custom.served(write.rid).is_some();
    let info = &state.resources[write.rid];
    let key = key_of(write.namespace.filter(|_| info.namespaced), write.name);
    if !custom
        || meta_str(value, "resourceVersion").is_some()
        || state.get(write.rid, &key).is_none()
    {
        return Ok(());
    }
    Err(ApiError::invalid(
        &info.kind,
        &info.group,
        write.name,
        "metadata.resourceVersion",
        "FieldValueInvalid",
        "Invalid value: 0x0: must be specified for an update",
    ))
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
    let validation = FieldValidation::of(write.pairs)?;
    if media == STRATEGIC_MERGE_PATCH && write.shared.state().custom.served(rid).is_some() {
        // Custom resources have no strategic merge patch, as on the real server.
        return Err(ApiError::unsupported_media_type(&[
            JSON_PATCH,
            MERGE_PATCH,
            crate::apply::APPLY_PATCH,
        ]));
    }
    let patch = Patch::decode(media, &body.bytes)?;
    let manager = manager(write.pairs, body);
    // One lock from read to write: the patch applies to the state it replaces.
    let mut state = write.shared.write_state(write.pairs);
    let info = state.resources[rid].clone();
    let current = state
        .get(rid, &key_of(write.namespace, name))
        .ok_or_else(|| ApiError::not_found(&info.plural, &info.group, name))?;
    let mut value = current.value();
    let kind = crate::strategic_merge::Kind {
        group: &info.group,
        kind: &info.kind,
    };
    patch.apply(kind, &mut value)?;
    let patched = value.clone();
    let unknown = drop_unknown(&state, rid, &mut value);
    validation.check_patched(&unknown, &patched)?;
    let updated = state.update(
        rid,
        write.namespace,
        name,
        value,
        write.status,
        Writer::Update(&manager),
    )?;
    Ok(validation.warn(json_response(200, write.repr.render(&updated)), &unknown))
}

pub(crate) fn delete(
    shared: &Shared,
    repr: Repr,
    rid: ResourceId,
    namespace: Option<&str>,
    name: &str,
    pairs: &[(String, String)],
    body: &RequestBody,
) -> Result<Response, ApiError> {
    let mut options = delete_options(body)?;
    options.preconditions.foreground |= param(pairs, "propagationPolicy") == Some("Foreground");
    let mut state = shared.write_state(pairs);
    // `DeleteOptions.dryRun` in the body counts as the query's (kube and kubectl send it
    // there).
    state.dry_run |= options.dry_run;
    let deleted = state.delete(rid, namespace, name, &options.preconditions)?;
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

/// What a DELETE's `DeleteOptions` body asks for.
#[derive(Debug, Default)]
struct DeleteOptions {
    preconditions: Preconditions,
    /// `dryRun: ["All"]`.
    dry_run: bool,
}

/// A DELETE's `DeleteOptions` body (JSON, or protobuf as client-go's typed clients send
/// it).
fn delete_options(body: &RequestBody) -> Result<DeleteOptions, ApiError> {
    if body.bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(DeleteOptions::default());
    }
    let options: Value = if body.media_type() == PROTOBUF {
        let decoded = crate::protobuf_codec::open(&body.bytes).and_then(|envelope| {
            let descriptor =
                crate::protobuf_codec::descriptor("meta.k8s.io", "v1", "DeleteOptions")
                    .ok_or(crate::protobuf_codec::ProtobufError::NoMagic)?;
            crate::protobuf_codec::decode(&descriptor, &envelope.raw)
        });
        decoded.map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
    } else {
        serde_json::from_slice(&body.bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
    };
    let pre = options.get("preconditions");
    let field = |f: &str| {
        pre.and_then(|p| p.get(f))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let foreground = options.get("propagationPolicy").and_then(Value::as_str) == Some("Foreground");
    let dry_run = options
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        preconditions: Preconditions {
            resource_version: field("resourceVersion"),
            uid: field("uid"),
            foreground,
        },
        dry_run,
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
    let mut state = shared.write_state(pairs);
    let info = state.resources[rid].clone();
    let options = ListOptions::parse(pairs, FieldLabels::of_resource(&state, rid))?;
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

/// POST `pods/{name}/binding`: assigns the Pod its node, as a scheduler does (the one way
/// to set `spec.nodeName` once the Pod exists). Answers the real 201 success `Status`; a
/// Pod already assigned is the real 409.
pub(crate) fn bind(
    shared: &Shared,
    rid: ResourceId,
    namespace: &str,
    name: &str,
    body: &RequestBody,
) -> Result<Response, ApiError> {
    let binding: Value = serde_json::from_slice(&body.bytes).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })?;
    if let Some(bound) = binding.pointer("/metadata/name").and_then(Value::as_str)
        && bound != name
    {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    shared.state().bind(rid, namespace, name, node)?;
    let status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201,
    });
    Ok(json_response(
        201,
        serde_json::to_vec(&status).unwrap_or_default(),
    ))
}
