//! Admission webhooks called as the real API server calls them: matched by their rules,
//! sent an `admission.k8s.io/v1` AdmissionReview over HTTPS verified against the
//! `caBundle`, mutating ones before the object's validation and validating ones after,
//! their refusals and failures answered with the real server's codes and words.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

use crate::support::webhook_server::{self, WebhookServer, admission_answer};
use crate::support::{assert_status, config_map, send_json_raw, status_of};

/// A webhook configuration of `kind` with one webhook `name` calling `url` for `rules`.
fn configuration(kind: &str, name: &str, webhook: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [webhook],
    })
}

/// One webhook calling `client` for `rules` (defaults elsewhere).
fn webhook(name: &str, client: Value, rules: Value) -> Value {
    json!({
        "name": name,
        "clientConfig": client,
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

fn configmap_rules(operations: &[&str]) -> Value {
    json!([{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}])
}

/// Stores a configuration through the API; panics unless it is created.
async fn store(server: &ApiServer, configuration: Value) {
    let plural = match configuration["kind"].as_str() {
        Some("MutatingWebhookConfiguration") => "mutatingwebhookconfigurations",
        _ => "validatingwebhookconfigurations",
    };
    let uri = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
    let answer = send_json_raw(server, "POST", &uri, configuration).await;
    assert_eq!(
        answer.code,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
}

fn url_client(hooks: &WebhookServer, path: &str) -> Value {
    json!({"url": hooks.url(path), "caBundle": hooks.ca_bundle()})
}

/// Allows everything.
fn allow(_path: &str, review: &Value) -> Value {
    admission_answer(review, None, None, &[])
}

/// A webhook server allowing everything, and a server calling it on `/v` as the
/// validating webhook `NAME.example.com` for the ConfigMap `operations` (the stored
/// webhook is returned).
async fn allowing(name: &str, operations: &[&str]) -> (WebhookServer, ApiServer, Value) {
    let hooks = WebhookServer::start(allow).await;
    let server = ApiServer::start().await.unwrap();
    let client = url_client(&hooks, "/v");
    let hook = webhook(
        &format!("{name}.example.com"),
        client,
        configmap_rules(operations),
    );
    let stored = configuration("ValidatingWebhookConfiguration", name, hook.clone());
    store(&server, stored).await;
    (hooks, server, hook)
}

/// Denies every ConfigMap with a `bad` key: on create with a 403 and a message, on
/// update with a code below 400 (the real server makes it 400) and on delete without
/// any explanation.
fn deny_bad(_path: &str, review: &Value) -> Value {
    let request = &review["request"];
    let bad = request["object"]["data"]["bad"].is_string();
    match request["operation"].as_str() {
        Some("CREATE") if bad => admission_answer(
            review,
            Some(json!({"code": 403, "message": "no bad data", "reason": "Forbidden"})),
            None,
            &[],
        ),
        Some("UPDATE") if bad => admission_answer(
            review,
            Some(json!({"code": 200, "message": "still no bad data"})),
            None,
            &[],
        ),
        Some("DELETE") => admission_answer(review, Some(json!({})), None, &[]),
        _ => admission_answer(review, None, None, &[]),
    }
}

#[tokio::test]
async fn validating_webhook_denies_create_update_and_delete_as_the_real_server() {
    let hooks = WebhookServer::start(deny_bad).await;
    let server = ApiServer::start().await.unwrap();
    let rules = configmap_rules(&["CREATE", "UPDATE", "DELETE"]);
    let hook = webhook("deny.example.com", url_client(&hooks, "/validate"), rules);
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "deny", hook),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");

    let created = status_of(
        api.create(&PostParams::default(), &config_map("a", &[("bad", "1")]))
            .await,
    );
    assert_status(&created, 403, "Forbidden", |m| {
        m == "admission webhook \"deny.example.com\" denied the request: no bad data"
    });
    assert!(
        server
            .get::<ConfigMap>(Some("default"), "a")
            .unwrap()
            .is_none()
    );

    api.create(&PostParams::default(), &config_map("a", &[("good", "1")]))
        .await
        .expect("a good ConfigMap is admitted");
    let patch = Patch::Merge(json!({"data": {"bad": "1"}}));
    let updated = status_of(api.patch("a", &PatchParams::default(), &patch).await);
    assert_status(&updated, 400, "", |m| {
        m == "admission webhook \"deny.example.com\" denied the request: still no bad data"
    });
    let stored = server
        .get::<ConfigMap>(Some("default"), "a")
        .unwrap()
        .unwrap();
    assert!(
        !stored.data.unwrap().contains_key("bad"),
        "the refused patch is not stored"
    );

    let deleted = status_of(api.delete("a", &DeleteParams::default()).await);
    assert_status(&deleted, 400, "", |m| {
        m == "admission webhook \"deny.example.com\" denied the request without explanation"
    });
    assert!(
        server
            .get::<ConfigMap>(Some("default"), "a")
            .unwrap()
            .is_some()
    );
    let delete = hooks.requests_on("/validate").pop().unwrap();
    assert_eq!(delete["operation"], "DELETE");
    assert_eq!(delete["object"], Value::Null);
    assert_eq!(delete["oldObject"]["metadata"]["name"], "a");
    assert_eq!(delete["options"]["kind"], "DeleteOptions");
}

/// Adds `defaulted-by: NAME` to the labels, and to the data the labels it found.
fn defaulter(name: &'static str) -> impl Fn(&str, &Value) -> Value + Send + Sync {
    move |_path, review| {
        let object = &review["request"]["object"];
        let seen: Vec<String> = object["metadata"]["labels"]
            .as_object()
            .map(|l| l.keys().cloned().collect())
            .unwrap_or_default();
        let mut patch = vec![];
        if object["metadata"]["labels"].is_null() {
            patch.push(json!({"op": "add", "path": "/metadata/labels", "value": {}}));
        }
        patch.push(json!({"op": "add", "path": format!("/metadata/labels/defaulted-by-{name}"), "value": "yes"}));
        patch.push(json!({"op": "add", "path": format!("/metadata/annotations"), "value": {format!("{name}-saw"): seen.join(",")}}));
        admission_answer(
            review,
            None,
            Some(json!(patch)),
            &["defaulted by a webhook"],
        )
    }
}

#[tokio::test]
async fn mutating_webhooks_patch_in_name_order_and_their_defaults_are_stored() {
    let first = WebhookServer::start(defaulter("first")).await;
    let second = WebhookServer::start(defaulter("second")).await;
    let server = ApiServer::start().await.unwrap();
    let rules = configmap_rules(&["CREATE"]);
    // Stored in the other order: configurations are called by name.
    let hook = webhook(
        "second.example.com",
        url_client(&second, "/mutate"),
        rules.clone(),
    );
    store(
        &server,
        configuration("MutatingWebhookConfiguration", "b-second", hook),
    )
    .await;
    let hook = webhook("first.example.com", url_client(&first, "/mutate"), rules);
    store(
        &server,
        configuration("MutatingWebhookConfiguration", "a-first", hook),
    )
    .await;

    let created = send_json_raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}}),
    )
    .await;
    assert_eq!(created.code, 201);
    let warnings: Vec<_> = created.headers.get_all("warning").iter().collect();
    assert_eq!(
        warnings.len(),
        2,
        "each webhook's warning reaches the client"
    );
    assert_eq!(warnings[0], "299 - \"defaulted by a webhook\"");

    let stored = server
        .get::<ConfigMap>(Some("default"), "m")
        .unwrap()
        .unwrap();
    let labels = stored.metadata.labels.unwrap();
    assert_eq!(labels["defaulted-by-first"], "yes");
    assert_eq!(labels["defaulted-by-second"], "yes");
    let annotations = stored.metadata.annotations.unwrap();
    assert_eq!(
        annotations["second-saw"], "defaulted-by-first",
        "the second webhook sees the first one's patch"
    );
    assert!(
        stored.metadata.uid.is_some(),
        "the object's own defaults still apply"
    );
    let request = &first.requests_on("/mutate")[0];
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["namespace"], "default");
    assert_eq!(request["options"]["kind"], "CreateOptions");
    assert_eq!(request["userInfo"]["username"], "system:admin");
    assert_eq!(request["dryRun"], false);
}

