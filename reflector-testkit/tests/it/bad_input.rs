//! Bad input never panics or hangs: every case answers a `kind: Status` with the code the
//! real kube-apiserver uses.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use reflector_testkit::ApiServer;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{PATIENCE, assert_status};

/// (case, method, path, content type, body, expected code)
type BodyCase = (
    &'static str,
    &'static str,
    String,
    &'static str,
    Vec<u8>,
    u16,
);

const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Sends one raw HTTP/1.1 request and returns (status code, body).
async fn send(
    server: &ApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !content_type.is_empty() {
        request.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut raw))
        .await
        .expect("connection must not hang")
        .unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let code = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (code, body)
}

fn assert_answer(case: &str, code: u16, body: &str, want: u16) {
    assert_eq!(code, want, "{case}: HTTP code (body {body})");
    let status: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{case}: body is not JSON ({e}): {body}"));
    assert_eq!(status["kind"], "Status", "{case}");
    assert_eq!(status["apiVersion"], "v1", "{case}");
    assert_eq!(status["status"], "Failure", "{case}");
    assert_eq!(status["code"], want, "{case}");
    assert!(
        status["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{case}: message"
    );
    assert!(
        status["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{case}: reason"
    );
    // kube decodes it as its Status type.
    let decoded: kube::core::Status = serde_json::from_str(body).unwrap();
    assert_eq!(decoded.code, want, "{case}");
}

async fn seeded() -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("existing".into());
    cm.metadata.namespace = Some("default".into());
    server.insert(&cm).unwrap();
    server
}

#[tokio::test]
async fn malformed_query_parameters() {
    let server = seeded().await;
    let cases = [
        ("limit=abc", 400),
        ("timeoutSeconds=soon&watch=true", 400),
        ("watch=maybe", 400),
        ("resourceVersion=abc", 400),
        ("resourceVersion=1&resourceVersionMatch=Bogus", 422),
        ("resourceVersionMatch=Exact", 422),
        ("resourceVersion=0&resourceVersionMatch=Exact", 422),
        ("continue=not-base64!!", 400),
        (
            "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0&resourceVersion=5",
            400,
        ),
        (
            "watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
            422,
        ),
        (
            "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
            422,
        ),
        (
            "watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan",
            422,
        ),
        ("labelSelector=app%20in%20web", 400),
        ("labelSelector=%3D%3Dx", 400),
        ("fieldSelector=spec.nodeName%3Dx", 400),
        ("fieldSelector=metadata.name", 400),
        ("allowWatchBookmarks=perhaps&watch=true", 400),
    ];
    for (query, want) in cases {
        let (code, body) = send(&server, "GET", &format!("{CMS}?{query}"), "", b"").await;
        assert_answer(query, code, &body, want);
    }
}

#[tokio::test]
async fn unknown_paths_and_resources() {
    let server = seeded().await;
    for path in [
        "/api/v1/namespaces/default/widgets",
        "/api/v2/configmaps",
        "/apis/nope.example.com/v1/things",
        "/foo",
        "/api/v1/configmaps/existing",
        "/api/v1/namespaces/default/nodes",
        "/api/v1/namespaces/default/configmaps/existing/status",
        "/api/v1/namespaces/default/configmaps/existing/scale",
        "/api/v1/namespaces/default/configmaps/missing",
    ] {
        let (code, body) = send(&server, "GET", path, "", b"").await;
        assert_answer(path, code, &body, 404);
    }
    // Through kube: a CRD that was never registered.
    let api: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(server.client(), "default");
    match api.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404),
        other => panic!("expected 404, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_bodies() {
    let server = seeded().await;
    let json = "application/json";
    let cases: Vec<BodyCase> = vec![
        (
            "invalid JSON",
            "POST",
            CMS.into(),
            json,
            b"{not json".to_vec(),
            400,
        ),
        (
            "JSON array",
            "POST",
            CMS.into(),
            json,
            b"[1,2]".to_vec(),
            400,
        ),
        ("empty body", "POST", CMS.into(), json, Vec::new(), 400),
        (
            "wrong kind",
            "POST",
            CMS.into(),
            json,
            br#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"x"}}"#.to_vec(),
            400,
        ),
        (
            "wrong apiVersion",
            "POST",
            CMS.into(),
            json,
            br#"{"kind":"ConfigMap","apiVersion":"apps/v1","metadata":{"name":"x"}}"#.to_vec(),
            400,
        ),
        (
            "missing name",
            "POST",
            CMS.into(),
            json,
            br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}"#.to_vec(),
            422,
        ),
        (
            "invalid name",
            "POST",
            CMS.into(),
            json,
            br#"{"metadata":{"name":"Bad_Name"}}"#.to_vec(),
            422,
        ),
        (
            "namespace mismatch",
            "POST",
            CMS.into(),
            json,
            br#"{"metadata":{"name":"x","namespace":"other"}}"#.to_vec(),
            400,
        ),
        (
            "yaml body",
            "POST",
            CMS.into(),
            "application/yaml",
            b"metadata: {name: x}".to_vec(),
            415,
        ),
        (
            "name mismatch",
            "PUT",
            format!("{CMS}/existing"),
            json,
            br#"{"metadata":{"name":"other"}}"#.to_vec(),
            400,
        ),
        (
            "bad resourceVersion",
            "PUT",
            format!("{CMS}/existing"),
            json,
            br#"{"metadata":{"name":"existing","resourceVersion":"x"}}"#.to_vec(),
            400,
        ),
        (
            "json patch not an array",
            "PATCH",
            format!("{CMS}/existing"),
            "application/json-patch+json",
            br#"{"op":"add","path":"/data","value":{}}"#.to_vec(),
            400,
        ),
        (
            "json patch with an unknown op",
            "PATCH",
            format!("{CMS}/existing"),
            "application/json-patch+json",
            br#"[{"op":"frobnicate","path":"/data"}]"#.to_vec(),
            422,
        ),
        (
            "apply patch without fieldManager",
            "PATCH",
            format!("{CMS}/existing"),
            "application/apply-patch+yaml",
            b"data: {}".to_vec(),
            422,
        ),
        (
            "apply patch that is not a mapping",
            "PATCH",
            format!("{CMS}/existing?fieldManager=m"),
            "application/apply-patch+yaml",
            b"- a\n- b".to_vec(),
            400,
        ),
        (
            "apply patch of another version",
            "PATCH",
            format!("{CMS}/existing?fieldManager=m"),
            "application/apply-patch+yaml",
            b"{apiVersion: v2, kind: ConfigMap}".to_vec(),
            400,
        ),
        (
            "protobuf patch",
            "PATCH",
            format!("{CMS}/existing"),
            "application/vnd.kubernetes.protobuf",
            b"k8s\0".to_vec(),
            415,
        ),
        (
            "invalid merge patch",
            "PATCH",
            format!("{CMS}/existing"),
            "application/merge-patch+json",
            b"{oops".to_vec(),
            400,
        ),
        (
            "non-object merge patch",
            "PATCH",
            format!("{CMS}/existing"),
            "application/merge-patch+json",
            b"[]".to_vec(),
            400,
        ),
        (
            "patch renames",
            "PATCH",
            format!("{CMS}/existing"),
            "application/merge-patch+json",
            br#"{"metadata":{"name":"other"}}"#.to_vec(),
            400,
        ),
        (
            "patch missing",
            "PATCH",
            format!("{CMS}/missing"),
            "application/merge-patch+json",
            b"{}".to_vec(),
            404,
        ),
        (
            "garbage DeleteOptions",
            "DELETE",
            format!("{CMS}/existing"),
            json,
            b"{nope".to_vec(),
            400,
        ),
        (
            "POST to an object",
            "POST",
            format!("{CMS}/existing"),
            json,
            b"{}".to_vec(),
            405,
        ),
        (
            "PUT to a collection",
            "PUT",
            CMS.into(),
            json,
            b"{}".to_vec(),
            405,
        ),
        (
            "too large",
            "POST",
            CMS.into(),
            json,
            vec![b' '; 4 * 1024 * 1024],
            413,
        ),
        (
            "dryRun other than All",
            "POST",
            format!("{CMS}?dryRun=Yes"),
            json,
            br#"{"metadata":{"name":"dry"}}"#.to_vec(),
            422,
        ),
    ];
    for (case, method, path, content_type, body, want) in cases {
        let (code, text) = send(&server, method, &path, content_type, &body).await;
        assert_answer(case, code, &text, want);
    }
    // Nothing above changed the stored object, and the server still serves.
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let existing = api.get("existing").await.unwrap();
    assert_eq!(existing.metadata.name.as_deref(), Some("existing"));
    assert_eq!(server.count::<ConfigMap>().unwrap(), 1);
}

#[tokio::test]
async fn name_mismatch_through_kube() {
    let server = seeded().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut other = api.get("existing").await.unwrap();
    other.metadata.name = Some("renamed".into());
    match api
        .replace("existing", &PostParams::default(), &other)
        .await
    {
        Err(kube::Error::Api(status)) => {
            assert_status(&status, 400, "BadRequest", |m| {
                m.contains("does not match the name on the URL")
            });
        }
        other => panic!("expected 400, got {other:?}"),
    }
}
