//! Deleting a namespace, as the real namespace lifecycle runs it: the namespace goes
//! `Terminating`, its objects are deleted (those with finalizers wait for them), nothing
//! new may be created in it (403), and it is gone once empty.

use reflector_testkit::ApiServer;
use serde_json::{Value, json};

mod support;
use support::send_json;

async fn send(server: &ApiServer, method: &str, uri: &str, body: Option<Value>) -> (u16, Value) {
    send_json(server, method, uri, body.unwrap_or(Value::Null)).await
}

#[tokio::test]
async fn a_deleted_namespace_terminates_deletes_its_objects_then_goes() {
    let server = ApiServer::start().await.unwrap();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}});
    let (code, created) = send(&server, "POST", "/api/v1/namespaces", Some(ns)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["status"], json!({"phase": "Active"}));
    assert_eq!(created["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(
        created["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "doomed"
    );
    let cms = "/api/v1/namespaces/doomed/configmaps";
    let plain = json!({"metadata": {"name": "plain"}});
    let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    assert_eq!(send(&server, "POST", cms, Some(plain)).await.0, 201);
    assert_eq!(send(&server, "POST", cms, Some(held)).await.0, 201);

    let (code, terminating) = send(&server, "DELETE", "/api/v1/namespaces/doomed", None).await;
    assert_eq!(code, 200, "{terminating}");
    assert_eq!(terminating["status"]["phase"], "Terminating");
    assert!(
        terminating["metadata"]["deletionTimestamp"].is_string(),
        "{terminating}"
    );
    // The plain object is gone; the held one waits for its finalizer, and so does the
    // namespace.
    assert_eq!(
        send(&server, "GET", &format!("{cms}/plain"), None).await.0,
        404
    );
    let (_, held) = send(&server, "GET", &format!("{cms}/held"), None).await;
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let (code, ns) = send(&server, "GET", "/api/v1/namespaces/doomed", None).await;
    assert_eq!(
        (code, ns["status"]["phase"].as_str()),
        (200, Some("Terminating"))
    );
    // Nothing new in it.
    let (code, status) = send(
        &server,
        "POST",
        cms,
        Some(json!({"metadata": {"name": "late"}})),
    )
    .await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (403, Some("Forbidden")),
        "{status}"
    );
    assert_eq!(
        status["message"],
        "configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "NamespaceTerminating"
    );
    // The finalizer done, the object goes, and with it the namespace.
    let release = json!({"metadata": {"finalizers": null}});
    assert_eq!(
        send(&server, "PATCH", &format!("{cms}/held"), Some(release))
            .await
            .0,
        200
    );
    assert_eq!(
        send(&server, "GET", &format!("{cms}/held"), None).await.0,
        404
    );
    let (code, status) = send(&server, "GET", "/api/v1/namespaces/doomed", None).await;
    assert_eq!(code, 404, "{status}");
    assert_eq!(status["message"], "namespaces \"doomed\" not found");
}