#[tokio::test]
async fn update_webhook_sees_the_old_object_and_the_new() {
    let (hooks, server, _) = allowing("audit", &["UPDATE"]).await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("u", &[("k", "old")]))
        .await
        .unwrap();
    assert!(
        hooks.reviews().is_empty(),
        "a create does not match an UPDATE rule"
    );
    let patch = Patch::Merge(json!({"data": {"k": "new"}}));
    let updated = api
        .patch("u", &PatchParams::apply("ignored").force(), &Patch::Apply(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u"}, "data": {"k": "applied"},
        })))
        .await
        .unwrap();
    assert_eq!(updated.data.unwrap()["k"], "applied");
    api.patch("u", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let requests = hooks.requests_on("/v");
    assert_eq!(
        requests.len(),
        2,
        "server-side apply and merge patch both call it"
    );
    assert_eq!(requests[0]["options"]["kind"], "PatchOptions");
    assert_eq!(requests[0]["options"]["force"], true);
    let request = &requests[1];
    assert_eq!(request["operation"], "UPDATE");
    assert_eq!(request["oldObject"]["data"]["k"], "applied");
    assert_eq!(request["object"]["data"]["k"], "new");
    assert_eq!(request["name"], "u");
    assert!(request["object"]["metadata"]["resourceVersion"].is_string());
}

