//! The standalone binary: it prints its URL, serves, and on SIGTERM ends open watches
//! cleanly (the chunked body's final chunk) and exits 0; `--crd FILE` serves CRDs from
//! files (a bad file exits 2); `--kubeconfig FILE` writes one for kube clients; `--admin`
//! serves the fault API over HTTP.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use futures::StreamExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{PATIENCE, POLL, names_in};

/// The running binary; killed if the test ends early.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn sigterm_ends_watches_cleanly_and_exits_zero() {
    // Stdout is kept open to the end, so the binary never writes into a closed pipe.
    let (mut child, stdout, url) = spawn(&["--demo"]);
    let addr = url.trim_start_matches("http://").to_owned();

    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request =
        "GET /api/v1/namespaces/demo/configmaps?watch=true HTTP/1.1\r\nHost: localhost\r\n\r\n";
    stream.write_all(request.as_bytes()).await.unwrap();
    // Read until the three demo ConfigMaps have arrived, so the watch is surely open.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while String::from_utf8_lossy(&seen).matches("\"ADDED\"").count() < 3 {
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("events arrive")
            .unwrap();
        assert_ne!(n, 0, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }

    let pid = child.0.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    // The watch ends with the terminating zero-length chunk, then the connection closes.
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut seen))
        .await
        .expect("the watch ends")
        .unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("transfer-encoding: chunked"), "{text}");
    assert!(text.ends_with("\r\n0\r\n\r\n"), "no final chunk: {text:?}");
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let exit = loop {
        if let Some(exit) = child.0.try_wait().unwrap() {
            break exit;
        }
        assert!(tokio::time::Instant::now() < deadline, "still running");
        tokio::time::sleep(POLL).await;
    };
    assert_eq!(exit.code(), Some(0), "{exit:?}");
    drop(stdout);
}

/// Starts the binary with `args`; returns it, its stdout (kept open) and its URL.
fn spawn(args: &[&str]) -> (Running, BufReader<std::process::ChildStdout>, String) {
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_reflector-testkit"))
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut url = String::new();
    while !url.starts_with("http://") {
        url.clear();
        assert_ne!(stdout.read_line(&mut url).unwrap(), 0, "no URL printed");
    }
    (child, stdout, url.trim().to_owned())
}

