//! Answers that must match a real `k8s.io/apiserver` (1.37, etcd3, watch cache on) byte
//! for byte where clients can see it: status code, `reason`, `message`, `details` and
//! body shape (issue 24), and the watch cache's timing for lists and watches at
//! resourceVersions (issue 21). Each test sends plain HTTP through a `kube::Client`.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{Flunder, create_namespace};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Sends one request without kube's retries; returns (code, headers, JSON body).
async fn send(
    server: &ApiServer,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (u16, http::HeaderMap, Value) {
    let bytes = body.map(|b| serde_json::to_vec(&b).unwrap());
    let content_type = bytes.as_ref().map(|_| "application/json");
    send_bytes(server, method, uri, content_type, bytes.unwrap_or_default()).await
}

/// Like [`send`], with any body and `Content-Type`.
async fn send_bytes(
    server: &ApiServer,
    method: &str,
    uri: &str,
    content_type: Option<&str>,
    bytes: Vec<u8>,
) -> (u16, http::HeaderMap, Value) {
    let mut request = http::Request::builder().method(method).uri(uri);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let response = server
        .client_without_retries()
        .send(request.body(kube::client::Body::from(bytes)).unwrap())
        .await
        .unwrap();
    let code = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect_bytes().await.unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    (code, headers, body)
}

/// `GET` of `uri`.
async fn get(server: &ApiServer, uri: &str) -> (u16, http::HeaderMap, Value) {
    send(server, "GET", uri, None).await
}

/// Asserts a failure `Status` answered with HTTP `code`: its `code`, `reason` (`None`:
/// absent) and `message`.
fn assert_failure(answer: (u16, &Value), code: u16, reason: Option<&str>, message: &str) {
    let (http_code, body) = answer;
    assert_eq!(http_code, code, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body.get("reason").and_then(Value::as_str), reason, "{body}");
    assert_eq!(body["message"], message, "{body}");
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

async fn seeded() -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    for name in ["a", "b"] {
        let (code, _, _) = send(&server, "POST", CMS, Some(config_map(name))).await;
        assert_eq!(code, 201);
    }
    server
}

#[tokio::test]
async fn list_items_carry_no_kind_or_api_version() {
    let server = seeded().await;
    let (code, _, list) = get(&server, CMS).await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    for item in items {
        assert!(item.get("kind").is_none(), "{item}");
        assert!(item.get("apiVersion").is_none(), "{item}");
        assert_eq!(item["data"]["k"], "v");
        assert!(item["metadata"]["uid"].is_string());
    }
    // A single GET keeps them, and kube's typed list still decodes the items.
    let (_, _, one) = get(&server, &format!("{CMS}/a")).await;
    assert_eq!(
        (&one["kind"], &one["apiVersion"]),
        (&json!("ConfigMap"), &json!("v1"))
    );
    let api: kube::Api<ConfigMap> = kube::Api::namespaced(server.client(), "default");
    let typed = api.list(&Default::default()).await.unwrap();
    assert_eq!(typed.items.len(), 2);
    // Custom resources are unstructured on the real server: their items keep both.
    server.register::<Flunder>();
    let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
    let flunder = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "f"}, "spec": {"reference": "x"}});
    assert_eq!(send(&server, "POST", flunders, Some(flunder)).await.0, 201);
    let (_, _, list) = get(&server, flunders).await;
    assert_eq!(list["items"][0]["kind"], "Flunder");
    assert_eq!(
        list["items"][0]["apiVersion"],
        "wardle.example.com/v1alpha1"
    );
}

/// `GET` of `uri` with `client`, to the end of the body; returns the code and the body.
async fn get_with(client: kube::Client, uri: String) -> (u16, bytes::Bytes) {
    let request = http::Request::get(uri)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    let code = response.status().as_u16();
    (code, response.into_body().collect_bytes().await.unwrap())
}

