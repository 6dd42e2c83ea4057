//! The webhook server over HTTPS, called as the API server calls it: AdmissionReviews
//! for a defaulting and a validating hook, ConversionReviews through a hub, and bad
//! input. Each request is a POST on a new TLS connection that trusts only the
//! server's CA and checks the Service's DNS name.

use std::sync::{Mutex, mpsc};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kube::CustomResource;
use reflector_core::webhooks::{
    AdmissionContext, Convertible, Defaulter, Denial, Validator, WebhookError, WebhookServer,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::patience::PATIENCE;
use crate::support::webhook_client::WebhookClient;

/// A kind with every admission hook.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    /// Written as `null` when unset: the patch must still apply to an object
    /// that has no `replicas`.
    replicas: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    color: Option<String>,
    #[serde(default)]
    protected: bool,
}

impl Defaulter for Widget {
    fn set_defaults(&mut self, ctx: &AdmissionContext) {
        self.spec.replicas.get_or_insert(1);
        let namespace = ctx.namespace.clone().unwrap_or_default();
        self.spec.color.get_or_insert(format!("{namespace}-blue"));
    }
}

/// The hook called for the object named `slow` signals the first sender and waits
/// on the receiver: a request held in flight.
static SLOW: Mutex<Option<(mpsc::Sender<()>, mpsc::Receiver<()>)>> = Mutex::new(None);

impl Validator for Widget {
    const VALIDATES_DELETE: bool = true;

    fn validate_create(&self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
        if ctx.name == "slow" {
            let (entered, release) = SLOW
                .lock()
                .unwrap()
                .take()
                .expect("a slow request expected");
            entered.send(()).unwrap();
            release.recv().unwrap();
        }
        let mut warnings = Vec::new();
        match self.spec.replicas {
            Some(0) => return Err(Denial::new("replicas must be at least 1").code(422)),
            Some(n) if n > 10 => warnings.push(format!("{n} replicas is a lot")),
            _ => {}
        }
        if ctx.dry_run {
            warnings.push(format!(
                "dry run by {}",
                ctx.user_info.username.clone().unwrap_or_default()
            ));
        }
        Ok(warnings)
    }

    fn validate_update(&self, old: &Self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
        if self.spec.replicas < old.spec.replicas {
            return Err("replicas may only grow".into());
        }
        self.validate_create(ctx)
    }

    fn validate_delete(&self, _: &AdmissionContext) -> Result<Vec<String>, Denial> {
        if self.spec.protected {
            return Err(Denial::new(format!(
                "{} is protected",
                self.metadata.name.clone().unwrap_or_default()
            )));
        }
        Ok(Vec::new())
    }
}

mod v1 {
    use super::*;
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v1", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        pub size: String,
    }
}

mod v2 {
    use super::*;
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v2", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        pub size_mb: u64,
    }
}

impl Convertible for v1::Gadget {
    type Hub = v2::Gadget;

    fn to_hub(self) -> Result<v2::Gadget, Denial> {
        let size_mb = self
            .spec
            .size
            .strip_suffix("Mi")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| Denial::new(format!("size {:?} is not in Mi", self.spec.size)))?;
        let mut metadata = self.metadata;
        // A conversion may set labels and annotations; the rest of its metadata is
        // not kept.
        metadata
            .labels
            .get_or_insert_default()
            .insert("converted-from".into(), "v1".into());
        metadata.name = Some("renamed".into());
        Ok(v2::Gadget {
            metadata,
            spec: v2::GadgetSpec { size_mb },
        })
    }

    fn from_hub(hub: v2::Gadget) -> Result<Self, Denial> {
        Ok(v1::Gadget {
            metadata: hub.metadata,
            spec: v1::GadgetSpec {
                size: format!("{}Mi", hub.spec.size_mb),
            },
        })
    }
}

const MUTATE: &str = "/mutate/example.com/v1/widgets";
const VALIDATE: &str = "/validate/example.com/v1/widgets";
const CONVERT: &str = "/convert/example.com/gadgets";

/// A running server with every hook above, and a client of it.
struct Running {
    client: WebhookClient,
    stop: CancellationToken,
    task: JoinHandle<Result<(), WebhookError>>,
}