#[tokio::test]
async fn dry_run_writes_call_the_webhook_with_dry_run_and_store_nothing() {
    let (hooks, server, hook) = allowing("dry", &["CREATE"]).await;
    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");
    let created = api
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &config_map("d", &[]),
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("d"));
    assert!(
        server
            .get::<ConfigMap>(Some("default"), "d")
            .unwrap()
            .is_none()
    );
    let request = &hooks.requests_on("/v")[0];
    assert_eq!(request["dryRun"], true);
    assert_eq!(request["options"]["dryRun"], json!(["All"]));

    // A webhook with side effects refuses dry runs, as the real server does.
    let mut effects = hook;
    effects["name"] = json!("effects.example.com");
    effects["sideEffects"] = json!("Some");
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "effects", effects),
    )
    .await;
    let refused = status_of(
        api.create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &config_map("d", &[]),
        )
        .await,
    );
    assert_status(&refused, 400, "BadRequest", |m| {
        m == "admission webhook \"effects.example.com\" does not support dry run"
    });
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn webhook_down_fails_the_write_under_fail_and_not_under_ignore() {
    let port = closed_port().await;
    let server = ApiServer::start().await.unwrap();
    let client = json!({"url": format!("https://127.0.0.1:{port}/v")});
    let hook = webhook("down.example.com", client, configmap_rules(&["CREATE"]));
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "down", hook.clone()),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");
    let failed = status_of(
        api.create(&PostParams::default(), &config_map("f", &[]))
            .await,
    );
    let expected = format!(
        "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/v?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    );
    assert_status(&failed, 500, "InternalError", |m| m == expected);
    assert!(
        server
            .get::<ConfigMap>(Some("default"), "f")
            .unwrap()
            .is_none()
    );

    let mut ignored = hook;
    ignored["failurePolicy"] = json!("Ignore");
    let uri = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/down";
    let mut stored: Value = send_json_raw(&server, "GET", uri, Value::Null).await.json();
    stored["webhooks"] = json!([ignored]);
    assert_eq!(send_json_raw(&server, "PUT", uri, stored).await.code, 200);
    api.create(&PostParams::default(), &config_map("f", &[]))
        .await
        .expect("failurePolicy Ignore lets the write through");
}

#[tokio::test]
async fn webhook_slower_than_its_timeout_is_a_call_failure() {
    let certs = webhook_server::certificates(&["127.0.0.1"]);
    let answer = std::sync::Arc::new(allow);
    let slow = WebhookServer::start_with(certs, std::time::Duration::from_secs(5), answer).await;
    let server = ApiServer::start().await.unwrap();
    let mut hook = webhook(
        "slow.example.com",
        url_client(&slow, "/v"),
        configmap_rules(&["CREATE"]),
    );
    hook["timeoutSeconds"] = json!(1);
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "slow", hook),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");
    let failed = status_of(
        api.create(&PostParams::default(), &config_map("t", &[]))
            .await,
    );
    let expected = format!(
        "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{}?timeout=1s\": context deadline exceeded",
        slow.url("/v")
    );
    assert_status(&failed, 500, "InternalError", |m| m == expected);
}

#[tokio::test]
async fn webhook_certificate_from_another_ca_is_a_call_failure() {
    let hooks = WebhookServer::start(allow).await;
    let other = webhook_server::certificates(&["127.0.0.1"]);
    let server = ApiServer::start().await.unwrap();
    let bundle = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &other.ca_pem);
    let client = json!({"url": hooks.url("/v"), "caBundle": bundle});
    let hook = webhook("tls.example.com", client, configmap_rules(&["CREATE"]));
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "tls", hook),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");
    let failed = status_of(
        api.create(&PostParams::default(), &config_map("c", &[]))
            .await,
    );
    assert_status(&failed, 500, "InternalError", |m| {
        m.ends_with(
            ": tls: failed to verify certificate: x509: certificate signed by unknown authority",
        )
    });
    assert!(
        hooks.reviews().is_empty(),
        "nothing is sent to an unverified server"
    );
}

