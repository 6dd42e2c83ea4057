//! Tests of the protobuf codec's JSON mappings.

use super::special::go_duration;
use super::*;
use serde_json::json;

#[test]
fn go_durations_read_as_go_prints_them() {
    let s = 1_000_000_000;
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(1_500_000_000), "1.5s");
    assert_eq!(go_duration(3723 * s), "1h2m3s");
    assert_eq!(go_duration(120 * s), "2m0s");
    assert_eq!(go_duration(2_000_000), "2ms");
}

#[test]
fn a_pod_round_trips_through_its_message() {
    let pod = json!({
        "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"},
            "creationTimestamp": "2024-05-06T07:08:09Z",
            "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                "time": "2024-05-06T07:08:09Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {}}}}]},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
            "livenessProbe": {"httpGet": {"path": "/", "port": "http"}},
            "securityContext": {"runAsUser": 0, "allowPrivilegeEscalation": false}}],
            "automountServiceAccountToken": false},
        "status": {"phase": "Pending", "startTime": "2024-05-06T07:08:10Z"}
    });
    let d = descriptor("", "v1", "Pod").unwrap();
    let body = encode("v1", "Pod", &d, &pod).unwrap();
    let envelope = open(&body).unwrap();
    assert_eq!(
        (envelope.api_version.as_str(), envelope.kind.as_str()),
        ("v1", "Pod")
    );
    assert_eq!(decode(&d, &envelope.raw).unwrap(), pod);
}

#[test]
fn a_body_without_the_magic_is_refused() {
    assert!(matches!(open(b"{}"), Err(ProtobufError::NoMagic)));
}
