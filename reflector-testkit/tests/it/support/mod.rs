//! What the testkit's HTTP suites share: the custom resources they register, the
//! ConfigMaps they write, reading back the API errors the server answers, and the
//! webhook servers the API server calls.

pub mod webhook_server;

use std::collections::BTreeMap;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::CustomResource;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::Status;
use reflector_testkit::{ApiServer, ApiServerBuilder};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A small custom resource with a status subresource, registered with
/// `ApiServer::register::<Widget>()` (`widgets.testkit.example.com`).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "testkit.example.com", version = "v1", kind = "Widget")]
#[kube(namespaced, status = "WidgetStatus")]
pub struct WidgetSpec {
    /// Desired replicas.
    pub replicas: u32,
}

/// Widget status.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema, Default)]
pub struct WidgetStatus {
    /// Ready replicas.
    pub ready: u32,
}

/// The sample API server's Flunder, as a custom resource
/// (`flunders.wardle.example.com`, short name `fl`, category `wardle`).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(group = "wardle.example.com", version = "v1alpha1", kind = "Flunder")]
#[kube(namespaced, shortname = "fl", category = "wardle")]
pub struct FlunderSpec {
    /// What it refers to.
    pub reference: String,
}

/// Hang detector of every wait on real time in these suites: the test harness's
/// slow-test mark (libtest reports a test still running after 60 s). Each wait ends as
/// soon as what it waits for happens; a passing run never reaches this bound.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

/// Poll period of a wait on a condition nothing notifies (a store's contents, the
/// request log, a child process's exit): short against the round trips awaited.
pub const POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// ConfigMap `name` (no namespace: the `Api` gives it one) with `data`.
pub fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some(
        data.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    );
    cm
}

/// Creates the namespace `name` through the API, as a user must before writing objects
/// in it (the server answers writes in a missing namespace with 404, as the real one).
pub async fn create_namespace(server: &ApiServer, name: &str) {
    let mut namespace = Namespace::default();
    namespace.metadata.name = Some(name.to_owned());
    Api::<Namespace>::all(server.client())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
}

/// Starts `builder`'s server; panics if it cannot.
pub async fn start(builder: ApiServerBuilder) -> ApiServer {
    builder.start().await.expect("the server starts")
}

/// A fresh server and the ConfigMaps of its `default` namespace.
pub async fn serve_configmaps() -> (ApiServer, Api<ConfigMap>) {
    let server = ApiServer::start().await.expect("the server starts");
    let configmaps = Api::namespaced(server.client(), "default");
    (server, configmaps)
}

/// A fresh server serving [`Widget`]s, and those of its `default` namespace through
/// a client without kube's retries.
pub async fn serve_widgets() -> (ApiServer, Api<Widget>) {
    let server = ApiServer::start().await.expect("the server starts");
    server.register::<Widget>();
    let widgets = Api::namespaced(server.client_without_retries(), "default");
    (server, widgets)
}

/// The `Status` of an API error; panics on any other error.
pub fn api_status(err: kube::Error) -> Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The `Status` a request that must fail answered; panics if it succeeded.
pub fn status_of<T: std::fmt::Debug>(result: kube::Result<T>) -> Status {
    api_status(result.expect_err("the request must fail"))
}

/// Asserts `status` is `code` `reason` with a message `message` accepts
/// (`|m| m == ".."`, `|m| m.contains("..")`).
pub fn assert_status(status: &Status, code: u16, reason: &str, message: impl Fn(&str) -> bool) {
    assert_eq!(
        (status.code, status.reason.as_str()),
        (code, reason),
        "{status:?}"
    );
    assert!(
        message(&status.message),
        "unexpected message {:?}",
        status.message
    );
}

/// Creates `obj` through `api`; panics if the server refuses.
pub async fn create<K>(api: &Api<K>, obj: &K) -> K
where
    K: Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), obj)
        .await
        .expect("created")
}

/// Whether `message` is the API server's answer to a continue token older than the
/// compaction.
pub fn continue_too_old(message: &str) -> bool {
    message.starts_with("The provided continue parameter is too old")
}

/// Whether `api` lists no object.
pub async fn lists_nothing<K>(api: &Api<K>) -> bool
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let list = api.list(&ListParams::default()).await.expect("listed");
    list.items.is_empty()
}

/// The resourceVersion of `obj`, which the server always sets.
pub fn rv_of(obj: &impl kube::Resource) -> u64 {
    let rv = obj
        .meta()
        .resource_version
        .as_deref()
        .expect("a resourceVersion");
    rv.parse().expect("an integer resourceVersion")
}

/// A JSON merge patch of object `name`, as `kubectl patch --type=merge`.
pub async fn merge<K>(api: &Api<K>, name: &str, patch: Value) -> kube::Result<K>
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
}

/// A watch of `api` from `rv` with `params`, boxed.
pub async fn watch_with<K>(
    api: &Api<K>,
    params: &WatchParams,
    rv: &str,
) -> BoxStream<'static, kube::Result<WatchEvent<K>>>
where
    K: Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    api.watch(params, rv).await.expect("watch starts").boxed()
}