/// Opens a watch at `uri` (which should carry `timeoutSeconds`) and reads it to its end;
/// returns the code and `(type, object name or bookmark resourceVersion)` per event.
async fn watch_to_end(client: kube::Client, uri: String) -> (u16, Vec<(String, String)>) {
    let (code, bytes) = get_with(client, uri).await;
    let events = String::from_utf8_lossy(&bytes)
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line).unwrap();
            let kind = event["type"].as_str().unwrap().to_owned();
            let meta = &event["object"]["metadata"];
            let what = match kind.as_str() {
                "BOOKMARK" => &meta["resourceVersion"],
                _ => &meta["name"],
            };
            (kind, what.as_str().unwrap_or_default().to_owned())
        })
        .collect();
    (code, events)
}

#[tokio::test(start_paused = true)]
async fn watch_list_without_bookmarks_sends_initial_events_and_no_bookmark() {
    let server = seeded().await;
    let uri = format!(
        "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
    );
    let (code, events) = watch_to_end(server.client_without_retries(), uri).await;
    assert_eq!(code, 200);
    let added = |name: &str| ("ADDED".to_owned(), name.to_owned());
    assert_eq!(events, [added("a"), added("b")]);
}

#[tokio::test]
async fn resource_version_0_lists_ignore_limit_unless_paginate_rv0() {
    for paginate in [false, true] {
        let server = ApiServer::builder()
            .paginate_rv0(paginate)
            .start()
            .await
            .unwrap();
        for i in 0..5 {
            send(&server, "POST", CMS, Some(config_map(&format!("cm-{i}")))).await;
        }
        let (code, _, list) = get(&server, &format!("{CMS}?resourceVersion=0&limit=2")).await;
        assert_eq!(code, 200);
        let items = list["items"].as_array().unwrap().len();
        let meta = &list["metadata"];
        if paginate {
            assert_eq!(items, 2);
            assert!(meta["continue"].is_string(), "{list}");
            assert_eq!(meta["remainingItemCount"], 3);
        } else {
            assert_eq!(items, 5, "one page of everything");
            assert!(meta.get("continue").is_none(), "{list}");
            assert!(meta.get("remainingItemCount").is_none(), "{list}");
        }
        // Unset resourceVersion is paged either way.
        let (_, _, page) = get(&server, &format!("{CMS}?limit=2")).await;
        assert_eq!(page["items"].as_array().unwrap().len(), 2);
        assert!(page["metadata"]["continue"].is_string());
    }
}