#[tokio::test]
async fn webhook_rules_and_selectors_leave_unmatched_writes_alone() {
    let hooks = WebhookServer::start(allow).await;
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    for (name, labels) in [("on", json!({"hooks": "on"})), ("off", json!({}))] {
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
    }
    let mut hook = webhook(
        "selective.example.com",
        url_client(&hooks, "/v"),
        configmap_rules(&["CREATE"]),
    );
    hook["namespaceSelector"] = json!({"matchLabels": {"hooks": "on"}});
    hook["objectSelector"] =
        json!({"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]});
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "selective", hook),
    )
    .await;

    let in_off: Api<ConfigMap> = Api::namespaced(client.clone(), "off");
    in_off
        .create(&PostParams::default(), &config_map("x", &[]))
        .await
        .unwrap();
    let in_on: Api<ConfigMap> = Api::namespaced(client.clone(), "on");
    let mut skipped = config_map("skipped", &[]);
    skipped.metadata.labels = Some([("skip".to_owned(), "yes".to_owned())].into());
    in_on
        .create(&PostParams::default(), &skipped)
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "on");
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    in_on
        .patch(
            "skipped",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": "b"}})),
        )
        .await
        .unwrap();
    assert!(
        hooks.reviews().is_empty(),
        "no rule matched: {:?}",
        hooks.reviews()
    );

    in_on
        .create(&PostParams::default(), &config_map("y", &[]))
        .await
        .unwrap();
    let requests = hooks.requests_on("/v");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["name"], "y");
}

#[tokio::test]
async fn webhook_service_reference_calls_the_mapped_address() {
    let hooks = WebhookServer::start(deny_bad).await;
    let server = ApiServer::builder()
        .webhook_service("webhooks", "hooks", hooks.addr)
        .start()
        .await
        .unwrap();
    let service = json!({"service": {"namespace": "webhooks", "name": "hooks", "path": "/validate"}, "caBundle": hooks.ca_bundle()});
    let hook = webhook("svc.example.com", service, configmap_rules(&["CREATE"]));
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "svc", hook),
    )
    .await;
    let uri = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/svc";
    let stored = send_json_raw(&server, "GET", uri, Value::Null).await.json();
    let stored_hook = &stored["webhooks"][0];
    assert_eq!(
        stored_hook["clientConfig"]["service"]["port"], 443,
        "defaulted as the real server"
    );
    assert_eq!(stored_hook["failurePolicy"], "Fail");
    assert_eq!(stored_hook["matchPolicy"], "Equivalent");
    assert_eq!(stored_hook["timeoutSeconds"], 10);
    assert_eq!(stored_hook["rules"][0]["scope"], "*");

    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");
    let denied = status_of(
        api.create(&PostParams::default(), &config_map("b", &[("bad", "1")]))
            .await,
    );
    assert_eq!(denied.code, 403);
    assert_eq!(hooks.requests_on("/validate").len(), 1);

    let unmapped = json!({"service": {"namespace": "webhooks", "name": "nowhere", "path": "/v"}});
    let hook = webhook(
        "nowhere.example.com",
        unmapped,
        configmap_rules(&["CREATE"]),
    );
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "nowhere", hook),
    )
    .await;
    let failed = status_of(
        api.create(&PostParams::default(), &config_map("n", &[]))
            .await,
    );
    assert_status(&failed, 500, "InternalError", |m| {
        m == "Internal error occurred: failed calling webhook \"nowhere.example.com\": failed to call webhook: Post \"https://nowhere.webhooks.svc:443/v?timeout=10s\": service \"nowhere\" not found"
    });
}

#[tokio::test]
async fn webhook_configuration_missing_side_effects_is_refused_as_the_real_server() {
    let server = ApiServer::start().await.unwrap();
    let mut hook = webhook(
        "x.example.com",
        json!({"url": "https://127.0.0.1:1/"}),
        configmap_rules(&["CREATE"]),
    );
    hook.as_object_mut().unwrap().remove("sideEffects");
    let answer = send_json_raw(
        &server,
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        configuration("ValidatingWebhookConfiguration", "x", hook),
    )
    .await;
    assert_eq!(answer.code, 422);
    assert_eq!(
        answer.json()["message"],
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"x\" is invalid: webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"
    );
}

