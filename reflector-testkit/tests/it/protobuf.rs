//! The Kubernetes protobuf encoding, as client-go's typed clients speak it: bodies in
//! `application/vnd.kubernetes.protobuf` (the `k8s\0` magic, then a `runtime.Unknown`
//! whose `raw` is the object's message) are decoded for built-in kinds, and answers are
//! protobuf when `Accept` asks for it first (`application/vnd.kubernetes.protobuf, */*`),
//! JSON otherwise. Every body here is built by a protobuf encoder of the Kubernetes types
//! (`k8s-pb`'s prost messages), not written by hand.

use std::collections::BTreeMap;

use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::RawAnswer;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// What client-go's typed clients send.
const CLIENT_GO_ACCEPT: &str = "application/vnd.kubernetes.protobuf, */*";

/// `k8s\0` + a `runtime.Unknown` around `object`'s encoding.
fn envelope(api_version: &str, kind: &str, object: &impl Message) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(object.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

/// The `(apiVersion, kind)` and object of a protobuf answer.
fn open<M: Message + Default>(body: &[u8]) -> (String, String, M) {
    let unknown = Unknown::decode(body.strip_prefix(b"k8s\0").expect("the magic prefix")).unwrap();
    let type_meta = unknown.type_meta.unwrap_or_default();
    let object = M::decode(unknown.raw.unwrap_or_default().as_slice()).unwrap();
    (
        type_meta.api_version.unwrap_or_default(),
        type_meta.kind.unwrap_or_default(),
        object,
    )
}

async fn send(
    server: &ApiServer,
    method: &str,
    uri: &str,
    content_type: &str,
    accept: &str,
    body: Vec<u8>,
) -> RawAnswer {
    let headers = [("content-type", content_type), ("accept", accept)];
    crate::support::send_raw(server, method, uri, &headers, body).await
}

/// A request as client-go's typed clients send it: a protobuf body, protobuf first in
/// `Accept`.
async fn as_client_go(server: &ApiServer, method: &str, uri: &str, body: Vec<u8>) -> RawAnswer {
    send(server, method, uri, PROTOBUF, CLIENT_GO_ACCEPT, body).await
}

/// A JSON answer's body; fails if the answer is not JSON.
fn json_of(answer: &RawAnswer) -> Value {
    assert!(
        answer.content_type().starts_with("application/json"),
        "{}",
        answer.content_type()
    );
    answer.json()
}

fn metadata(name: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.to_owned()),
        labels: BTreeMap::from([("app".to_owned(), "demo".to_owned())]),
        ..Default::default()
    })
}

fn micro_time(seconds: i64, micros: i32) -> Option<meta::MicroTime> {
    Some(meta::MicroTime {
        seconds: Some(seconds),
        nanos: Some(micros * 1000),
    })
}

