//! `/openapi/v2` (one Swagger 2.0 document, JSON or gnostic protobuf) and `/openapi/v3`
//! (an index, then one OpenAPI 3.0 document per group-version), generated from the
//! resources served right now: built-in kinds from k8s-openapi's `schemars` schemas,
//! custom resources from their CRD version's `openAPIV3Schema`. Every top-level definition
//! carries `x-kubernetes-group-version-kind`, as kubectl needs to find it.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use axum::response::Response;
use http::HeaderValue;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::resource::ResourceInfo;
use crate::router::json_response;
use crate::server::Shared;
use crate::state::{ResourceId, State};
use crate::status::ApiError;

/// The `Content-Type` of the protobuf-encoded v2 document. Clients ask for
/// `...spec.v2@v1.0+protobuf`, but an `@` does not parse as a media type (client-go then
/// fails the response), so the answer names the parseable spelling, as the real handler.
const PROTOBUF_V2: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Where the documents' definitions live: `#/definitions/` (v2) or `#/components/schemas/`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    V2,
    V3,
}

impl Flavor {
    fn ref_prefix(self) -> &'static str {
        match self {
            Self::V2 => "#/definitions/",
            Self::V3 => "#/components/schemas/",
        }
    }

    fn generator(self) -> SchemaGenerator {
        let path = match self {
            Self::V2 => "/definitions",
            Self::V3 => "/components/schemas",
        };
        // No transforms: keep `$ref` with a sibling `description`, as the real documents.
        SchemaSettings::draft2020_12()
            .with(|s| {
                s.definitions_path = path.into();
                s.meta_schema = None;
            })
            .into_generator()
    }
}

/// Adds the schema of a built-in kind to `generator` and returns its definition name, for
/// the k8s-openapi types this crate knows by group/version/kind.
fn builtin_definition(generator: &mut SchemaGenerator, info: &ResourceInfo) -> Option<String> {
    use k8s_openapi::api::{admissionregistration, apps, batch, coordination, core, events, rbac};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    fn add<T: schemars::JsonSchema>(generator: &mut SchemaGenerator) -> String {
        generator.subschema_for::<T>();
        T::schema_name().into_owned()
    }
    let name = match (
        info.group.as_str(),
        info.version.as_str(),
        info.kind.as_str(),
    ) {
        ("", "v1", "ConfigMap") => add::<core::v1::ConfigMap>(generator),
        ("", "v1", "Secret") => add::<core::v1::Secret>(generator),
        ("", "v1", "Pod") => add::<core::v1::Pod>(generator),
        ("", "v1", "Namespace") => add::<core::v1::Namespace>(generator),
        ("", "v1", "Node") => add::<core::v1::Node>(generator),
        ("", "v1", "Service") => add::<core::v1::Service>(generator),
        ("", "v1", "ServiceAccount") => add::<core::v1::ServiceAccount>(generator),
        ("", "v1", "Event") => add::<core::v1::Event>(generator),
        ("", "v1", "PersistentVolumeClaim") => add::<core::v1::PersistentVolumeClaim>(generator),
        ("apps", "v1", "Deployment") => add::<apps::v1::Deployment>(generator),
        ("apps", "v1", "ReplicaSet") => add::<apps::v1::ReplicaSet>(generator),
        ("apps", "v1", "StatefulSet") => add::<apps::v1::StatefulSet>(generator),
        ("apps", "v1", "DaemonSet") => add::<apps::v1::DaemonSet>(generator),
        ("batch", "v1", "Job") => add::<batch::v1::Job>(generator),
        ("batch", "v1", "CronJob") => add::<batch::v1::CronJob>(generator),
        ("coordination.k8s.io", "v1", "Lease") => add::<coordination::v1::Lease>(generator),
        ("events.k8s.io", "v1", "Event") => add::<events::v1::Event>(generator),
        ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration") => {
            add::<admissionregistration::v1::MutatingWebhookConfiguration>(generator)
        }
        ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration") => {
            add::<admissionregistration::v1::ValidatingWebhookConfiguration>(generator)
        }
        ("rbac.authorization.k8s.io", "v1", "ClusterRole") => {
            add::<rbac::v1::ClusterRole>(generator)
        }
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => {
            add::<rbac::v1::ClusterRoleBinding>(generator)
        }
        ("rbac.authorization.k8s.io", "v1", "Role") => add::<rbac::v1::Role>(generator),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding") => {
            add::<rbac::v1::RoleBinding>(generator)
        }
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition") => {
            add::<CustomResourceDefinition>(generator)
        }
        _ => return None,
    };
    Some(name)
}

/// A well-known built-in kind's schema, with the definitions it refers to.
#[derive(Debug)]
pub(crate) struct BuiltinSchema {
    /// Definitions by name (`$ref`s read `#/components/schemas/{name}`).
    pub(crate) definitions: Map<String, Value>,
    /// The kind's own definition name.
    pub(crate) root: String,
}