#[tokio::test]
async fn subresource_webhook_rules_match_status_and_scale_writes_only() {
    let hooks = WebhookServer::start(allow).await;
    let server = ApiServer::start().await.unwrap();
    crate::support::create_crd(&server, crate::support::structural_widget_crd()).await;
    let rules = json!([{"operations": ["*"], "apiGroups": ["example.com"], "apiVersions": ["*"],
        "resources": ["widgets/status", "widgets/scale"]}]);
    let hook = webhook("sub.example.com", url_client(&hooks, "/sub"), rules);
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "sub", hook),
    )
    .await;
    let widgets = crate::support::structural_widgets(&server);
    let spec = json!({"size": "small", "replicas": 1});
    widgets
        .create(
            &PostParams::default(),
            &crate::support::structural_widget("w", spec),
        )
        .await
        .unwrap();
    assert!(
        hooks.reviews().is_empty(),
        "a write of the object itself matches no subresource rule"
    );

    let status = Patch::Merge(json!({"status": {"replicas": 1}}));
    widgets
        .patch_status("w", &PatchParams::default(), &status)
        .await
        .unwrap();
    let scale = Patch::Merge(json!({"spec": {"replicas": 3}}));
    widgets
        .patch_scale("w", &PatchParams::default(), &scale)
        .await
        .unwrap();
    let requests = hooks.requests_on("/sub");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["subResource"], "status");
    assert_eq!(requests[0]["object"]["status"]["replicas"], 1);
    assert_eq!(requests[1]["subResource"], "scale");
    assert_eq!(
        requests[1]["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(requests[1]["object"]["spec"]["replicas"], 3);
    assert_eq!(requests[1]["oldObject"]["spec"]["replicas"], 1);
}

/// The binary, killed when dropped.
struct Binary(std::process::Child);

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn binary_webhook_service_flag_maps_a_service_to_a_local_address() {
    use std::io::BufRead;
    let hooks = WebhookServer::start(deny_bad).await;
    let mapping = format!("webhooks/hooks={}", hooks.addr);
    let mut binary = Binary(
        std::process::Command::new(env!("CARGO_BIN_EXE_reflector-testkit"))
            .args(["--webhook-service", &mapping])
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdout = std::io::BufReader::new(binary.0.stdout.take().unwrap());
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    let mut config = kube::Config::new(url.trim().parse().unwrap());
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();

    let service = json!({"service": {"namespace": "webhooks", "name": "hooks", "path": "/validate"},
        "caBundle": hooks.ca_bundle()});
    let hook = webhook("bin.example.com", service, configmap_rules(&["CREATE"]));
    let configurations: Api<kube::api::DynamicObject> = Api::all_with(
        client.clone(),
        &kube::api::ApiResource::erase::<
            k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration,
        >(&()),
    );
    let configuration: kube::api::DynamicObject =
        serde_json::from_value(configuration("ValidatingWebhookConfiguration", "bin", hook))
            .unwrap();
    configurations
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let denied = status_of(
        api.create(&PostParams::default(), &config_map("b", &[("bad", "1")]))
            .await,
    );
    assert_eq!(denied.code, 403, "{denied:?}");
    assert_eq!(hooks.requests_on("/validate").len(), 1);
}

/// Answers as a webhook built on kube's own types does (its patch is a byte array, not
/// Go's base64): adds the label `kube: yes`.
fn kube_defaulter(_path: &str, review: &Value) -> Value {
    use kube::core::DynamicObject;
    use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
    let review: AdmissionReview<DynamicObject> = serde_json::from_value(review.clone()).unwrap();
    let request: AdmissionRequest<DynamicObject> = review.try_into().unwrap();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/metadata/labels", "value": {"kube": "yes"}}
    ]))
    .unwrap();
    let response = AdmissionResponse::from(&request).with_patch(patch).unwrap();
    serde_json::to_value(response.into_review()).unwrap()
}

#[tokio::test]
async fn mutating_webhook_answering_with_kube_types_is_understood() {
    let hooks = WebhookServer::start(kube_defaulter).await;
    let server = ApiServer::start().await.unwrap();
    let hook = webhook(
        "kube.example.com",
        url_client(&hooks, "/m"),
        configmap_rules(&["CREATE"]),
    );
    store(
        &server,
        configuration("MutatingWebhookConfiguration", "kube", hook),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");
    let created = api
        .create(&PostParams::default(), &config_map("k", &[]))
        .await
        .unwrap();
    assert_eq!(created.metadata.labels.unwrap()["kube"], "yes");
}

/// `gadgets.example.com` serving `versions` (the first one stored) and converting between
/// them as `conversion` says.
fn gadget_crd(versions: &[&str], conversion: Value) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"name": v, "served": true, "storage": i == 0, "schema": schema}))
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": versions, "conversion": conversion}})
}

