//! `/openapi/v2` and `/openapi/v3` over HTTP: generated from the served kinds (built-ins
//! and CRDs created through the API), with `x-kubernetes-group-version-kind` where kubectl
//! looks for it, and the v2 document also in the protobuf encoding kubectl <= 1.26 asks for.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::create;

async fn get(server: &ApiServer, path: &str, accept: &str) -> (u16, String, Vec<u8>) {
    let request = http::Request::get(path)
        .header("accept", accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = server.client().send(request).await.unwrap();
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (code, content_type, body)
}

async fn get_json(server: &ApiServer, path: &str) -> Value {
    let (code, _, body) = get(server, path, "application/json").await;
    assert_eq!(code, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

async fn create_crd(server: &ApiServer) {
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"owner": {"type": "string"}}}
                }}}}]
        }
    }))
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    create(&crds, &crd).await;
}

fn gvk_of(definition: &Value) -> &Value {
    &definition["x-kubernetes-group-version-kind"][0]
}

#[tokio::test]
async fn v3_index_lists_every_served_group_version_including_a_crd_created_through_the_api() {
    let server = ApiServer::start().await.unwrap();
    server.register_resource::<Deployment>();
    create_crd(&server).await;
    let index = get_json(&server, "/openapi/v3").await;
    let paths = index["paths"].as_object().unwrap();
    for key in [
        "api/v1",
        "apis/apps/v1",
        "apis/coordination.k8s.io/v1",
        "apis/apiextensions.k8s.io/v1",
        "apis/example.com/v1",
    ] {
        let url = paths[key]["serverRelativeURL"].as_str().unwrap();
        assert!(
            url.starts_with(&format!("/openapi/v3/{key}?hash=")),
            "{url}"
        );
    }
    let url = paths["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let doc = get_json(&server, url).await;
    assert_eq!(doc["openapi"], "3.0.0");
    let widget = &doc["components"]["schemas"]["com.example.v1.Widget"];
    assert_eq!(
        gvk_of(widget),
        &json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(
        widget["properties"]["spec"]["properties"]["owner"]["type"],
        "string"
    );
    assert_eq!(
        widget["properties"]["metadata"]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let item = &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"];
    assert_eq!(item["patch"]["x-kubernetes-action"], "patch");
    assert_eq!(
        item["get"]["x-kubernetes-group-version-kind"]["kind"],
        "Widget"
    );

    let core = get_json(&server, "/openapi/v3/api/v1").await;
    let cm = &core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        gvk_of(cm),
        &json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        cm["properties"]["data"]["additionalProperties"]["type"],
        "string"
    );
    assert!(core["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["post"].is_object());
    let (code, _, _) = get(
        &server,
        "/openapi/v3/apis/nope.example.com/v1",
        "application/json",
    )
    .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn v2_is_one_swagger_document_with_gvk_extensions_on_every_served_kind() {
    let server = ApiServer::start().await.unwrap();
    create_crd(&server).await;
    let doc = get_json(&server, "/openapi/v2").await;
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().unwrap();
    for (name, gvk) in [
        (
            "io.k8s.api.core.v1.ConfigMap",
            json!({"group": "", "version": "v1", "kind": "ConfigMap"}),
        ),
        (
            "io.k8s.api.core.v1.Pod",
            json!({"group": "", "version": "v1", "kind": "Pod"}),
        ),
        (
            "io.k8s.api.coordination.v1.Lease",
            json!({"group": "coordination.k8s.io", "version": "v1", "kind": "Lease"}),
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            json!({"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"}),
        ),
        (
            "com.example.v1.Widget",
            json!({"group": "example.com", "version": "v1", "kind": "Widget"}),
        ),
    ] {
        assert_eq!(gvk_of(&definitions[name]), &gvk, "{name}");
    }
    // The webhook configurations' fields, which kubectl's client-side validation checks.
    for kind in ["Mutating", "Validating"] {
        let name = format!("io.k8s.api.admissionregistration.v1.{kind}WebhookConfiguration");
        let properties = &definitions[&name]["properties"];
        assert!(properties["webhooks"].is_object(), "{name}: {properties}");
    }
    // Every `$ref` resolves inside the document (kubectl rejects the whole document otherwise).
    let text = doc.to_string();
    for reference in text.split("\"$ref\":\"#/definitions/").skip(1) {
        let name = &reference[..reference.find('"').unwrap()];
        assert!(definitions.contains_key(name), "dangling $ref {name}");
    }
    assert!(doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/status"]["put"].is_object());
}

#[tokio::test]
async fn v2_is_protobuf_when_asked_as_kubectl_does() {
    let server = ApiServer::start().await.unwrap();
    let (code, content_type, body) = get(
        &server,
        "/openapi/v2",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        content_type,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    // Field 1 (swagger), length 3, "2.0".
    assert_eq!(&body[..5], b"\x0a\x032.0");
    let needle = b"io.k8s.api.core.v1.ConfigMap";
    assert!(body.windows(needle.len()).any(|w| w == needle));
}

/// The schema a `$ref` (`#/definitions/X` or `#/components/schemas/X`) points to.
fn resolve<'a>(document: &'a Value, reference: &Value) -> &'a Value {
    let reference = reference.as_str().expect("a $ref");
    let name = reference.rsplit('/').next().unwrap();
    let definitions = document
        .get("definitions")
        .unwrap_or_else(|| &document["components"]["schemas"]);
    &definitions[name]
}

#[tokio::test]
async fn a_crd_schemas_enum_default_and_example_may_hold_any_json_value() {
    // kubectl validates `apply -f crd.yaml` against these: a typed `object` here made it
    // reject `enum: [red, blue]` (`got "string", expected "map"`).
    let server = ApiServer::start().await.unwrap();
    let v2 = get_json(&server, "/openapi/v2").await;
    let v3 = get_json(&server, "/openapi/v3/apis/apiextensions.k8s.io/v1").await;
    for document in [&v2, &v3] {
        let props = resolve(
            document,
            &json!("#/x/io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"),
        );
        for field in ["default", "example"] {
            let any = resolve(document, &props["properties"][field]["$ref"]);
            assert!(any["description"].is_string(), "{field}: {any}");
            assert_eq!(any.get("type"), None, "{field}: {any}");
        }
        let item = resolve(document, &props["properties"]["enum"]["items"]["$ref"]);
        assert_eq!(item.get("type"), None, "enum items: {item}");
        for field in ["items", "additionalProperties", "additionalItems"] {
            let either = resolve(document, &props["properties"][field]["$ref"]);
            assert!(either["description"].is_string(), "{field}: {either}");
            assert_eq!(either.get("type"), None, "{field}: {either}");
            assert_eq!(either.get("oneOf"), None, "{field}: {either}");
        }
    }
}