impl Running {
    async fn start() -> Self {
        let mut server = WebhookServer::new("widget-webhooks")
            .namespace("widgets")
            .bind("127.0.0.1:0".parse().unwrap())
            .unwrap();
        server.defaulting::<Widget>().validating::<Widget>();
        server.conversion::<v2::Gadget>().spoke::<v1::Gadget>();
        let addr = server.local_addr().unwrap();
        let mut ca = server.ca_bundle();
        let stop = CancellationToken::new();
        let task = tokio::spawn(server.run(stop.clone()));
        let pem = tokio::time::timeout(PATIENCE, ca.wait_for(Option::is_some))
            .await
            .expect("the server made its CA")
            .unwrap()
            .clone()
            .unwrap();
        Running {
            client: WebhookClient::new(addr, "widget-webhooks.widgets.svc", &pem),
            stop,
            task,
        }
    }

    async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap().unwrap();
    }
}

fn admission(uid: &str, operation: &str, object: Value, old: Value, dry_run: bool) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
            "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
            "name": "w1",
            "namespace": "widgets",
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": old,
            "dryRun": dry_run,
        }
    })
}

fn widget(spec: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "widgets", "labels": {"app": "a"}},
        "spec": spec,
    })
}

fn answer_of(review: &Value) -> &Value {
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1", "{review}");
    assert_eq!(review["kind"], "AdmissionReview", "{review}");
    &review["response"]
}

#[tokio::test]
async fn defaulting_patch_applied_to_the_input_gives_the_defaulted_object() {
    let running = Running::start().await;
    // `extra` is a field the type does not know: the patch must leave it.
    let sent = widget(json!({"extra": "kept", "protected": false}));
    let reply = running
        .client
        .review(
            MUTATE,
            &admission("uid-1", "CREATE", sent.clone(), Value::Null, false),
        )
        .await;
    assert_eq!(reply.status, 200);
    let review = reply.json();
    let response = answer_of(&review);
    assert_eq!(response["uid"], "uid-1");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let patch = STANDARD
        .decode(response["patch"].as_str().expect("a base64 patch"))
        .unwrap();
    let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
    let mut defaulted = sent.clone();
    json_patch::patch(&mut defaulted, &patch).unwrap();
    let expected = widget(json!({
        "extra": "kept", "protected": false, "replicas": 1, "color": "widgets-blue"
    }));
    assert_eq!(defaulted, expected);

    // Nothing to default: no patch at all.
    let reply = running
        .client
        .review(
            MUTATE,
            &admission("uid-2", "UPDATE", expected.clone(), expected, false),
        )
        .await;
    let review = reply.json();
    let response = answer_of(&review);
    assert_eq!(
        (&response["uid"], &response["allowed"]),
        (&json!("uid-2"), &json!(true))
    );
    assert!(response.get("patch").is_none(), "{response}");
    assert!(response.get("patchType").is_none(), "{response}");
    running.stop().await;
}

#[tokio::test]
async fn a_denial_has_its_status_code_and_message_and_the_uid_echoed() {
    let running = Running::start().await;
    let create = admission(
        "uid-3",
        "CREATE",
        widget(json!({"replicas": 0})),
        Value::Null,
        false,
    );
    let review = running.client.review(VALIDATE, &create).await.json();
    let response = answer_of(&review);
    assert_eq!(response["uid"], "uid-3");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 422);
    assert_eq!(response["status"]["message"], "replicas must be at least 1");
    assert_eq!(response["status"]["reason"], "Invalid");
    assert_eq!(response["status"]["status"], "Failure");

    // An update sees the old object; `.into()` denies with 403.
    let update = admission(
        "uid-4",
        "UPDATE",
        widget(json!({"replicas": 2})),
        widget(json!({"replicas": 3})),
        false,
    );
    let review = running.client.review(VALIDATE, &update).await.json();
    let response = answer_of(&review);
    assert_eq!(
        (&response["uid"], &response["allowed"]),
        (&json!("uid-4"), &json!(false))
    );
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(response["status"]["reason"], "Forbidden");
    assert_eq!(response["status"]["message"], "replicas may only grow");

    // A delete reaches `validate_delete` with the stored object.
    let delete = admission(
        "uid-5",
        "DELETE",
        Value::Null,
        widget(json!({"protected": true})),
        false,
    );
    let review = running.client.review(VALIDATE, &delete).await.json();
    let response = answer_of(&review);
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["message"], "w1 is protected");
    let delete = admission("uid-6", "DELETE", Value::Null, widget(json!({})), false);
    let review = running.client.review(VALIDATE, &delete).await.json();
    assert_eq!(answer_of(&review)["allowed"], true);
    running.stop().await;
}