/// Creates `object` with a protobuf body as client-go does, checks the protobuf answer
/// decodes as the same kind, and returns the object as JSON (read back with a JSON GET).
async fn create_as_client_go<M: Message + Default>(
    server: &ApiServer,
    collection: &str,
    (api_version, kind): (&str, &str),
    object: &M,
) -> (M, Value) {
    let body = envelope(api_version, kind, object);
    let created = as_client_go(server, "POST", collection, body).await;
    assert_eq!(
        created.code,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(created.content_type(), PROTOBUF);
    let (answered_version, answered_kind, answered) = open::<M>(&created.body);
    assert_eq!(
        (answered_version.as_str(), answered_kind.as_str()),
        (api_version, kind)
    );
    let name = created_name(&created.body);
    let read = send(
        server,
        "GET",
        &format!("{collection}/{name}"),
        "",
        "application/json",
        Vec::new(),
    )
    .await;
    assert_eq!(read.code, 200);
    let json = json_of(&read);
    assert!(json["metadata"]["uid"].is_string(), "{json}");
    (answered, json)
}

/// The `metadata.name` of a protobuf answer (any kind: `ObjectMeta` is field 1).
fn created_name(body: &[u8]) -> String {
    #[derive(Clone, PartialEq, Message)]
    struct AnyObject {
        #[prost(message, optional, tag = "1")]
        metadata: Option<meta::ObjectMeta>,
    }
    let (_, _, object) = open::<AnyObject>(body);
    object.metadata.and_then(|m| m.name).unwrap_or_default()
}

#[tokio::test]
async fn config_maps_and_secrets_in_protobuf() {
    let server = ApiServer::start().await.unwrap();
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = core::ConfigMap {
        metadata: metadata("settings"),
        data: BTreeMap::from([("mode".to_owned(), "fast".to_owned())]),
        binary_data: BTreeMap::from([("blob".to_owned(), vec![0, 159, 146, 150])]),
        ..Default::default()
    };
    let (answered, json) = create_as_client_go(&server, cms, ("v1", "ConfigMap"), &cm).await;
    assert_eq!(answered.data, cm.data);
    assert_eq!(answered.binary_data, cm.binary_data);
    assert_eq!(json["data"], json!({"mode": "fast"}));
    assert_eq!(json["binaryData"], json!({"blob": "AJ+Slg=="}));
    assert_eq!(json["metadata"]["labels"], json!({"app": "demo"}));
    assert!(
        json["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );

    // An update in protobuf, with the resourceVersion the server gave it.
    let mut changed = answered.clone();
    changed.data.insert("mode".to_owned(), "slow".to_owned());
    let body = envelope("v1", "ConfigMap", &changed);
    let updated = as_client_go(&server, "PUT", &format!("{cms}/settings"), body).await;
    assert_eq!(
        updated.code,
        200,
        "{}",
        String::from_utf8_lossy(&updated.body)
    );
    let (_, _, updated) = open::<core::ConfigMap>(&updated.body);
    assert_eq!(updated.data["mode"], "slow");
    // A stale one conflicts, as in JSON.
    let body = envelope("v1", "ConfigMap", &changed);
    let stale = as_client_go(&server, "PUT", &format!("{cms}/settings"), body).await;
    assert_eq!(stale.code, 409);

    // A list in protobuf.
    let list = send(&server, "GET", cms, "", CLIENT_GO_ACCEPT, Vec::new()).await;
    assert_eq!((list.code, list.content_type()), (200, PROTOBUF));
    let (_, kind, list) = open::<core::ConfigMapList>(&list.body);
    assert_eq!(kind, "ConfigMapList");
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.and_then(|m| m.resource_version).is_some());

    let secrets = "/api/v1/namespaces/default/secrets";
    let secret = core::Secret {
        metadata: metadata("token"),
        r#type: Some("Opaque".to_owned()),
        data: BTreeMap::from([("key".to_owned(), b"s3cr3t".to_vec())]),
        ..Default::default()
    };
    let (answered, json) = create_as_client_go(&server, secrets, ("v1", "Secret"), &secret).await;
    assert_eq!(answered.data, secret.data);
    assert_eq!(json["data"], json!({"key": "czNjcjN0"}));
    assert_eq!(json["type"], "Opaque");
}

#[tokio::test]
async fn leases_in_protobuf_as_leader_election_writes_them() {
    let server = ApiServer::start().await.unwrap();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = coordination::Lease {
        metadata: metadata("controller-leader"),
        spec: Some(coordination::LeaseSpec {
            holder_identity: Some("pod-a_1234".to_owned()),
            lease_duration_seconds: Some(15),
            acquire_time: micro_time(1_700_000_000, 123_456),
            renew_time: micro_time(1_700_000_005, 0),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let (answered, json) =
        create_as_client_go(&server, leases, ("coordination.k8s.io/v1", "Lease"), &lease).await;
    assert_eq!(answered.spec, lease.spec);
    assert_eq!(
        json["spec"],
        json!({"holderIdentity": "pod-a_1234", "leaseDurationSeconds": 15,
            "acquireTime": "2023-11-14T22:13:20.123456Z", "renewTime": "2023-11-14T22:13:25.000000Z",
            "leaseTransitions": 0})
    );
}

#[tokio::test]
async fn events_of_both_groups_in_protobuf() {
    let server = ApiServer::start().await.unwrap();
    let reference = core::ObjectReference {
        kind: Some("Pod".to_owned()),
        namespace: Some("default".to_owned()),
        name: Some("web".to_owned()),
        ..Default::default()
    };
    let core_event = core::Event {
        metadata: metadata("web.1"),
        involved_object: Some(reference.clone()),
        reason: Some("Started".to_owned()),
        message: Some("Started container".to_owned()),
        r#type: Some("Normal".to_owned()),
        count: Some(2),
        first_timestamp: Some(meta::Time {
            seconds: Some(1_700_000_000),
            nanos: Some(0),
        }),
        source: Some(core::EventSource {
            component: Some("kubelet".to_owned()),
            host: None,
        }),
        ..Default::default()
    };
    let core_events = "/api/v1/namespaces/default/events";
    let (answered, json) =
        create_as_client_go(&server, core_events, ("v1", "Event"), &core_event).await;
    assert_eq!(answered.involved_object, core_event.involved_object);
    assert_eq!(json["involvedObject"]["name"], "web");
    assert_eq!(json["count"], 2);
    assert_eq!(json["firstTimestamp"], "2023-11-14T22:13:20Z");

    let event = events::Event {
        metadata: metadata("web.2"),
        event_time: micro_time(1_700_000_000, 5),
        reporting_controller: Some("example.com/ctl".to_owned()),
        reporting_instance: Some("ctl-0".to_owned()),
        action: Some("Reconcile".to_owned()),
        reason: Some("Synced".to_owned()),
        regarding: Some(reference),
        note: Some("all good".to_owned()),
        r#type: Some("Normal".to_owned()),
        ..Default::default()
    };
    let v1_events = "/apis/events.k8s.io/v1/namespaces/default/events";
    let (answered, json) =
        create_as_client_go(&server, v1_events, ("events.k8s.io/v1", "Event"), &event).await;
    assert_eq!(answered.note.as_deref(), Some("all good"));
    assert_eq!(json["eventTime"], "2023-11-14T22:13:20.000005Z");
    assert_eq!(json["regarding"]["kind"], "Pod");
    // One storage: the core view of it reads the same event.
    let core_view = send(
        &server,
        "GET",
        &format!("{core_events}/web.2"),
        "",
        CLIENT_GO_ACCEPT,
        Vec::new(),
    )
    .await;
    let (_, kind, core_view) = open::<core::Event>(&core_view.body);
    assert_eq!(kind, "Event");
    assert_eq!(core_view.message.as_deref(), Some("all good"));
}

#[tokio::test]
async fn pods_in_protobuf_keep_quantities_int_or_strings_and_meaningful_zeros() {
    let server = ApiServer::start().await.unwrap();
    let pods = "/api/v1/namespaces/default/pods";
    let quantity = |q: &str| k8s_pb::apimachinery::pkg::api::resource::Quantity {
        string: Some(q.to_owned()),
    };
    let pod = core::Pod {
        metadata: metadata("web"),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: Some("web".to_owned()),
                image: Some("nginx:1.27".to_owned()),
                ports: vec![core::ContainerPort {
                    name: Some("http".to_owned()),
                    container_port: Some(80),
                    protocol: Some("TCP".to_owned()),
                    ..Default::default()
                }],
                resources: Some(core::ResourceRequirements {
                    limits: BTreeMap::from([("cpu".to_owned(), quantity("500m"))]),
                    requests: BTreeMap::from([("cpu".to_owned(), quantity("500m"))]),
                    ..Default::default()
                }),
                readiness_probe: Some(core::Probe {
                    handler: Some(core::ProbeHandler {
                        http_get: Some(core::HttpGetAction {
                            path: Some("/healthz".to_owned()),
                            port: Some(k8s_pb::apimachinery::pkg::util::intstr::IntOrString {
                                r#type: Some(1),
                                int_val: None,
                                str_val: Some("http".to_owned()),
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                security_context: Some(core::SecurityContext {
                    run_as_user: Some(0),
                    allow_privilege_escalation: Some(false),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            automount_service_account_token: Some(false),
            termination_grace_period_seconds: Some(0),
            ..Default::default()
        }),
        status: None,
    };
    let (answered, json) = create_as_client_go(&server, pods, ("v1", "Pod"), &pod).await;
    let container = &json["spec"]["containers"][0];
    assert_eq!(container["resources"]["limits"], json!({"cpu": "500m"}));
    assert_eq!(container["readinessProbe"]["httpGet"]["port"], "http");
    assert_eq!(container["ports"][0]["containerPort"], 80);
    assert_eq!(
        container["securityContext"],
        json!({"runAsUser": 0, "allowPrivilegeEscalation": false})
    );
    assert_eq!(json["spec"]["automountServiceAccountToken"], false);
    assert_eq!(json["spec"]["terminationGracePeriodSeconds"], 0);
    // The server's Pod defaults are in the protobuf answer too.
    assert_eq!(
        answered.status.and_then(|s| s.phase).as_deref(),
        Some("Pending")
    );
}

#[tokio::test]
async fn protobuf_bodies_errors_and_negotiation() {
    let server = ApiServer::start().await.unwrap();
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = core::ConfigMap {
        metadata: metadata("a"),
        ..Default::default()
    };
    // Accept without protobuf first (kube, kubectl): JSON answers, even to a protobuf body.
    let created = send(
        &server,
        "POST",
        cms,
        PROTOBUF,
        "application/json",
        envelope("v1", "ConfigMap", &cm),
    )
    .await;
    assert_eq!(created.code, 201);
    assert_eq!(json_of(&created)["metadata"]["name"], "a");
    let read = send(
        &server,
        "GET",
        &format!("{cms}/a"),
        "",
        "application/json, application/vnd.kubernetes.protobuf",
        Vec::new(),
    )
    .await;
    assert_eq!(json_of(&read)["kind"], "ConfigMap");
    // Protobuf alone is acceptable for a built-in kind.
    let read = send(
        &server,
        "GET",
        &format!("{cms}/a"),
        "",
        PROTOBUF,
        Vec::new(),
    )
    .await;
    assert_eq!((read.code, read.content_type()), (200, PROTOBUF));

    // Errors stay JSON Status objects, which client-go reads by their Content-Type.
    let again = as_client_go(&server, "POST", cms, envelope("v1", "ConfigMap", &cm)).await;
    assert_eq!(again.code, 409);
    assert_eq!(json_of(&again)["reason"], "AlreadyExists");
    let wrong_kind = as_client_go(&server, "POST", cms, envelope("v1", "Secret", &cm)).await;
    assert_eq!(
        wrong_kind.code,
        400,
        "{}",
        String::from_utf8_lossy(&wrong_kind.body)
    );
    let no_magic = as_client_go(&server, "POST", cms, cm.encode_to_vec()).await;
    assert_eq!(no_magic.code, 400);
    assert_eq!(
        json_of(&no_magic)["message"],
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    );

    // A DELETE whose DeleteOptions are protobuf: a stale precondition is the usual 409.
    let options = meta::DeleteOptions {
        preconditions: Some(meta::Preconditions {
            uid: None,
            resource_version: Some("1".to_owned()),
        }),
        ..Default::default()
    };
    let body = envelope("meta.k8s.io/v1", "DeleteOptions", &options);
    let stale = as_client_go(&server, "DELETE", &format!("{cms}/a"), body).await;
    assert_eq!(stale.code, 409, "{}", String::from_utf8_lossy(&stale.body));
    let body = envelope(
        "meta.k8s.io/v1",
        "DeleteOptions",
        &meta::DeleteOptions::default(),
    );
    let deleted = as_client_go(&server, "DELETE", &format!("{cms}/a"), body).await;
    assert_eq!((deleted.code, deleted.content_type()), (200, PROTOBUF));
    let (_, kind, status) = open::<meta::Status>(&deleted.body);
    assert_eq!(
        (kind.as_str(), status.status.as_deref()),
        ("Status", Some("Success"))
    );

    // Custom resources have no protobuf: a protobuf body is the real 415, and client-go's
    // Accept gets JSON.
    crate::support::create_widget_crd(&server, Value::Null).await;
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let refused = as_client_go(
        &server,
        "POST",
        widgets,
        envelope("example.com/v1", "Widget", &cm),
    )
    .await;
    assert_eq!(refused.code, 415);
    assert_eq!(
        json_of(&refused)["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json"
    );
    let listed = send(&server, "GET", widgets, "", CLIENT_GO_ACCEPT, Vec::new()).await;
    assert_eq!(json_of(&listed)["kind"], "WidgetList");
    let only_protobuf = send(&server, "GET", widgets, "", PROTOBUF, Vec::new()).await;
    assert_eq!(only_protobuf.code, 406);
    assert_eq!(
        json_of(&only_protobuf)["message"],
        "only the following media types are accepted: application/json"
    );
}