/// A kube client without kube's retry layer, so injected 429s reach the test.
fn client(url: &str) -> kube::Client {
    let mut config = kube::Config::new(url.parse().unwrap());
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// A file under the system temp dir, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, contents: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

const CRDS_YAML: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: gizmos, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

async fn get(client: &kube::Client, path: &str) -> Result<serde_json::Value, kube::Error> {
    let request = http::Request::get(path).body(Vec::new()).unwrap();
    client.request(request).await
}

#[tokio::test]
async fn crd_files_are_served_at_start() {
    let yaml = TempFile::new("crds.yaml", CRDS_YAML);
    let json = TempFile::new(
        "crd.json",
        &serde_json::to_string(&serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.other.example.com"},
            "spec": {"group": "other.example.com", "scope": "Namespaced",
                "names": {"plural": "things", "kind": "Thing"},
                "versions": [{"name": "v2", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        }))
        .unwrap(),
    );
    let (_child, _stdout, url) = spawn(&["--crd", yaml.path(), "--crd", json.path()]);
    let client = client(&url);
    let resources = get(&client, "/apis/example.com/v1").await.unwrap();
    assert_eq!(names_in(&resources, "resources"), ["widgets", "gizmos"]);
    let list = get(
        &client,
        "/apis/other.example.com/v2/namespaces/default/things",
    )
    .await
    .unwrap();
    assert_eq!(list["kind"], "ThingList");
    let crd = get(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    )
    .await
    .unwrap();
    assert_eq!(crd["status"]["conditions"][1]["type"], "Established");
}

#[tokio::test]
async fn kubeconfig_is_written_before_the_url_and_kube_clients_read_it() {
    let path = std::env::temp_dir().join(format!("{}-testkit.kubeconfig", std::process::id()));
    let _remove = TempFile(path.clone());
    let (_child, _stdout, url) = spawn(&["--demo", "--kubeconfig", path.to_str().unwrap()]);
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .unwrap();
    assert_eq!(config.cluster_url.to_string().trim_end_matches('/'), url);
    assert_eq!(config.default_namespace, "default");
    let client = kube::Client::try_from(config).unwrap();
    let demo: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client, "demo");
    let names = demo.list(&Default::default()).await.unwrap();
    assert_eq!(names.items.len(), 3);

    let unwritable = std::env::temp_dir().join("reflector-testkit-no-such-dir/kubeconfig");
    let (code, stderr) = run_to_exit(&["--kubeconfig", unwritable.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: --kubeconfig "), "{stderr}");
}

#[tokio::test]
async fn the_kinds_of_an_operators_manifests_are_served() {
    let (_child, _stdout, url) = spawn(&[]);
    let client = client(&url);
    for (path, body) in [
        (
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"kind": "ServiceAccount"}),
        ),
        (
            "/api/v1/namespaces/default/services",
            json!({"kind": "Service", "spec": {"ports": [{"port": 443}]}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"kind": "Deployment", "spec": {
            "selector": {"matchLabels": {"app": "op"}},
            "template": {"metadata": {"labels": {"app": "op"}}, "spec": {"containers": [{"name": "op", "image": "op"}]}}}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json!({"kind": "ClusterRole", "rules": []}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({"kind": "ClusterRoleBinding",
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "op"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            json!({"kind": "Role", "rules": []}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            json!({"kind": "RoleBinding",
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "op"}}),
        ),
    ] {
        let group_version = match path.split('/').nth(1) {
            Some("api") => "v1".to_owned(),
            _ => path
                .split('/')
                .skip(2)
                .take(2)
                .collect::<Vec<_>>()
                .join("/"),
        };
        let mut object = body;
        object["apiVersion"] = json!(group_version);
        object["metadata"] = json!({"name": "op"});
        let (status, created) = send(&client, "POST", path, &object.to_string()).await;
        assert_eq!(status, 201, "{path}: {created}");
        let stored = get(&client, &format!("{path}/op")).await.unwrap();
        assert_eq!(stored["metadata"]["name"], "op", "{path}");
    }
}

/// Runs the binary to completion and returns its exit code and stderr.
fn run_to_exit(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_reflector-testkit"))
        .args(args)
        .env("RUST_LOG", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_bad_crd_file_is_a_clear_error_and_exit_code_2() {
    let missing = std::env::temp_dir().join("reflector-testkit-no-such-file.yaml");
    let (code, stderr) = run_to_exit(&["--crd", missing.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("cannot read it"), "{stderr}");

    let bad_yaml = TempFile::new("bad.yaml", "kind: [unclosed\n");
    let (code, stderr) = run_to_exit(&["--crd", bad_yaml.path()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("invalid YAML in document 1"), "{stderr}");

    let not_crd = TempFile::new(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    );
    let (code, stderr) = run_to_exit(&["--crd", not_crd.path()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("document 1 is \"ConfigMap\", not a CustomResourceDefinition"),
        "{stderr}"
    );

    let wrong_name = TempFile::new(
        "wrong.yaml",
        &CRDS_YAML.replacen("name: widgets.example.com", "name: wrong.example.com", 1),
    );
    let (code, stderr) = run_to_exit(&["--crd", wrong_name.path()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("document 1: CustomResourceDefinition.apiextensions.k8s.io \"wrong.example.com\" is invalid: metadata.name: Invalid value: \"wrong.example.com\": must be spec.names.plural+\".\"+spec.group"),
        "{stderr}"
    );

    let (code, stderr) = run_to_exit(&["--crd"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--crd needs a file"), "{stderr}");
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, serde_json::Value) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.as_bytes().to_vec())
        .unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or_default())
}

#[tokio::test]
async fn admin_api_injects_lists_and_clears_faults_over_http() {
    let (_child, _stdout, url) = spawn(&["--admin", "--demo"]);
    let client = client(&url);
    let fault =
        r#"{"matcher": {"verb": "list", "resource": "configmaps"}, "fault": "InternalError"}"#;
    let (code, created) = send(&client, "POST", "/testkit/admin/faults", fault).await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_u64().unwrap();
    let (code, _) = send(&client, "GET", "/api/v1/namespaces/demo/configmaps", "").await;
    assert_eq!(code, 500, "the injected fault fired");
    let (code, _) = send(&client, "GET", "/api/v1/namespaces/demo/configmaps", "").await;
    assert_eq!(code, 200, "once only (the matcher's default)");
    let (_, listed) = send(&client, "GET", "/testkit/admin/faults", "").await;
    assert_eq!(
        listed,
        serde_json::json!([{"id": id, "hits": 1, "fault": "InternalError",
            "matcher": {"verb": "list", "resource": "configmaps", "skip": 0, "times": 1}}])
    );
    let (code, one) = send(&client, "GET", &format!("/testkit/admin/faults/{id}"), "").await;
    assert_eq!((code, &one["hits"]), (200, &serde_json::json!(1)));

    let every = r#"{"matcher": {"verb": "get", "times": null}, "fault": {"TooManyRequests": {"retry_after_secs": 0, "plain_text": false}}}"#;
    assert_eq!(
        send(&client, "POST", "/testkit/admin/faults", every)
            .await
            .0,
        201
    );
    for _ in 0..2 {
        let (code, _) = send(
            &client,
            "GET",
            "/api/v1/namespaces/demo/configmaps/config-0",
            "",
        )
        .await;
        assert_eq!(code, 429);
    }
    let (code, cleared) = send(&client, "DELETE", "/testkit/admin/faults", "").await;
    assert_eq!((code, &cleared["removed"]), (200, &serde_json::json!(2)));
    let (code, _) = send(
        &client,
        "GET",
        "/api/v1/namespaces/demo/configmaps/config-0",
        "",
    )
    .await;
    assert_eq!(code, 200, "cleared");

    let (code, error) = send(
        &client,
        "POST",
        "/testkit/admin/faults",
        r#"{"fault": "Nope"}"#,
    )
    .await;
    assert_eq!(code, 400);
    assert!(
        error["error"].as_str().unwrap().contains("unknown variant"),
        "{error}"
    );
    assert_eq!(
        send(&client, "DELETE", "/testkit/admin/faults/999", "")
            .await
            .0,
        404
    );

    let (code, compacted) = send(&client, "POST", "/testkit/admin/compact", "").await;
    assert_eq!(code, 200);
    let floor = compacted["floor"].as_u64().unwrap();
    let (code, status) = send(
        &client,
        "GET",
        &format!(
            "/api/v1/namespaces/demo/configmaps?resourceVersion={}&resourceVersionMatch=Exact",
            floor - 1
        ),
        "",
    )
    .await;
    assert_eq!(
        (code, &status["reason"]),
        (410, &serde_json::json!("Expired"))
    );
    // An open watch: inject-line reaches it, drop ends it cleanly.
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), "demo");
    let mut lines = api
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    for _ in 0..3 {
        assert!(matches!(
            lines.next().await,
            Some(Ok(kube::api::WatchEvent::Added(_)))
        ));
    }
    // kube asks for bookmarks: the initial events end with one.
    assert!(matches!(
        lines.next().await,
        Some(Ok(kube::api::WatchEvent::Bookmark(_)))
    ));
    let (code, injected) = send(
        &client,
        "POST",
        "/testkit/admin/watches/inject-line",
        r#"{"line": "Malformed"}"#,
    )
    .await;
    assert_eq!((code, &injected["watches"]), (200, &serde_json::json!(1)));
    assert!(
        matches!(lines.next().await, Some(Err(_))),
        "the malformed line reached the watch"
    );
    let (code, dropped) = send(&client, "POST", "/testkit/admin/watches/drop", "").await;
    assert_eq!((code, &dropped["watches"]), (200, &serde_json::json!(1)));
    let end = tokio::time::timeout(PATIENCE, lines.next())
        .await
        .expect("the watch ends");
    assert!(end.is_none(), "ended cleanly: {end:?}");
}

#[tokio::test]
async fn admin_paths_are_404_without_the_flag() {
    let (_child, _stdout, url) = spawn(&[]);
    let client = client(&url);
    let fault = r#"{"fault": "InternalError"}"#;
    let (code, status) = send(&client, "POST", "/testkit/admin/faults", fault).await;
    assert_eq!(code, 404);
    assert_eq!(status["kind"], "Status", "the API server's own 404");
    assert_eq!(
        send(&client, "GET", "/api/v1/namespaces/demo/configmaps", "")
            .await
            .0,
        200
    );
}

#[test]
fn the_url_is_the_first_line_on_stdout_and_logs_go_to_stderr_without_colour() {
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_reflector-testkit"))
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.starts_with("http://127.0.0.1:"), "{first:?}");
    // The INFO line is written before the URL, so it is on stderr by now.
    let pid = child.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("INFO"), "{stderr:?}");
    assert!(
        stderr.contains(first.trim()),
        "the log names the URL: {stderr:?}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "no colour codes when not a terminal: {stderr:?}"
    );
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "", "nothing but the URL on stdout");
}

#[test]
fn help_prints_the_usage_on_stdout_and_exits_zero() {
    for flag in ["--help", "-h"] {
        let output = Command::new(env!("CARGO_BIN_EXE_reflector-testkit"))
            .arg(flag)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{flag}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.starts_with("usage: reflector-testkit"), "{stdout}");
        assert!(output.stderr.is_empty(), "{flag}");
    }
    let (code, stderr) = run_to_exit(&["--bogus"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("error: unknown argument \"--bogus\"\nusage:"),
        "{stderr}"
    );
}