/// A big list is written as the server goes, not built whole first: chunked transfer
/// encoding (no `Content-Length`), as the API server's streaming list encoder answers,
/// and the chunks read back as the one list of every object in order.
#[tokio::test]
async fn large_lists_are_streamed_in_chunks() {
    let server = ApiServer::start().await.unwrap();
    let objects = reflector_testkit::bench_objects::config_maps(1_000);
    server.insert_many(&objects).unwrap();
    let uri = format!(
        "/api/v1/namespaces/{}/configmaps?resourceVersion=0",
        reflector_testkit::bench_objects::NAMESPACE
    );
    let request = http::Request::get(uri)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = server.client_without_retries().send(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response.headers().get("content-length").is_none(),
        "{:?}",
        response.headers()
    );
    assert_eq!(
        response.headers().get("content-type").unwrap(),
        "application/json"
    );
    let bytes = response.into_body().collect_bytes().await.unwrap();
    assert!(
        bytes.len() > 1_200_000,
        "{} bytes: several chunks",
        bytes.len()
    );
    let list: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = objects
        .iter()
        .map(|cm| cm.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(names, expected);
}

#[tokio::test(start_paused = true)]
async fn watch_at_a_future_resource_version_waits_for_it() {
    let server = seeded().await;
    let current = server.current_resource_version();
    // Far ahead: accepted, then nothing at all until timeoutSeconds.
    let far = current + 1000;
    let uri =
        format!("{CMS}?watch=true&resourceVersion={far}&allowWatchBookmarks=true&timeoutSeconds=5");
    let start = tokio::time::Instant::now();
    let (code, events) = watch_to_end(server.client_without_retries(), uri).await;
    assert_eq!((code, events), (200, vec![]));
    assert!(
        start.elapsed() >= Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    // Two writes ahead: the events after it arrive once writes pass it.
    let target = current + 2;
    let uri = format!(
        "{CMS}?watch=true&resourceVersion={target}&allowWatchBookmarks=true&timeoutSeconds=5"
    );
    let watching = tokio::spawn(watch_to_end(server.client_without_retries(), uri));
    tokio::time::sleep(Duration::from_secs(1)).await;
    for name in ["c", "d", "e"] {
        assert_eq!(
            send(&server, "POST", CMS, Some(config_map(name))).await.0,
            201
        );
    }
    let (code, events) = watching.await.unwrap();
    assert_eq!(code, 200);
    let (bookmarks, others): (Vec<_>, Vec<_>) =
        events.into_iter().partition(|(t, _)| t == "BOOKMARK");
    assert_eq!(others, [("ADDED".to_owned(), "e".to_owned())]);
    for (_, rv) in bookmarks {
        assert!(rv.parse::<u64>().unwrap() > target, "bookmark at {rv}");
    }
}

#[tokio::test]
async fn delete_without_finalizers_answers_a_success_status() {
    let server = seeded().await;
    let uid = server
        .get::<ConfigMap>(Some("default"), "a")
        .unwrap()
        .unwrap()
        .metadata
        .uid;
    let (code, _, body) = send(&server, "DELETE", &format!("{CMS}/a"), None).await;
    assert_eq!(code, 200);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "a", "kind": "configmaps", "uid": uid.unwrap()}})
    );
    // A CRD's details carry its group.
    server.register::<Flunder>();
    let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
    let flunder = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "f"}, "spec": {"reference": "x"}});
    assert_eq!(send(&server, "POST", flunders, Some(flunder)).await.0, 201);
    let (code, _, body) = send(&server, "DELETE", &format!("{flunders}/f"), None).await;
    assert_eq!(code, 200);
    assert_eq!(body["status"], "Success");
    assert_eq!(body["details"]["group"], "wardle.example.com");
    assert_eq!(body["details"]["kind"], "flunders");
    // Pods keep answering with the deleted object.
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
    assert_eq!(send(&server, "POST", pods, Some(pod)).await.0, 201);
    let (code, _, body) = send(&server, "DELETE", &format!("{pods}/p"), None).await;
    assert_eq!(code, 200);
    assert_eq!(body["kind"], "Pod");
    assert_eq!(body["metadata"]["name"], "p");
    assert_eq!(server.count::<Pod>().unwrap(), 0);
}

#[tokio::test]
async fn delete_with_a_stale_precondition_names_the_kind() {
    let server = ApiServer::start().await.unwrap();
    server.register::<Flunder>();
    let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
    let flunder = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "b1"}, "spec": {"reference": "x"}});
    let (_, _, created) = send(&server, "POST", flunders, Some(flunder)).await;
    let rv = created["metadata"]["resourceVersion"].as_str().unwrap();
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1",
        "preconditions": {"resourceVersion": "1"}});
    let (code, _, body) = send(&server, "DELETE", &format!("{flunders}/b1"), Some(options)).await;
    let message = format!(
        "Operation cannot be fulfilled on Flunder.wardle.example.com \"b1\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been modified"
    );
    assert_failure((code, &body), 409, Some("Conflict"), &message);
    let details = json!({"name": "b1", "group": "wardle.example.com", "kind": "Flunder"});
    assert_eq!(body["details"], details);
    // A core resource: no group in the message or the details.
    let (_, _, cm) = send(&server, "POST", CMS, Some(config_map("c"))).await;
    let options = json!({"preconditions": {"uid": "other"}});
    let (code, _, body) = send(&server, "DELETE", &format!("{CMS}/c"), Some(options)).await;
    let uid = cm["metadata"]["uid"].as_str().unwrap();
    let message = format!(
        "Operation cannot be fulfilled on ConfigMap \"c\": the UID in the precondition (other) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
    );
    assert_failure((code, &body), 409, Some("Conflict"), &message);
    assert_eq!(body["details"], json!({"name": "c", "kind": "ConfigMap"}));
}