/// The conversion webhook of gadgets: `spec.size` in v1 is `spec.count` in v2.
fn gadget_converter(review: &Value) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].clone();
    let renamed = |object: &Value| {
        let mut object = object.clone();
        let to_v2 = desired == "example.com/v2";
        let (from, to) = if to_v2 {
            ("size", "count")
        } else {
            ("count", "size")
        };
        if let Some(value) = object["spec"].as_object_mut().and_then(|s| s.remove(from)) {
            object["spec"][to] = value;
        }
        object["apiVersion"] = desired.clone();
        object
    };
    let objects = request["objects"].as_array().unwrap();
    let converted: Vec<Value> = objects.iter().map(renamed).collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response":
        {"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": converted}})
}

/// Gadget webhooks: `/convert` converts, `/mutate` sets v1's `spec.size` to 9 (an
/// object in another version is left as it is), anything else allows.
fn gadget_hooks(path: &str, review: &Value) -> Value {
    match path {
        "/convert" => gadget_converter(review),
        "/mutate" if review["request"]["object"]["apiVersion"] == "example.com/v1" => {
            let patch = json!([{"op": "add", "path": "/spec/size", "value": 9}]);
            admission_answer(review, None, Some(patch), &[])
        }
        _ => admission_answer(review, None, None, &[]),
    }
}

/// A server serving gadgets in `versions`, converted by strategy `None` or by the
/// webhook of `hooks`.
async fn serve_gadgets(hooks: &WebhookServer, versions: &[&str], by_webhook: bool) -> ApiServer {
    let server = ApiServer::start().await.unwrap();
    let conversion = if by_webhook {
        json!({"strategy": "Webhook", "webhook": {"clientConfig": url_client(hooks, "/convert"),
            "conversionReviewVersions": ["v1"]}})
    } else {
        json!({"strategy": "None"})
    };
    crate::support::create_crd(&server, gadget_crd(versions, conversion)).await;
    server
}

/// Rules for gadget writes in `versions`.
fn gadget_rules(versions: &[&str]) -> Value {
    json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.com"],
        "apiVersions": versions, "resources": ["gadgets"]}])
}

/// Creates the gadget `name` in `version` with `spec`; returns the object answered.
async fn create_gadget(server: &ApiServer, version: &str, name: &str, spec: Value) -> Value {
    let uri = format!("/apis/example.com/{version}/namespaces/default/gadgets");
    let gadget = json!({"apiVersion": format!("example.com/{version}"), "kind": "Gadget",
        "metadata": {"name": name}, "spec": spec});
    let (code, created) = crate::support::send_json(server, "POST", &uri, gadget).await;
    assert_eq!(code, 201, "{created}");
    created
}

fn gvk(version: &str) -> Value {
    json!({"group": "example.com", "version": version, "kind": "Gadget"})
}

fn gvr(version: &str) -> Value {
    json!({"group": "example.com", "version": version, "resource": "gadgets"})
}

/// A server serving gadgets in v1 and v2 (converted by webhook or not) with the
/// validating webhook `v1.example.com`, on `/v`, for v1 writes under `match_policy`,
/// after the gadget `g` (`size` 3) was created in v2.
async fn v2_write_with_v1_validator(
    by_webhook: bool,
    match_policy: &str,
) -> (WebhookServer, ApiServer) {
    let hooks = WebhookServer::start(gadget_hooks).await;
    let server = serve_gadgets(&hooks, &["v1", "v2"], by_webhook).await;
    let client = url_client(&hooks, "/v");
    let mut hook = webhook("v1.example.com", client, gadget_rules(&["v1"]));
    hook["matchPolicy"] = json!(match_policy);
    store(
        &server,
        configuration("ValidatingWebhookConfiguration", "v1", hook),
    )
    .await;
    // v2 calls v1's `size` `count` when converted by webhook.
    let spec = if by_webhook {
        json!({"count": 3})
    } else {
        json!({"size": 3})
    };
    create_gadget(&server, "v2", "g", spec).await;
    (hooks, server)
}