impl BuiltinSchema {
    /// The schema a `$ref` names, or `schema` itself when it is no reference.
    pub(crate) fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => reference
                .rsplit('/')
                .next()
                .and_then(|name| self.definitions.get(name))
                .unwrap_or(schema),
            None => schema,
        }
    }

    /// The kind's own schema.
    pub(crate) fn root(&self) -> Option<&Value> {
        self.definitions.get(&self.root)
    }
}

/// The schema of a built-in kind k8s-openapi describes (`None` for others), generated
/// once per kind and kept for the life of the process.
pub(crate) fn builtin_schema(info: &ResourceInfo) -> Option<Arc<BuiltinSchema>> {
    static CACHE: LazyLock<Mutex<HashMap<String, Option<Arc<BuiltinSchema>>>>> =
        LazyLock::new(Mutex::default);
    let key = format!("{}/{}/{}", info.group, info.version, info.kind);
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    cache
        .entry(key)
        .or_insert_with(|| {
            let mut generator = Flavor::V3.generator();
            let root = builtin_definition(&mut generator, info)?;
            Some(Arc::new(BuiltinSchema {
                definitions: generator.take_definitions(true),
                root,
            }))
        })
        .clone()
}

/// The definition name the real server gives a custom kind: the group reversed, then
/// version and kind (`com.example.v1.Widget`).
fn custom_definition_name(info: &ResourceInfo) -> String {
    let mut parts: Vec<&str> = info.group.split('.').rev().collect();
    parts.push(&info.version);
    parts.push(&info.kind);
    parts.join(".")
}

/// A custom kind's schema: its `openAPIV3Schema` (or any object without one), with the
/// standard `apiVersion`, `kind` and `metadata` properties the real server adds.
fn custom_schema(schema: Option<&Value>, flavor: Flavor) -> Value {
    let mut schema = schema
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if flavor == Flavor::V2 {
        strip_v3_only(&mut schema);
    }
    if let Value::Object(fields) = &mut schema {
        let properties = fields.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(properties) = properties {
            properties.insert(
                "apiVersion".to_owned(),
                json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}),
            );
            properties.insert(
                "kind".to_owned(),
                json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}),
            );
            properties.insert(
                "metadata".to_owned(),
                json!({"$ref": format!("{}{}", flavor.ref_prefix(), <ObjectMeta as schemars::JsonSchema>::schema_name())}),
            );
        }
    }
    schema
}

/// Drops what Swagger 2.0 cannot say (`nullable`, `anyOf`, `oneOf`, `not`), as the real
/// server does when it publishes CRD schemas in v2.
fn strip_v3_only(schema: &mut Value) {
    match schema {
        Value::Object(fields) => {
            for key in ["nullable", "anyOf", "oneOf", "not"] {
                fields.remove(key);
            }
            fields.values_mut().for_each(strip_v3_only);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_v3_only),
        _ => {}
    }
}

/// The apiextensions types whose value may be any JSON (a schema's `enum`, `default` and
/// `example`) or one of several shapes: the real documents give them only a
/// `description`, no `type` (k8s-openapi's schemas say `object` or `oneOf`), so that
/// kubectl's client-side validation accepts `enum: [red, blue]` or `default: 3`.
const ANY_VALUE_DEFINITIONS: [&str; 4] = [
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
];

/// Definitions for every served resource, and each resource's definition name.
fn definitions(state: &State, flavor: Flavor) -> (Map<String, Value>, Vec<(ResourceId, String)>) {
    let mut generator = flavor.generator();
    generator.subschema_for::<ObjectMeta>();
    let mut names = Vec::new();
    let mut custom = Map::new();
    for (rid, info) in state.served() {
        let name = match state.custom.served(rid) {
            Some(served) => {
                let name = custom_definition_name(info);
                custom.insert(
                    name.clone(),
                    custom_schema(served.schema.as_deref(), flavor),
                );
                name
            }
            None => match builtin_definition(&mut generator, info) {
                Some(name) => name,
                None => {
                    let name = custom_definition_name(info);
                    custom.insert(name.clone(), custom_schema(None, flavor));
                    name
                }
            },
        };
        names.push((rid, name));
    }
    let mut defs = generator.take_definitions(true);
    for name in ANY_VALUE_DEFINITIONS {
        if let Some(Value::Object(def)) = defs.get_mut(name) {
            def.retain(|key, _| key == "description");
        }
    }
    defs.extend(custom);
    for (rid, name) in &names {
        let info = &state.resources[*rid];
        if let Some(Value::Object(def)) = defs.get_mut(name) {
            def.insert(
                "x-kubernetes-group-version-kind".to_owned(),
                json!([{"group": info.group, "version": info.version, "kind": info.kind}]),
            );
        }
    }
    (defs, names)
}

/// `/api/v1` or `/apis/{group}/{version}`.
fn prefix(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.group, info.version)
    }
}