#[tokio::test]
async fn create_with_resource_version_is_a_bare_500() {
    let server = ApiServer::start().await.unwrap();
    let mut cm = config_map("x");
    cm["metadata"]["resourceVersion"] = json!("5");
    let (code, _, body) = send(&server, "POST", CMS, Some(cm)).await;
    let message = "resourceVersion should not be set on objects to be created";
    assert_failure((code, &body), 500, None, message);
    assert!(body.get("details").is_none(), "{body}");
}

#[tokio::test(start_paused = true)]
async fn list_at_a_too_large_resource_version_says_timeout() {
    let server = seeded().await;
    let current = server.current_resource_version();
    let too_large = current + 10;
    let start = tokio::time::Instant::now();
    let (code, headers, body) = get(&server, &format!("{CMS}?resourceVersion={too_large}")).await;
    let waited = start.elapsed();
    assert!(waited >= Duration::from_secs(3), "{waited:?}");
    let message = format!("Timeout: Too large resource version: {too_large}, current: {current}");
    assert_failure((code, &body), 504, Some("Timeout"), &message);
    assert_eq!(headers["retry-after"], "1");
    let cause = &body["details"]["causes"][0]["reason"];
    assert_eq!(cause, "ResourceVersionTooLarge");
    assert_eq!(body["details"]["retryAfterSeconds"], 1);
}

#[tokio::test(start_paused = true)]
async fn list_at_a_future_resource_version_waits_for_it() {
    // The wait is configurable.
    let server = ApiServer::builder()
        .too_large_resource_version_wait(Duration::from_millis(500))
        .start()
        .await
        .unwrap();
    let target = server.current_resource_version() + 1;
    let start = tokio::time::Instant::now();
    let (code, _, _) = get(&server, &format!("{CMS}?resourceVersion={target}")).await;
    let waited = start.elapsed();
    assert_eq!(code, 504);
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    // A write reaching it while the list waits: the list is served.
    let server = seeded().await;
    let target = server.current_resource_version() + 1;
    let client = server.client_without_retries();
    let uri = format!("{CMS}?resourceVersion={target}");
    let listing = tokio::spawn(get_with(client, uri));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        send(&server, "POST", CMS, Some(config_map("c"))).await.0,
        201
    );
    let (code, bytes) = listing.await.unwrap();
    let list: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["items"].as_array().unwrap().len(), 3);
    let rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv >= target);
}

#[tokio::test]
async fn unparsable_resource_version_quotes_parse_uint() {
    let server = seeded().await;
    let huge = "99999999999999999999";
    for (raw, query, why) in [
        ("abc", "abc", "invalid syntax"),
        ("-1", "-1", "invalid syntax"),
        ("+1", "%2B1", "invalid syntax"),
        (huge, huge, "value out of range"),
    ] {
        let (code, _, body) = get(&server, &format!("{CMS}?resourceVersion={query}")).await;
        let message = format!(
            "invalid resource version: resourceVersion: Invalid value: \"{raw}\": strconv.ParseUint: parsing \"{raw}\": {why}"
        );
        assert_failure((code, &body), 400, Some("BadRequest"), &message);
    }
}

/// Lists ConfigMaps with `selector` (percent-encoded whole) as `param`.
async fn select(server: &ApiServer, param: &str, selector: &str) -> (u16, Value) {
    let query: String = selector.bytes().map(|b| format!("%{b:02X}")).collect();
    let (code, _, body) = get(server, &format!("{CMS}?{param}={query}")).await;
    (code, body)
}

