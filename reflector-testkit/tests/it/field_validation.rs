//! Unknown fields in writes, as the real server treats them: dropped from what is stored,
//! and reported as `fieldValidation` asks (`Warn`, the default: one `Warning` header per
//! field; `Strict`: the write is refused; `Ignore`: nothing).

use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::send_json_raw;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// `(code, Warning headers, JSON body)` of one request.
async fn send(
    server: &ApiServer,
    method: &str,
    uri: &str,
    body: Value,
) -> (u16, Vec<String>, Value) {
    let answer = send_json_raw(server, method, uri, body).await;
    let warnings = answer
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    (answer.code, warnings, answer.json())
}

fn with_unknown_fields(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "dataa": {"k": "v"},
        "metadata": {"name": name, "bogus": true}, "data": {"k": "v"}})
}

#[tokio::test]
async fn unknown_fields_are_dropped_with_a_warning_by_default() {
    let server = ApiServer::start().await.unwrap();
    let (code, warnings, created) = send(&server, "POST", CMS, with_unknown_fields("a")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        warnings,
        [
            r#"299 - "unknown field \"dataa\"""#,
            r#"299 - "unknown field \"metadata.bogus\"""#
        ]
    );
    assert!(created.get("dataa").is_none(), "{created}");
    assert!(created["metadata"].get("bogus").is_none(), "{created}");
    assert_eq!(created["data"], json!({"k": "v"}));

    // An update too, and a patch.
    let mut update = with_unknown_fields("a");
    update["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    let (code, warnings, updated) = send(&server, "PUT", &format!("{CMS}/a"), update).await;
    assert_eq!((code, warnings.len()), (200, 2), "{updated}");
    let (code, warnings, patched) = send(
        &server,
        "PATCH",
        &format!("{CMS}/a"),
        json!({"immutablee": true}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(warnings, [r#"299 - "unknown field \"immutablee\"""#]);
    assert!(patched.get("immutablee").is_none(), "{patched}");

    // Ignore: dropped, nothing said.
    let (code, warnings, created) = send(
        &server,
        "POST",
        &format!("{CMS}?fieldValidation=Ignore"),
        with_unknown_fields("b"),
    )
    .await;
    assert_eq!((code, warnings.len()), (201, 0), "{created}");
    assert!(created.get("dataa").is_none(), "{created}");
}

#[tokio::test]
async fn strict_field_validation_refuses_unknown_fields() {
    let server = ApiServer::start().await.unwrap();
    let strict = format!("{CMS}?fieldValidation=Strict");
    let (code, _, status) = send(&server, "POST", &strict, with_unknown_fields("a")).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        r#"strict decoding error: unknown field "dataa", unknown field "metadata.bogus""#
    );
    let (code, _, _) = send(&server, "GET", &format!("{CMS}/a"), Value::Null).await;
    assert_eq!(code, 404, "nothing was stored");

    // Nested fields of a built-in kind are known by its schema.
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "i", "imagee": "typo", "resources": {"limits": {"cpu": "1"}}}]}});
    let (code, _, status) = send(
        &server,
        "POST",
        "/api/v1/namespaces/default/pods?fieldValidation=Strict",
        pod,
    )
    .await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        r#"strict decoding error: unknown field "spec.containers[0].imagee""#
    );

    // A strict patch whose result has unknown fields is the real 422 on `patch`.
    let (code, _, _) = send(&server, "POST", CMS, json!({"metadata": {"name": "c"}})).await;
    assert_eq!(code, 201);
    let (code, _, status) = send(
        &server,
        "PATCH",
        &format!("{CMS}/c?fieldValidation=Strict"),
        json!({"dataa": {"k": "v"}}),
    )
    .await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (422, Some("Invalid")),
        "{status}"
    );
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(r#" "" is invalid: patch: Invalid value: "{"#),
        "{message}"
    );
    assert!(
        message.ends_with(r#"": strict decoding error: unknown field "dataa""#),
        "{message}"
    );

    let (code, _, status) = send(
        &server,
        "POST",
        &format!("{CMS}?fieldValidation=Loose"),
        with_unknown_fields("d"),
    )
    .await;
    assert_eq!(code, 400, "{status}");
}