#[tokio::test]
async fn equivalent_webhook_for_v1_is_sent_a_v2_write_in_v1() {
    for by_webhook in [false, true] {
        let (hooks, _server) = v2_write_with_v1_validator(by_webhook, "Equivalent").await;
        let requests = hooks.requests_on("/v");
        assert_eq!(requests.len(), 1, "by webhook: {by_webhook}");
        let request = &requests[0];
        assert_eq!(request["kind"], gvk("v1"));
        assert_eq!(request["resource"], gvr("v1"));
        assert_eq!(request["requestKind"], gvk("v2"));
        assert_eq!(request["requestResource"], gvr("v2"));
        assert_eq!(request["object"]["apiVersion"], "example.com/v1");
        assert_eq!(request["object"]["spec"], json!({"size": 3}));
    }
}

#[tokio::test]
async fn exact_match_policy_webhook_is_not_called_for_another_version() {
    for by_webhook in [false, true] {
        let (hooks, server) = v2_write_with_v1_validator(by_webhook, "Exact").await;
        assert!(
            hooks.requests_on("/v").is_empty(),
            "by webhook: {by_webhook}"
        );
        create_gadget(&server, "v1", "in-v1", json!({"size": 3})).await;
        let requests = hooks.requests_on("/v");
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0]["requestKind"], gvk("v1"));
    }
}

#[tokio::test]
async fn mutating_webhook_for_v1_patches_a_v2_write() {
    for by_webhook in [false, true] {
        let hooks = WebhookServer::start(gadget_hooks).await;
        let server = serve_gadgets(&hooks, &["v1", "v2"], by_webhook).await;
        let client = url_client(&hooks, "/mutate");
        let hook = webhook("m.example.com", client, gadget_rules(&["v1"]));
        let stored = configuration("MutatingWebhookConfiguration", "m", hook);
        store(&server, stored).await;

        let field = if by_webhook { "count" } else { "size" };
        let created = create_gadget(&server, "v2", "g", json!({field: 3})).await;
        assert_eq!(created["apiVersion"], "example.com/v2");
        assert_eq!(
            created["spec"],
            json!({field: 9}),
            "by webhook: {by_webhook}"
        );
        let uri = "/apis/example.com/v2/namespaces/default/gadgets/g";
        let (code, read) = crate::support::send_json(&server, "GET", uri, Value::Null).await;
        assert_eq!(code, 200, "{read}");
        assert_eq!(read["apiVersion"], "example.com/v2");
        assert_eq!(read["spec"], json!({field: 9}));
        let requests = hooks.requests_on("/mutate");
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0]["requestKind"], gvk("v2"));
        assert_eq!(requests[0]["kind"], gvk("v1"));
    }
}

#[tokio::test]
async fn equivalent_webhook_prefers_the_exact_version_then_rule_order_then_crd_order() {
    let hooks = WebhookServer::start(gadget_hooks).await;
    let server = serve_gadgets(&hooks, &["v1", "v2", "v3"], false).await;
    let hooks_for = [
        ("exact", gadget_rules(&["v3", "v2"])),
        ("crd-order", gadget_rules(&["v3", "v1"])),
        (
            "rule-order",
            json!([gadget_rules(&["v3"])[0], gadget_rules(&["v1"])[0]]),
        ),
    ];
    for (name, rules) in hooks_for {
        let hook = webhook(
            &format!("{name}.example.com"),
            url_client(&hooks, &format!("/{name}")),
            rules,
        );
        store(
            &server,
            configuration("ValidatingWebhookConfiguration", name, hook),
        )
        .await;
    }
    create_gadget(&server, "v2", "g", json!({"size": 1})).await;
    let sent = |name: &str| {
        let requests = hooks.requests_on(&format!("/{name}"));
        assert_eq!(requests.len(), 1, "{name}");
        (
            requests[0]["kind"]["version"].clone(),
            requests[0]["object"]["apiVersion"].clone(),
        )
    };
    assert_eq!(sent("exact"), (json!("v2"), json!("example.com/v2")));
    assert_eq!(sent("crd-order"), (json!("v1"), json!("example.com/v1")));
    assert_eq!(sent("rule-order"), (json!("v3"), json!("example.com/v3")));
}

/// `/a` notes in an annotation whether it saw the label `b`; `/b` sets that label.
fn a_then_b(path: &str, review: &Value) -> Value {
    let object = &review["request"]["object"];
    let patch = match path {
        "/a" if object["metadata"]["labels"]["b"] == "yes" => {
            json!([{"op": "add", "path": "/metadata/annotations", "value": {"a-saw-b": "yes"}}])
        }
        "/b" => json!([{"op": "add", "path": "/metadata/labels", "value": {"b": "yes"}}]),
        _ => return admission_answer(review, None, None, &[]),
    };
    admission_answer(review, None, Some(patch), &[])
}