#[tokio::test]
async fn label_selector_errors_follow_the_real_parser() {
    let server = seeded().await;
    let prefix = "unable to parse requirement: ";
    let key_error = "<nil>: Invalid value: \"a~b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let gt_error =
        "values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer";
    let cases = [
        ("a in (b", prefix, "found '', expected: ',' or ')'"),
        (
            "=x",
            "",
            "found '=', expected: !, identifier, or 'end of string'",
        ),
        ("a=b,", "", "found '', expected: identifier after ','"),
        (
            "a ~ b",
            prefix,
            "found '~', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("a in b", prefix, "found 'b' expected: '('"),
        ("a=b c", "", "found 'c', expected: ',' or 'end of string'"),
        ("a,,b", "", "found ',', expected: identifier after ','"),
        ("!a=b", "", "found '=', expected: ',' or 'end of string'"),
        ("a>x", prefix, gt_error),
        ("a~b", prefix, key_error),
    ];
    for (selector, prefix, message) in cases {
        let (code, body) = select(&server, "labelSelector", selector).await;
        let message = format!("{prefix}{message}");
        assert_failure((code, &body), 400, Some("BadRequest"), &message);
    }
    // What the real parser accepts: `==`, spaces, an empty set, `in` as a value.
    let valid = [
        "a == b",
        " a in ( in , b ) ",
        "a notin ()",
        "!c",
        "a",
        "a!=b,x",
    ];
    for selector in valid {
        let (code, body) = select(&server, "labelSelector", selector).await;
        assert_eq!(code, 200, "{selector}: {body}");
    }
}

#[tokio::test]
async fn unsupported_field_selector_names_the_known_fields() {
    let server = seeded().await;
    let (code, body) = select(&server, "fieldSelector", "spec.reference=x").await;
    let message = r#""spec.reference" is not a known field selector: only "metadata.name", "metadata.namespace""#;
    assert_failure((code, &body), 400, Some("BadRequest"), message);
    // Pods have their own field-label conversion, with its own wording.
    let pods = "/api/v1/namespaces/default/pods?fieldSelector=spec.reference%3Dx";
    let (code, _, body) = get(&server, pods).await;
    let message = "field label not supported: spec.reference";
    assert_failure((code, &body), 400, Some("BadRequest"), message);
    let (code, body) = select(&server, "fieldSelector", "metadata.name=a").await;
    assert_eq!(code, 200);
    assert_eq!(body["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn discovery_lists_short_names_categories_and_verbs() {
    let server = ApiServer::start().await.unwrap();
    server.register::<Flunder>();
    let resource = |list: &Value, name: &str| {
        let resources = list["resources"].as_array().unwrap();
        let found = resources.iter().find(|r| r["name"] == name);
        found.unwrap_or_else(|| panic!("{name} in {list}")).clone()
    };
    let all_verbs = json!([
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch"
    ]);
    let (_, _, core) = get(&server, "/api/v1").await;
    let pods = resource(&core, "pods");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert_eq!(pods["verbs"], all_verbs);
    assert_eq!(resource(&core, "configmaps")["shortNames"], json!(["cm"]));
    assert_eq!(resource(&core, "nodes")["shortNames"], json!(["no"]));
    let namespaces = resource(&core, "namespaces");
    assert_eq!(namespaces["shortNames"], json!(["ns"]));
    let no_collection_delete = json!([
        "create", "delete", "get", "list", "patch", "update", "watch"
    ]);
    assert_eq!(namespaces["verbs"], no_collection_delete);
    let secrets = resource(&core, "secrets");
    assert!(secrets.get("shortNames").is_none(), "{secrets}");
    assert!(secrets.get("categories").is_none(), "{secrets}");
    assert_eq!(
        resource(&core, "pods/status")["verbs"],
        json!(["get", "patch", "update"])
    );
    let (_, _, coordination) = get(&server, "/apis/coordination.k8s.io/v1").await;
    let leases = resource(&coordination, "leases");
    assert!(leases.get("shortNames").is_none(), "{leases}");
    assert_eq!(leases["verbs"], all_verbs);
    // A CRD's come from its names.
    let (_, _, wardle) = get(&server, "/apis/wardle.example.com/v1alpha1").await;
    let flunders = resource(&wardle, "flunders");
    assert_eq!(flunders["shortNames"], json!(["fl"]));
    assert_eq!(flunders["categories"], json!(["wardle"]));
    // In the CRD handler's order.
    assert_eq!(
        flunders["verbs"],
        json!([
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch"
        ])
    );
}

#[tokio::test]
async fn config_maps_and_secrets_hold_at_most_one_mebibyte() {
    let server = ApiServer::start().await.unwrap();
    let limit = 1024 * 1024;
    let mut cm = config_map("big");
    cm["data"] = json!({"a": "x".repeat(limit - 10), "b": "y".repeat(11)});
    let (code, _, body) = send(&server, "POST", CMS, Some(cm.clone())).await;
    let message = "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes";
    assert_failure((code, &body), 422, Some("Invalid"), message);
    let cause = json!({"reason": "FieldValueTooLong", "field": "[]",
        "message": "Too long: may not be more than 1048576 bytes"});
    assert_eq!(body["details"]["causes"], json!([cause]));
    assert_eq!(body["details"]["kind"], "ConfigMap");
    // Exactly 1 MiB is fine, and an update past it is refused the same way.
    cm["data"]["b"] = json!("y".repeat(10));
    assert_eq!(send(&server, "POST", CMS, Some(cm.clone())).await.0, 201);
    cm["data"]["b"] = json!("y".repeat(11));
    let (code, _, body) = send(&server, "PUT", &format!("{CMS}/big"), Some(cm)).await;
    assert_failure((code, &body), 422, Some("Invalid"), message);
    // Secrets count decoded data and report `data`.
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(vec![0u8; limit + 1]);
    let secret = json!({"metadata": {"name": "s"}, "data": {"k": encoded}});
    let secrets = "/api/v1/namespaces/default/secrets";
    let (code, _, body) = send(&server, "POST", secrets, Some(secret)).await;
    let message = "Secret \"s\" is invalid: data: Too long: may not be more than 1048576 bytes";
    assert_failure((code, &body), 422, Some("Invalid"), message);
}

#[tokio::test]
async fn unsupported_patch_type_lists_only_the_accepted_ones() {
    let server = seeded().await;
    let prefix =
        "the body of the request was in an unknown format - accepted media types include: ";
    for content_type in ["application/vnd.kubernetes.protobuf", "text/plain"] {
        let uri = format!("{CMS}/a");
        let (code, _, body) =
            send_bytes(&server, "PATCH", &uri, Some(content_type), b"[]".to_vec()).await;
        let message = format!(
            "{prefix}application/json-patch+json, application/merge-patch+json, \
             application/strategic-merge-patch+json, application/apply-patch+yaml"
        );
        assert_failure((code, &body), 415, Some("UnsupportedMediaType"), &message);
        assert!(body.get("details").is_none(), "{body}");
    }
    // A create in another format: only JSON is offered.
    let yaml = b"metadata: {name: y}".to_vec();
    let (code, _, body) = send_bytes(&server, "POST", CMS, Some("application/yaml"), yaml).await;
    let message = format!("{prefix}application/json");
    assert_failure((code, &body), 415, Some("UnsupportedMediaType"), &message);
}

#[tokio::test]
async fn generation_only_where_the_real_strategy_sets_it() {
    let server = seeded().await;
    // ConfigMaps have none, not after a data change, not when deletion starts.
    let (_, _, cm) = get(&server, &format!("{CMS}/a")).await;
    assert!(cm["metadata"].get("generation").is_none(), "{cm}");
    let mut changed = cm.clone();
    changed["data"]["k"] = json!("v2");
    changed["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let (_, _, updated) = send(&server, "PUT", &format!("{CMS}/a"), Some(changed)).await;
    assert!(updated["metadata"].get("generation").is_none(), "{updated}");
    let (_, _, pending) = send(&server, "DELETE", &format!("{CMS}/a"), None).await;
    assert!(pending["metadata"]["deletionTimestamp"].is_string());
    assert!(pending["metadata"].get("generation").is_none(), "{pending}");
    // Pods do, and start Pending.
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running"}});
    let (code, _, created) = send(&server, "POST", pods, Some(pod)).await;
    assert_eq!(code, 201);
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(
        created["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
    let limits = json!({"cpu": "1", "memory": "1Gi"});
    let guaranteed = json!({"metadata": {"name": "g"}, "spec": {"containers": [
        {"name": "c", "image": "i", "resources": {"limits": limits}}]}});
    let (_, _, created) = send(&server, "POST", pods, Some(guaranteed)).await;
    assert_eq!(created["status"]["qosClass"], "Guaranteed");
    let burstable = json!({"metadata": {"name": "b"}, "spec": {"containers": [
        {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}});
    let (_, _, created) = send(&server, "POST", pods, Some(burstable)).await;
    assert_eq!(created["status"]["qosClass"], "Burstable");
    // Custom resources do.
    server.register::<Flunder>();
    let flunders = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
    let flunder = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "f"}, "spec": {"reference": "x"}});
    let (_, _, created) = send(&server, "POST", flunders, Some(flunder)).await;
    assert_eq!(created["metadata"]["generation"], 1);
}

/// Each line of a watch's body as `(type, name or bookmark RV, annotations)`, with the
/// (paused) time it arrived after the request was sent.
async fn timed_watch(client: kube::Client, uri: String) -> Vec<(Duration, String, String, Value)> {
    use http_body_util::BodyExt;
    let start = tokio::time::Instant::now();
    let request = http::Request::get(uri)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut pending = Vec::new();
    let mut events = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.unwrap().into_data() else {
            continue;
        };
        pending.extend_from_slice(&data);
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let event: Value = serde_json::from_slice(&line).unwrap();
            let kind = event["type"].as_str().unwrap().to_owned();
            let meta = &event["object"]["metadata"];
            let what = match kind.as_str() {
                "BOOKMARK" => &meta["resourceVersion"],
                _ => &meta["name"],
            };
            let what = what.as_str().unwrap_or_default().to_owned();
            events.push((start.elapsed(), kind, what, meta["annotations"].clone()));
        }
    }
    events
}

#[tokio::test(start_paused = true)]
async fn a_legacy_watch_with_bookmarks_ends_its_initial_events_with_the_annotated_bookmark() {
    let server = seeded().await;
    let rv = server.current_resource_version().to_string();
    for from in ["0", ""] {
        let uri = format!(
            "{CMS}?watch=true&resourceVersion={from}&allowWatchBookmarks=true&timeoutSeconds=30"
        );
        let events = timed_watch(server.client_without_retries(), uri).await;
        let seen: Vec<(&str, &str)> = events
            .iter()
            .map(|(_, kind, what, _)| (kind.as_str(), what.as_str()))
            .collect();
        assert_eq!(
            seen,
            [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", rv.as_str())],
            "from {from:?}"
        );
        assert_eq!(
            events[2].3,
            json!({"k8s.io/initial-events-end": "true"}),
            "from {from:?}"
        );
        // Without allowWatchBookmarks, no bookmark.
        let uri = format!("{CMS}?watch=true&resourceVersion={from}&timeoutSeconds=1");
        let (_, events) = watch_to_end(server.client_without_retries(), uri).await;
        assert_eq!(events.len(), 2, "{events:?}");
    }
}

/// Starts a watch at the current RV with `allowWatchBookmarks=true` and `timeout`
/// seconds, writes a ConfigMap in another namespace one second in (the RV moves past
/// the watch's start), and returns the watch's events with their arrival times.
async fn bookmarks_of_a_watch(server: &ApiServer, timeout: u64) -> Vec<(Duration, String)> {
    create_namespace(server, "other").await;
    let rv = server.current_resource_version();
    let uri = format!(
        "{CMS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds={timeout}"
    );
    let watching = tokio::spawn(timed_watch(server.client_without_retries(), uri));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let elsewhere = "/api/v1/namespaces/other/configmaps";
    let created = send(server, "POST", elsewhere, Some(config_map("x"))).await;
    assert_eq!(created.0, 201);
    let now = (rv + 1).to_string();
    watching
        .await
        .unwrap()
        .into_iter()
        .map(|(at, kind, what, _)| {
            assert_eq!((kind.as_str(), what.as_str()), ("BOOKMARK", now.as_str()));
            (at, kind)
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_ten_second_watch_gets_its_bookmarks_only_shortly_before_it_times_out() {
    // The default server: the watch cache's one-minute bookmark frequency.
    let server = ApiServer::start().await.unwrap();
    let events = bookmarks_of_a_watch(&server, 10).await;
    let times: Vec<Duration> = events.iter().map(|(at, _)| *at).collect();
    assert_eq!(times.len(), 2, "{times:?}");
    // At the ticks of the second 2 s before the timeout falls in and of the next one.
    let secs = |s| Duration::from_secs(s);
    assert!(times[0] >= secs(7) && times[0] < secs(9), "{times:?}");
    assert!(
        times[1] >= times[0] + secs(1) && times[1] < secs(10),
        "{times:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_long_watch_gets_one_bookmark_a_minute_then_the_pre_timeout_ones() {
    let server = ApiServer::start().await.unwrap();
    let events = bookmarks_of_a_watch(&server, 100).await;
    let times: Vec<u64> = events.iter().map(|(at, _)| at.as_secs()).collect();
    assert_eq!(times.len(), 3, "{times:?}");
    assert!((59..=60).contains(&times[0]), "{times:?}");
    assert!((97..=98).contains(&times[1]), "{times:?}");
    assert_eq!(times[2], times[1] + 1, "{times:?}");
}

#[tokio::test]
async fn delete_collection_answers_the_list_it_deleted() {
    let server = seeded().await;
    let before = server.current_resource_version();
    let uri = format!("{CMS}?fieldSelector=metadata.name%3Da");
    let (code, _, list) = send(&server, "DELETE", &uri, None).await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["metadata"]["resourceVersion"], before.to_string());
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"]["name"], "a");
    assert!(items[0].get("kind").is_none(), "{list}");
    let left = server.versions::<ConfigMap>(Some("default")).unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].0, "default/b");
}

#[tokio::test]
async fn invalid_labels_annotations_and_data_keys_are_the_real_422() {
    let server = seeded().await;
    let name_part = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let label_value = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    let config_key = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    let big = "x".repeat(256 * 1024);
    let cases = [
        (
            json!({"metadata": {"name": "x", "labels": {"bad key!": "v"}}}),
            "metadata.labels",
            format!("Invalid value: \"bad key!\": {name_part}"),
        ),
        (
            json!({"metadata": {"name": "x", "labels": {"app": "not ok"}}}),
            "metadata.labels",
            format!("Invalid value: \"not ok\": {label_value}"),
        ),
        (
            json!({"metadata": {"name": "x", "annotations": {"note": big}}}),
            "metadata.annotations",
            "Too long: may not be more than 262144 bytes".to_owned(),
        ),
        (
            json!({"metadata": {"name": "x"}, "data": {"bad key": "v"}}),
            "data[bad key]",
            format!("Invalid value: \"bad key\": {config_key}"),
        ),
    ];
    for (body, field, cause) in cases {
        let (code, _, status) = send(&server, "POST", CMS, Some(body.clone())).await;
        let message = format!("ConfigMap \"x\" is invalid: {field}: {cause}");
        assert_failure((code, &status), 422, Some("Invalid"), &message);
        assert_eq!(
            status["details"],
            json!({"name": "x", "kind": "ConfigMap",
                "causes": [{"reason": status["details"]["causes"][0]["reason"], "message": cause, "field": field}]}),
            "{status}"
        );
        // An update to the same is refused the same way.
        let (_, _, mut current) = get(&server, &format!("{CMS}/a")).await;
        let mut update = body;
        update["metadata"]["name"] = json!("a");
        update["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].take();
        let (code, _, status) = send(&server, "PUT", &format!("{CMS}/a"), Some(update)).await;
        let message = format!("ConfigMap \"a\" is invalid: {field}: {cause}");
        assert_failure((code, &status), 422, Some("Invalid"), &message);
    }
    // Two errors are listed together, as the real aggregate.
    let body = json!({"metadata": {"name": "x", "labels": {"a/b/c": "v"}}, "data": {"..x": "v"}});
    let (code, _, status) = send(&server, "POST", CMS, Some(body)).await;
    assert_eq!(code, 422);
    let message = status["message"].as_str().unwrap();
    assert!(message.starts_with("ConfigMap \"x\" is invalid: [metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of"), "{message}");
    assert!(
        message.ends_with(", data[..x]: Invalid value: \"..x\": must not start with '..']"),
        "{message}"
    );
}