#[tokio::test]
async fn warnings_are_passed_on_and_the_hook_sees_the_dry_run() {
    let running = Running::start().await;
    let create = admission(
        "uid-7",
        "CREATE",
        widget(json!({"replicas": 12})),
        Value::Null,
        false,
    );
    let review = running.client.review(VALIDATE, &create).await.json();
    let response = answer_of(&review);
    assert_eq!(response["allowed"], true);
    assert_eq!(response["warnings"], json!(["12 replicas is a lot"]));

    let dry = admission(
        "uid-8",
        "CREATE",
        widget(json!({"replicas": 12})),
        Value::Null,
        true,
    );
    let review = running.client.review(VALIDATE, &dry).await.json();
    let response = answer_of(&review);
    assert_eq!(response["uid"], "uid-8");
    assert_eq!(
        response["warnings"],
        json!(["12 replicas is a lot", "dry run by alice"])
    );

    let quiet = admission(
        "uid-9",
        "CREATE",
        widget(json!({"replicas": 2})),
        Value::Null,
        false,
    );
    let review = running.client.review(VALIDATE, &quiet).await.json();
    assert!(answer_of(&review).get("warnings").is_none(), "{review}");
    running.stop().await;
}

#[tokio::test]
async fn bad_input_gets_a_clear_answer() {
    let running = Running::start().await;
    let post = |path: &'static str, body: Vec<u8>| {
        let client = running.client.clone();
        async move { client.post(path, &body).await.expect("an answer") }
    };
    // Not JSON, or no request: 400 with a message.
    let reply = post(MUTATE, b"{not json".to_vec()).await;
    assert_eq!(reply.status, 400);
    assert!(
        String::from_utf8_lossy(&reply.body).contains("not JSON"),
        "{reply:?}"
    );
    let no_request = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
    let reply = post(VALIDATE, serde_json::to_vec(&no_request).unwrap()).await;
    assert_eq!(reply.status, 400);
    assert!(
        String::from_utf8_lossy(&reply.body).contains("no request"),
        "{reply:?}"
    );
    let reply = post(CONVERT, serde_json::to_vec(&no_request).unwrap()).await;
    assert_eq!(
        reply.status, 400,
        "an AdmissionReview is not a ConversionReview"
    );

    // A review of another kind, or an object that is not a Widget: refused, 400.
    let mut other = admission("uid-10", "CREATE", widget(json!({})), Value::Null, false);
    other["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "ConfigMap"});
    let review = running.client.review(MUTATE, &other).await.json();
    let response = answer_of(&review);
    assert_eq!(
        (&response["uid"], &response["allowed"]),
        (&json!("uid-10"), &json!(false))
    );
    assert_eq!(response["status"]["code"], 400);
    assert_eq!(
        response["status"]["message"],
        "this webhook admits example.com/v1 Widget, not v1 ConfigMap"
    );
    let bad = admission(
        "uid-11",
        "CREATE",
        widget(json!({"replicas": "many"})),
        Value::Null,
        false,
    );
    let review = running.client.review(VALIDATE, &bad).await.json();
    let response = answer_of(&review);
    assert_eq!(
        (&response["uid"], &response["allowed"]),
        (&json!("uid-11"), &json!(false))
    );
    assert_eq!(response["status"]["code"], 400);
    let message = response["status"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("the object is not a valid Widget: "),
        "{message}"
    );
    let missing = admission("uid-12", "CREATE", Value::Null, Value::Null, false);
    let review = running.client.review(VALIDATE, &missing).await.json();
    assert_eq!(answer_of(&review)["status"]["code"], 400);

    // The server answered all of it and still serves.
    let fine = admission("uid-13", "CREATE", widget(json!({})), Value::Null, false);
    assert_eq!(
        answer_of(&running.client.review(VALIDATE, &fine).await.json())["allowed"],
        true
    );
    running.stop().await;
}

fn gadget(version: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("example.com/{version}"),
        "kind": "Gadget",
        "metadata": {
            "name": name, "namespace": "widgets", "uid": format!("uid-{name}"),
            "resourceVersion": "42", "generation": 3, "labels": {"app": "g"}
        },
        "spec": spec,
    })
}