/// A watch of `api` from `rv` with the default parameters, boxed.
pub async fn watch_from<K>(
    api: &Api<K>,
    rv: &str,
) -> BoxStream<'static, kube::Result<WatchEvent<K>>>
where
    K: Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    watch_with(api, &WatchParams::default(), rv).await
}

/// The `name` of each entry of the array `value[array]` (discovery documents).
pub fn names_in<'a>(value: &'a Value, array: &str) -> Vec<&'a str> {
    value[array]
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|entry| entry["name"].as_str())
        .collect()
}

/// Asserts the next event of a watch from resourceVersion `0` (kube asks for bookmarks
/// by default) is the bookmark that ends its initial events, as the watch cache sends it.
pub async fn expect_initial_events_end<K>(
    stream: &mut BoxStream<'static, kube::Result<WatchEvent<K>>>,
) where
    K: Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    match stream.next().await {
        Some(Ok(WatchEvent::Bookmark(bookmark))) => assert_eq!(
            bookmark
                .metadata
                .annotations
                .get("k8s.io/initial-events-end")
                .map(String::as_str),
            Some("true"),
            "annotations {:?}",
            bookmark.metadata.annotations
        ),
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
}

/// An answer to a request sent by [`send_raw`]: status code, headers and body.
pub struct RawAnswer {
    pub code: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl RawAnswer {
    /// The body as JSON; panics (showing it) if it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The `Content-Type`.
    pub fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

/// Sends `method uri` with `headers` and `body` through a client without kube's retries.
pub async fn send_raw(
    server: &ApiServer,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> RawAnswer {
    let mut request = http::Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(kube::client::Body::from(body)).unwrap();
    let response = server.client_without_retries().send(request).await.unwrap();
    let code = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect_bytes().await.unwrap().to_vec();
    RawAnswer {
        code,
        headers,
        body,
    }
}

/// Sends a JSON `body` (`null`: none) as `method` does with kubectl's content types: a
/// JSON merge patch for `PATCH`, JSON otherwise. Returns the code and the JSON answer.
pub async fn send_json(server: &ApiServer, method: &str, uri: &str, body: Value) -> (u16, Value) {
    let answer = send_json_raw(server, method, uri, body).await;
    (answer.code, answer.json())
}

/// Like [`send_json`], returning the whole answer.
pub async fn send_json_raw(server: &ApiServer, method: &str, uri: &str, body: Value) -> RawAnswer {
    let content_type = match method {
        "PATCH" => "application/merge-patch+json",
        _ => "application/json",
    };
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(&body).unwrap()
    };
    send_raw(
        server,
        method,
        uri,
        &[("content-type", content_type)],
        bytes,
    )
    .await
}

/// The `widgets.example.com` CRD (namespaced `Widget`, `v1`, any fields) with these
/// `additionalPrinterColumns`, as JSON.
pub fn widget_crd_json(printer_columns: Value) -> Value {
    let mut version = serde_json::json!({"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    if !printer_columns.is_null() {
        version["additionalPrinterColumns"] = printer_columns;
    }
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"}, "versions": [version]}})
}

/// Creates [`widget_crd_json`] through the API.
pub async fn create_widget_crd(server: &ApiServer, printer_columns: Value) {
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let (code, created) = send_json(server, "POST", crds, widget_crd_json(printer_columns)).await;
    assert_eq!(code, 201, "{created}");
}

/// The path of the CustomResourceDefinitions collection.
pub const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A namespaced `Widget` (`widgets.example.com`, `v1`) with a structural schema as
/// operators write them: an `enum`, `default`s, a `x-kubernetes-preserve-unknown-fields`
/// object, a CEL rule, `selectableFields`, `status` and `scale` subresources and printer
/// columns.
pub fn structural_widget_crd() -> Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "selectableFields": [{"jsonPath": ".spec.size"}],
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object",
                        "x-kubernetes-validations": [{
                            "rule": "self.replicas <= self.maxReplicas",
                            "message": "replicas must not exceed maxReplicas"}],
                        "properties": {
                            "size": {"type": "string", "enum": ["small", "medium", "large"]},
                            "replicas": {"type": "integer", "minimum": 0, "default": 1},
                            "maxReplicas": {"type": "integer", "default": 10},
                            "legacy": {"type": "string"},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}}]}})
}

/// Creates `crd` through the API; panics if the server refuses it.
pub async fn create_crd(server: &ApiServer, crd: Value) {
    let (code, created) = send_json(server, "POST", CRDS, crd).await;
    assert_eq!(code, 201, "{created}");
}

/// The `Widget`s of [`structural_widget_crd`] in `default`, through a client without
/// kube's retries.
pub fn structural_widgets(server: &ApiServer) -> Api<kube::api::DynamicObject> {
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(server.client_without_retries(), "default", &resource)
}

/// A `Widget` of [`structural_widget_crd`] named `name` with `spec`.
pub fn structural_widget(name: &str, spec: Value) -> kube::api::DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("a valid object")
}