#[tokio::test]
async fn reinvocation_if_needed_webhook_is_called_again_after_a_later_change() {
    // The policies of `a` and `b`, and how often each is called: `a` again after `b`'s
    // change; `b` never again for its own change, but again when `a` changed the object
    // while reinvoked (the real server's second round calls every `IfNeeded` webhook
    // called since the last change).
    let cases = [
        (["IfNeeded", "Never"], [2, 1]),
        (["Never", "Never"], [1, 1]),
        (["Never", "IfNeeded"], [1, 1]),
        (["IfNeeded", "IfNeeded"], [2, 2]),
    ];
    for (policies, calls) in cases {
        let hooks = WebhookServer::start(a_then_b).await;
        let server = ApiServer::start().await.unwrap();
        for (name, policy) in ["a", "b"].into_iter().zip(policies) {
            let client = url_client(&hooks, &format!("/{name}"));
            let rules = configmap_rules(&["CREATE"]);
            let mut hook = webhook(&format!("{name}.example.com"), client, rules);
            hook["reinvocationPolicy"] = json!(policy);
            let stored = configuration("MutatingWebhookConfiguration", name, hook);
            store(&server, stored).await;
        }
        let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
        let created = api
            .create(&PostParams::default(), &config_map("c", &[]))
            .await
            .unwrap();
        let called = [hooks.requests_on("/a").len(), hooks.requests_on("/b").len()];
        assert_eq!(called, calls, "{policies:?}");
        let annotations = created.metadata.annotations.unwrap_or_default();
        assert_eq!(annotations.contains_key("a-saw-b"), calls[0] == 2);
        assert_eq!(created.metadata.labels.unwrap()["b"], "yes");
    }
}

/// A validating webhook `NAME.example.com` on `/NAME` for ConfigMap creates, with
/// `conditions` and `failure_policy`.
fn conditional(
    hooks: &WebhookServer,
    name: &str,
    conditions: Value,
    failure_policy: &str,
) -> Value {
    let client = url_client(hooks, &format!("/{name}"));
    let mut hook = webhook(
        &format!("{name}.example.com"),
        client,
        configmap_rules(&["CREATE"]),
    );
    hook["matchConditions"] = conditions;
    hook["failurePolicy"] = json!(failure_policy);
    configuration("ValidatingWebhookConfiguration", name, hook)
}

#[tokio::test]
async fn webhook_match_conditions_decide_the_call_and_errors_follow_the_failure_policy() {
    let hooks = WebhookServer::start(allow).await;
    let server = ApiServer::start().await.unwrap();
    let labelled = json!([
        {"name": "configmaps", "expression": "request.resource.resource == 'configmaps' && oldObject == null"},
        {"name": "checked", "expression": "has(object.metadata.labels) && object.metadata.labels['check'] == 'yes'"},
    ]);
    store(&server, conditional(&hooks, "labelled", labelled, "Fail")).await;
    let failing = json!([{"name": "broken", "expression": "object.data.missing == 'x'"}]);
    store(
        &server,
        conditional(&hooks, "ignored", failing.clone(), "Ignore"),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(server.client_without_retries(), "default");

    let mut checked = config_map("checked", &[("other", "y")]);
    checked.metadata.labels = Some([("check".to_owned(), "yes".to_owned())].into());
    api.create(&PostParams::default(), &checked).await.unwrap();
    api.create(
        &PostParams::default(),
        &config_map("plain", &[("other", "y")]),
    )
    .await
    .unwrap();
    let called = hooks.requests_on("/labelled");
    assert_eq!(called.len(), 1, "only the labelled ConfigMap matches");
    assert_eq!(called[0]["name"], "checked");
    assert!(
        hooks.requests_on("/ignored").is_empty(),
        "a condition that fails to evaluate under Ignore skips the webhook"
    );

    store(&server, conditional(&hooks, "failed", failing, "Fail")).await;
    let refused = status_of(
        api.create(
            &PostParams::default(),
            &config_map("refused", &[("other", "y")]),
        )
        .await,
    );
    assert_status(&refused, 403, "Forbidden", |m| {
        m.starts_with("configmaps \"refused\" is forbidden: expression 'object.data.missing == 'x'' resulted in error: ")
    });
    assert!(hooks.requests_on("/failed").is_empty());
    assert!(
        server
            .get::<ConfigMap>(Some("default"), "refused")
            .unwrap()
            .is_none()
    );
}