/// The paths of one resource with an operation per verb.
fn resource_paths(info: &ResourceInfo, definition: &str, flavor: Flavor) -> Vec<(String, Value)> {
    let collection = if info.namespaced {
        format!("{}/namespaces/{{namespace}}/{}", prefix(info), info.plural)
    } else {
        format!("{}/{}", prefix(info), info.plural)
    };
    let object_ref = json!({"$ref": format!("{}{definition}", flavor.ref_prefix())});
    let gvk = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let operation = |action: &str, verb: &str, schema: &Value| {
        let response = match flavor {
            Flavor::V2 => json!({"description": "OK", "schema": schema}),
            Flavor::V3 => {
                json!({"description": "OK", "content": {"application/json": {"schema": schema}}})
            }
        };
        let mut operation = json!({
            "operationId": format!("{verb}{}", info.kind),
            "tags": [info.api_version()],
            "responses": {"200": response},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        });
        // Writes take `dryRun`, as the real operations list it (kubectl looks for it on
        // PATCH before `kubectl diff` or `--dry-run=server`).
        if matches!(
            action,
            "post" | "put" | "patch" | "delete" | "deletecollection"
        ) {
            let description = "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed";
            let parameter = match flavor {
                Flavor::V2 => json!({"name": "dryRun", "in": "query", "type": "string",
                    "uniqueItems": true, "description": description}),
                Flavor::V3 => json!({"name": "dryRun", "in": "query",
                    "schema": {"type": "string", "uniqueItems": true}, "description": description}),
            };
            operation["parameters"] = json!([parameter]);
        }
        operation
    };
    let list_schema = json!({"type": "object"});
    let mut paths = vec![
        (
            collection.clone(),
            json!({
                "get": operation("list", "list", &list_schema),
                "post": operation("post", "create", &object_ref),
                "delete": operation("deletecollection", "deleteCollection", &list_schema),
            }),
        ),
        (
            format!("{collection}/{{name}}"),
            json!({
                "get": operation("get", "read", &object_ref),
                "put": operation("put", "replace", &object_ref),
                "patch": operation("patch", "patch", &object_ref),
                "delete": operation("delete", "delete", &list_schema),
            }),
        ),
    ];
    if info.status_subresource {
        paths.push((
            format!("{collection}/{{name}}/status"),
            json!({
                "get": operation("get", "readStatus", &object_ref),
                "put": operation("put", "replaceStatus", &object_ref),
                "patch": operation("patch", "patchStatus", &object_ref),
            }),
        ));
    }
    paths
}

fn info_block(title: &str) -> Value {
    json!({"title": title, "version": "v1.34.0-reflector-testkit"})
}

/// The whole Swagger 2.0 document.
fn v2_document(state: &State) -> Value {
    let (defs, names) = definitions(state, Flavor::V2);
    let mut paths = Map::new();
    for (rid, name) in &names {
        paths.extend(resource_paths(&state.resources[*rid], name, Flavor::V2));
    }
    json!({"swagger": "2.0", "info": info_block("Kubernetes"), "paths": paths, "definitions": defs})
}

/// `api/v1`, `apis/{group}/{version}`: the keys of the v3 index.
fn group_version_key(info: &ResourceInfo) -> String {
    prefix(info).trim_start_matches('/').to_owned()
}

/// The OpenAPI 3.0 document of one group-version, if anything is served there.
fn v3_document(state: &State, key: &str) -> Option<Value> {
    let (defs, names) = definitions(state, Flavor::V3);
    let mut paths = Map::new();
    for (rid, name) in &names {
        let info = &state.resources[*rid];
        if group_version_key(info) == key {
            paths.extend(resource_paths(info, name, Flavor::V3));
        }
    }
    (!paths.is_empty()).then(|| {
        json!({
            "openapi": "3.0.0",
            "info": info_block("Kubernetes"),
            "paths": paths,
            "components": {"schemas": defs},
        })
    })
}

/// A stable hex digest of a document (the index's `hash`, which clients cache by).
fn digest(doc: &Value) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    doc.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

/// Answers `GET /openapi/{rest}`; `accept` picks JSON or protobuf for v2.
pub(crate) fn respond(shared: &Shared, rest: &str, accept: &str) -> Result<Response, ApiError> {
    let state = shared.state();
    match rest {
        "v2" => {
            let doc = v2_document(&state);
            drop(state);
            if accept.contains("application/com.github.proto-openapi.spec.v2") {
                let mut response = json_response(200, crate::openapi_proto::encode_document(&doc));
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static(PROTOBUF_V2),
                );
                return Ok(response);
            }
            Ok(json_response(
                200,
                serde_json::to_vec(&doc).unwrap_or_default(),
            ))
        }
        "v3" => {
            let mut keys: Vec<String> = state.served().map(|(_, i)| group_version_key(i)).collect();
            keys.sort();
            keys.dedup();
            let mut paths = Map::new();
            for key in keys {
                if let Some(doc) = v3_document(&state, &key) {
                    let url = format!("/openapi/v3/{key}?hash={}", digest(&doc));
                    paths.insert(key, json!({"serverRelativeURL": url}));
                }
            }
            let index = json!({"paths": paths});
            Ok(json_response(
                200,
                serde_json::to_vec(&index).unwrap_or_default(),
            ))
        }
        other => {
            let doc = other
                .strip_prefix("v3/")
                .and_then(|key| v3_document(&state, key))
                .ok_or_else(ApiError::path_not_found)?;
            Ok(json_response(
                200,
                serde_json::to_vec(&doc).unwrap_or_default(),
            ))
        }
    }
}