fn conversion(uid: &str, desired: &str, objects: Vec<Value>) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    })
}

#[tokio::test]
async fn a_conversion_review_converts_every_object_and_keeps_metadata() {
    let running = Running::start().await;
    let objects = vec![
        gadget("v1", "a", json!({"size": "64Mi"})),
        gadget("v1", "b", json!({"size": "128Mi"})),
        gadget("v2", "c", json!({"size_mb": 1})),
    ];
    let review = running
        .client
        .review(CONVERT, &conversion("c-1", "example.com/v2", objects))
        .await
        .json();
    assert_eq!(
        (&review["apiVersion"], &review["kind"]),
        (
            &json!("apiextensions.k8s.io/v1"),
            &json!("ConversionReview")
        )
    );
    let response = &review["response"];
    assert_eq!(response["uid"], "c-1");
    assert_eq!(response["result"]["status"], "Success", "{response}");
    let converted = response["convertedObjects"].as_array().unwrap();
    let mut a = gadget("v2", "a", json!({"size_mb": 64}));
    // The label the conversion set is kept; its renaming is not.
    a["metadata"]["labels"]["converted-from"] = json!("v1");
    let mut b = gadget("v2", "b", json!({"size_mb": 128}));
    b["metadata"]["labels"]["converted-from"] = json!("v1");
    assert_eq!(converted, &[a, b, gadget("v2", "c", json!({"size_mb": 1}))]);

    // And down: v2 to v1.
    let review = running
        .client
        .review(
            CONVERT,
            &conversion(
                "c-2",
                "example.com/v1",
                vec![gadget("v2", "d", json!({"size_mb": 5}))],
            ),
        )
        .await
        .json();
    assert_eq!(
        review["response"]["convertedObjects"],
        json!([gadget("v1", "d", json!({"size": "5Mi"}))])
    );
    running.stop().await;
}

#[tokio::test]
async fn a_conversion_review_fails_whole_when_one_object_fails() {
    let running = Running::start().await;
    let objects = vec![
        gadget("v1", "a", json!({"size": "64Mi"})),
        gadget("v1", "b", json!({"size": "lots"})),
    ];
    let review = running
        .client
        .review(CONVERT, &conversion("c-3", "example.com/v2", objects))
        .await
        .json();
    let response = &review["response"];
    assert_eq!(response["uid"], "c-3");
    assert_eq!(response["result"]["status"], "Failure");
    assert_eq!(
        response["result"]["message"],
        "object 1 (widgets/b): size \"lots\" is not in Mi"
    );
    assert_eq!(response["convertedObjects"], json!([]));

    // A version the webhook does not know fails the review too.
    let review = running
        .client
        .review(
            CONVERT,
            &conversion(
                "c-4",
                "example.com/v9",
                vec![gadget("v1", "a", json!({"size": "1Mi"}))],
            ),
        )
        .await
        .json();
    assert_eq!(review["response"]["result"]["status"], "Failure");
    let message = review["response"]["result"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("cannot convert to example.com/v9"),
        "{message}"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn stopping_answers_the_request_in_flight_then_refuses_connections() {
    let running = Running::start().await;
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    *SLOW.lock().unwrap() = Some((entered_tx, release_rx));
    let client = running.client.clone();
    let mut slow = widget(json!({}));
    slow["metadata"]["name"] = json!("slow");
    let mut review = admission("uid-14", "CREATE", slow, Value::Null, false);
    review["request"]["name"] = json!("slow");
    let in_flight = tokio::spawn(async move { client.review(VALIDATE, &review).await });
    tokio::task::spawn_blocking(move || entered.recv().unwrap())
        .await
        .unwrap();

    // Told to stop while the hook runs: no new connection is accepted...
    let Running { client, stop, task } = running;
    stop.cancel();
    tokio::time::timeout(PATIENCE, async { while client.connect().await.is_ok() {} })
        .await
        .expect("the server still accepts connections");
    assert!(
        !task.is_finished(),
        "the server returned with a request in flight"
    );
    // ... and the request in flight is answered.
    release.send(()).unwrap();
    let reply = tokio::time::timeout(PATIENCE, in_flight)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(answer_of(&reply.json())["uid"], "uid-14");
    tokio::time::timeout(PATIENCE, task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
