//! Resource-specific field selectors beyond Events: a Pod's `spec.nodeName` and
//! `status.phase`, on lists and watches, as the kubelet's informer selects its Pods.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::{create, expect_initial_events_end};

fn pod(name: &str, node: Option<&str>) -> Pod {
    let mut p = Pod {
        spec: Some(PodSpec {
            node_name: node.map(str::to_owned),
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    p.metadata.name = Some(name.into());
    p
}

async fn names(api: &Api<Pod>, fields: &str) -> Vec<String> {
    let mut names: Vec<String> = api
        .list(&ListParams::default().fields(fields))
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn pods_select_by_node_name_and_phase() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<Pod> = Api::namespaced(server.client(), "default");
    for p in [pod("a", Some("n1")), pod("b", Some("n2")), pod("c", None)] {
        create(&api, &p).await;
    }
    assert_eq!(names(&api, "spec.nodeName=n1").await, ["a"]);
    // Unscheduled Pods have no node: they select as `spec.nodeName=`.
    assert_eq!(names(&api, "spec.nodeName=").await, ["c"]);
    assert_eq!(names(&api, "spec.nodeName!=n1").await, ["b", "c"]);
    // New Pods are Pending (the server sets the phase).
    assert_eq!(names(&api, "status.phase=Pending").await, ["a", "b", "c"]);
    assert!(names(&api, "status.phase=Running").await.is_empty());
}

#[tokio::test]
async fn a_pod_that_gets_the_node_enters_a_node_selected_watch() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<Pod> = Api::namespaced(server.client(), "default");
    create(&api, &pod("a", None)).await;
    let mut watch = api
        .watch(&WatchParams::default().fields("spec.nodeName=n1"), "0")
        .await
        .unwrap()
        .boxed();
    expect_initial_events_end(&mut watch).await;
    // As a scheduler binds it: `spec.nodeName` may not change through an update.
    let bind = json!({"metadata": {"name": "a"}, "target": {"kind": "Node", "name": "n1"}});
    let _: kube::core::Status = api
        .create_subresource("binding", "a", &PostParams::default(), &bind)
        .await
        .unwrap();
    match watch.try_next().await.unwrap() {
        Some(WatchEvent::Added(p)) => assert_eq!(p.name_any(), "a"),
        other => panic!("expected ADDED a, got {other:?}"),
    }
}

#[tokio::test]
async fn a_pod_binds_once_and_its_node_does_not_change_through_updates() {
    let server = ApiServer::start().await.unwrap();
    let api: Api<Pod> = Api::namespaced(server.client_without_retries(), "default");
    create(&api, &pod("a", None)).await;
    let bind =
        |node: &str| json!({"metadata": {"name": "a"}, "target": {"kind": "Node", "name": node}});
    let status: kube::core::Status = api
        .create_subresource("binding", "a", &PostParams::default(), &bind("n1"))
        .await
        .unwrap();
    assert_eq!(status.code, 201);
    let bound = api.get("a").await.unwrap();
    assert_eq!(bound.spec.unwrap().node_name.as_deref(), Some("n1"));
    let conditions = bound.status.unwrap().conditions.unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );
    let again = api
        .create_subresource::<Value, kube::core::Status>(
            "binding",
            "a",
            &PostParams::default(),
            &bind("n2"),
        )
        .await;
    let kube::Error::Api(status) = again.unwrap_err() else {
        panic!("an API error")
    };
    assert_eq!(status.code, 409);
    assert_eq!(
        status.message,
        r#"Operation cannot be fulfilled on pods/binding "a": pod a is already assigned to node "n1""#
    );
}
