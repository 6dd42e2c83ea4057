//! Deleting a namespace, as the real namespace lifecycle runs it: the namespace goes
//! `Terminating`, its objects are deleted (those with finalizers wait for them), nothing
//! new may be created in it (403), and it is gone once empty.

use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{send_json, send_raw};

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

/// The real `NamespaceLifecycle` admission answers a write in a namespace that does not
/// exist with the namespace's own `NotFound`: a create, an update, and an apply that would
/// create are all refused before anything is stored.
#[tokio::test]
async fn a_write_in_a_missing_namespace_is_the_namespace_not_found() {
    let server = ApiServer::start().await.unwrap();
    let cms = "/api/v1/namespaces/nowhere/configmaps";
    let expect_namespace_not_found = |(code, status): (u16, Value)| {
        assert_eq!(code, 404, "{status}");
        assert_eq!(status["kind"], "Status", "{status}");
        assert_eq!(status["status"], "Failure", "{status}");
        assert_eq!(status["reason"], "NotFound", "{status}");
        assert_eq!(status["code"], 404, "{status}");
        assert_eq!(status["message"], "namespaces \"nowhere\" not found");
        assert_eq!(
            status["details"],
            json!({"name": "nowhere", "kind": "namespaces"})
        );
    };
    let cm = json!({"metadata": {"name": "lost"}});
    expect_namespace_not_found(send(&server, "POST", cms, Some(cm.clone())).await);
    expect_namespace_not_found(send(&server, "PUT", &format!("{cms}/lost"), Some(cm)).await);
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lost"}});
    let answer = send_raw(
        &server,
        "PATCH",
        &format!("{cms}/lost?fieldManager=test"),
        &[("content-type", "application/apply-patch+yaml")],
        serde_json::to_vec(&applied).unwrap(),
    )
    .await;
    expect_namespace_not_found((answer.code, answer.json()));
    let (code, listed) = send(&server, "GET", cms, None).await;
    assert_eq!(code, 200, "{listed}");
    assert_eq!(listed["items"], json!([]), "nothing was stored");
    // Once the namespace exists, the same create succeeds.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nowhere"}});
    assert_eq!(
        send(&server, "POST", "/api/v1/namespaces", Some(ns))
            .await
            .0,
        201
    );
    let cm = json!({"metadata": {"name": "found"}});
    assert_eq!(send(&server, "POST", cms, Some(cm)).await.0, 201);
}

/// The namespaces the real server creates for itself are there from the start, each
/// `Active`, labelled with its name, and held by the namespace controller's finalizer.
#[tokio::test]
async fn the_system_namespaces_exist_from_the_start() {
    let server = ApiServer::start().await.unwrap();
    let (code, list) = send(&server, "GET", "/api/v1/namespaces", None).await;
    assert_eq!(code, 200, "{list}");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|ns| ns["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    for ns in list["items"].as_array().unwrap() {
        let name = ns["metadata"]["name"].as_str().unwrap();
        assert_eq!(ns["status"], json!({"phase": "Active"}), "{ns}");
        assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}), "{ns}");
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"kubernetes.io/metadata.name": name}),
            "{ns}"
        );
        assert!(ns["metadata"]["uid"].is_string(), "{ns}");
        assert!(ns["metadata"]["creationTimestamp"].is_string(), "{ns}");
    }
    // Objects can be created in them at once.
    let cm = json!({"metadata": {"name": "first"}});
    let (code, created) = send(
        &server,
        "POST",
        "/api/v1/namespaces/kube-system/configmaps",
        Some(cm),
    )
    .await;
    assert_eq!(code, 201, "{created}");
}
