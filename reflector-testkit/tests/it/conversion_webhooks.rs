//! A CRD converted by its webhook, as the real apiextensions-apiserver converts it: one
//! storage version; reads, lists, watches and writes in another version go through an
//! `apiextensions.k8s.io/v1` ConversionReview over HTTPS, and a failed conversion is the
//! real 500.

use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, WatchEvent, WatchParams};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::webhook_server::WebhookServer;
use crate::support::{CRDS, PATIENCE, send_json_raw};

const V1: &str = "/apis/example.com/v1/namespaces/default/widgets";
const V2: &str = "/apis/example.com/v2/namespaces/default/widgets";

/// `widgets.example.com`: `v1` (storage, `spec.color`) and `v2` (`spec.colour`),
/// converted by the webhook at `client`.
fn converted_crd(client: Value) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema}],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": client, "conversionReviewVersions": ["v1"]}}}})
}

/// `color` (v1) ↔ `colour` (v2), and the desired apiVersion.
fn convert_one(object: &Value, desired: &str) -> Value {
    let mut out = object.clone();
    out["apiVersion"] = json!(desired);
    let spec = out["spec"].as_object_mut().unwrap();
    let (from, to) = if desired.ends_with("/v2") {
        ("color", "colour")
    } else {
        ("colour", "color")
    };
    if let Some(value) = spec.remove(from) {
        spec.insert(to.to_owned(), value);
    }
    out
}

fn converter(_path: &str, review: &Value) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap();
    let objects: Vec<Value> = request["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| convert_one(o, desired))
        .collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": objects}})
}

async fn serve(hooks: &WebhookServer) -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    let client = json!({"url": hooks.url("/convert"), "caBundle": hooks.ca_bundle()});
    let created = send_json_raw(&server, "POST", CRDS, converted_crd(client)).await;
    assert_eq!(
        created.code,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    server
}

fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn webhook_converts_a_v1_object_read_back_as_v2() {
    let hooks = WebhookServer::start(converter).await;
    let server = serve(&hooks).await;
    let created = send_json_raw(
        &server,
        "POST",
        V1,
        widget("v1", "a", json!({"color": "red"})),
    )
    .await;
    assert_eq!(created.code, 201);
    assert!(
        hooks.reviews().is_empty(),
        "a write in the storage version converts nothing"
    );
    let created = created.json();

    let read = send_json_raw(&server, "GET", &format!("{V2}/a"), Value::Null).await;
    assert_eq!(read.code, 200, "{}", String::from_utf8_lossy(&read.body));
    let read = read.json();
    assert_eq!(read["apiVersion"], "example.com/v2");
    assert_eq!(read["spec"], json!({"colour": "red"}));
    assert_eq!(
        read["metadata"], created["metadata"],
        "metadata comes back unchanged"
    );
    let request = &hooks.requests_on("/convert")[0];
    assert_eq!(request["desiredAPIVersion"], "example.com/v2");
    assert_eq!(request["objects"][0]["apiVersion"], "example.com/v1");
    assert!(request["uid"].as_str().is_some_and(|u| !u.is_empty()));
}

