//! `application/strategic-merge-patch+json`, as the real server applies it: a Pod's
//! `containers` merge by `name` (the kind's patch merge key), and the Pod's update rules
//! then refuse what may not change (anything in `spec` but images and a few fields).
//! Custom resources have no strategic merge patch.

use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{create_widget_crd, send_raw};

const PODS: &str = "/api/v1/namespaces/default/pods";
const SMP: &str = "application/strategic-merge-patch+json";

async fn send(
    server: &ApiServer,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Value,
) -> (u16, Value) {
    let body = serde_json::to_vec(&body).unwrap();
    let answer = send_raw(server, method, uri, &[("content-type", content_type)], body).await;
    (answer.code, answer.json())
}

async fn two_container_pod(server: &ApiServer) {
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}});
    let (code, created) = send(server, "POST", PODS, "application/json", pod).await;
    assert_eq!(code, 201, "{created}");
}

fn images(pod: &Value) -> Vec<(&str, &str)> {
    pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["image"].as_str().unwrap()))
        .collect()
}

#[tokio::test]
async fn a_pods_containers_merge_by_name() {
    let server = ApiServer::start().await.unwrap();
    two_container_pod(&server).await;
    let patch = json!({"spec": {"containers": [{"name": "b", "image": "b:2"}]}});
    let (code, patched) = send(&server, "PATCH", &format!("{PODS}/p"), SMP, patch).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(images(&patched), [("a", "a:1"), ("b", "b:2")]);
    // kubectl's directives: the order directive orders, a deleted label goes.
    let patch = json!({"metadata": {"labels": {"tier": "web"}}, "spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
        "containers": [{"name": "a", "image": "a:2"}]}});
    let (code, patched) = send(&server, "PATCH", &format!("{PODS}/p"), SMP, patch).await;
    assert_eq!(
        code, 422,
        "reordering containers changes the spec: {patched}"
    );
    let patch = json!({"metadata": {"labels": {"tier": "web"}}, "spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"name": "a", "image": "a:2"}]}});
    let (code, patched) = send(&server, "PATCH", &format!("{PODS}/p"), SMP, patch).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(images(&patched), [("a", "a:2"), ("b", "b:2")]);
    assert_eq!(patched["metadata"]["labels"], json!({"tier": "web"}));
}

#[tokio::test]
async fn pod_updates_may_change_only_images_and_a_few_fields() {
    let server = ApiServer::start().await.unwrap();
    two_container_pod(&server).await;
    let prefix = "Pod \"p\" is invalid: ";
    // Adding a container (or, with a JSON merge patch that replaces the list, removing one).
    let patch = json!({"spec": {"containers": [{"name": "c", "image": "c:1"}]}});
    let (code, status) = send(&server, "PATCH", &format!("{PODS}/p"), SMP, patch.clone()).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (422, Some("Invalid")),
        "{status}"
    );
    assert_eq!(
        status["message"],
        format!("{prefix}spec.containers: Forbidden: pod updates may not add or remove containers")
    );
    assert_eq!(status["details"]["causes"][0]["field"], "spec.containers");
    let merge = "application/merge-patch+json";
    let (code, status) = send(&server, "PATCH", &format!("{PODS}/p"), merge, patch).await;
    assert_eq!(code, 422, "{status}");
    // Another spec field.
    let patch = json!({"spec": {"restartPolicy": "Never"}});
    let (code, status) = send(&server, "PATCH", &format!("{PODS}/p"), SMP, patch).await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{prefix}spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n")),
        "{message}"
    );
    assert!(message.contains("+ restartPolicy: \"Never\""), "{message}");
    // Images and activeDeadlineSeconds may change; so may the status, through /status.
    let patch = json!({"spec": {"activeDeadlineSeconds": 30, "containers": [{"name": "a", "image": "a:9"}]}});
    let (code, patched) = send(&server, "PATCH", &format!("{PODS}/p"), SMP, patch).await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(images(&patched), [("a", "a:9"), ("b", "b:1")]);
}

#[tokio::test]
async fn custom_resources_have_no_strategic_merge_patch() {
    let server = ApiServer::start().await.unwrap();
    create_widget_crd(&server, Value::Null).await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(
        send(&server, "POST", widgets, "application/json", widget)
            .await
            .0,
        201
    );
    let (code, status) = send(
        &server,
        "PATCH",
        &format!("{widgets}/w"),
        SMP,
        json!({"spec": {}}),
    )
    .await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (415, Some("UnsupportedMediaType")),
        "{status}"
    );
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}