#[tokio::test]
async fn webhook_converts_v2_writes_to_the_storage_version() {
    let hooks = WebhookServer::start(converter).await;
    let server = serve(&hooks).await;
    let created = send_json_raw(
        &server,
        "POST",
        V2,
        widget("v2", "b", json!({"colour": "blue"})),
    )
    .await;
    assert_eq!(
        created.code,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(
        created.json()["apiVersion"],
        "example.com/v2",
        "answered in the request's version"
    );
    assert_eq!(created.json()["spec"], json!({"colour": "blue"}));
    let stored = send_json_raw(&server, "GET", &format!("{V1}/b"), Value::Null)
        .await
        .json();
    assert_eq!(stored["apiVersion"], "example.com/v1");
    assert_eq!(
        stored["spec"],
        json!({"color": "blue"}),
        "stored in the storage version"
    );

    let patched = send_json_raw(
        &server,
        "PATCH",
        &format!("{V2}/b"),
        json!({"spec": {"colour": "green"}}),
    )
    .await;
    assert_eq!(
        patched.code,
        200,
        "{}",
        String::from_utf8_lossy(&patched.body)
    );
    assert_eq!(patched.json()["spec"], json!({"colour": "green"}));
    let stored = send_json_raw(&server, "GET", &format!("{V1}/b"), Value::Null)
        .await
        .json();
    assert_eq!(stored["spec"], json!({"color": "green"}));
    let listed = send_json_raw(&server, "GET", V1, Value::Null).await.json();
    assert_eq!(
        listed["items"].as_array().unwrap().len(),
        1,
        "one object, in one store"
    );
}

#[tokio::test]
async fn webhook_converts_lists_and_watches_as_v2() {
    let hooks = WebhookServer::start(converter).await;
    let server = serve(&hooks).await;
    for name in ["c", "d"] {
        let created = send_json_raw(
            &server,
            "POST",
            V1,
            widget("v1", name, json!({"color": "red"})),
        )
        .await;
        assert_eq!(created.code, 201);
    }
    let listed = send_json_raw(&server, "GET", V2, Value::Null).await.json();
    assert_eq!(listed["apiVersion"], "example.com/v2");
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(
        items
            .iter()
            .all(|i| i["apiVersion"] == "example.com/v2" && i["spec"] == json!({"colour": "red"}))
    );
    assert_eq!(
        hooks.requests_on("/convert")[0]["objects"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "one review for the list"
    );

    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v2", "Widget"),
        "widgets",
    );
    let v2: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let rv = listed["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut events = v2
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let patched = send_json_raw(
        &server,
        "PATCH",
        &format!("{V1}/c"),
        json!({"spec": {"color": "black"}}),
    )
    .await;
    assert_eq!(patched.code, 200);
    let event = tokio::time::timeout(PATIENCE, events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let WatchEvent::Modified(object) = event else {
        panic!("expected MODIFIED, got {event:?}");
    };
    assert_eq!(object.types.unwrap().api_version, "example.com/v2");
    assert_eq!(object.data["spec"], json!({"colour": "black"}));
}

#[tokio::test]
async fn failing_conversion_webhook_answers_the_real_error() {
    let refusing = |_: &str, review: &Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": review["request"]["uid"], "result": {"status": "Failure", "message": "cannot convert"}, "convertedObjects": []}})
    };
    let hooks = WebhookServer::start(refusing).await;
    let server = serve(&hooks).await;
    let created = send_json_raw(
        &server,
        "POST",
        V1,
        widget("v1", "e", json!({"color": "red"})),
    )
    .await;
    assert_eq!(created.code, 201);
    let read = send_json_raw(&server, "GET", &format!("{V2}/e"), Value::Null).await;
    assert_eq!(read.code, 500);
    let status = read.json();
    assert_eq!(
        status["message"],
        "conversion webhook for example.com/v1, Kind=Widget failed: cannot convert"
    );
    assert!(
        status.get("reason").is_none(),
        "the real server sets no reason: {status}"
    );
    let written = send_json_raw(
        &server,
        "POST",
        V2,
        widget("v2", "f", json!({"colour": "red"})),
    )
    .await;
    assert_eq!(written.code, 500);
    assert_eq!(
        written.json()["message"],
        "conversion webhook for example.com/v2, Kind=Widget failed: cannot convert"
    );
    let listed = send_json_raw(&server, "GET", V2, Value::Null).await;
    assert_eq!(
        listed.json()["message"],
        "conversion webhook for example.com/v1, Kind=WidgetList failed: cannot convert"
    );
}

#[tokio::test]
async fn conversion_webhook_that_renames_or_is_down_fails_as_the_real_server() {
    let renaming = |_: &str, review: &Value| {
        let mut answer = converter("", review);
        answer["response"]["convertedObjects"][0]["metadata"]["name"] = json!("other");
        answer
    };
    let hooks = WebhookServer::start(renaming).await;
    let server = serve(&hooks).await;
    send_json_raw(
        &server,
        "POST",
        V1,
        widget("v1", "g", json!({"color": "red"})),
    )
    .await;
    let read = send_json_raw(&server, "GET", &format!("{V2}/g"), Value::Null).await;
    assert_eq!(
        read.json()["message"],
        "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: g != other"
    );

    let port = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        listener.local_addr().unwrap().port()
    };
    let down = ApiServer::start().await.unwrap();
    let client = json!({"url": format!("https://127.0.0.1:{port}/convert")});
    assert_eq!(
        send_json_raw(&down, "POST", CRDS, converted_crd(client))
            .await
            .code,
        201
    );
    send_json_raw(
        &down,
        "POST",
        V1,
        widget("v1", "h", json!({"color": "red"})),
    )
    .await;
    let read = tokio::time::timeout(
        Duration::from_secs(60),
        send_json_raw(&down, "GET", &format!("{V2}/h"), Value::Null),
    )
    .await
    .unwrap();
    assert_eq!(read.code, 500);
    assert_eq!(
        read.json()["message"],
        format!(
            "conversion webhook for example.com/v1, Kind=Widget failed: Post \"https://127.0.0.1:{port}/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
}
