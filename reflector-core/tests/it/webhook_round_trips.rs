//! Round trips client → API server → webhook → stored object: a client writes to the
//! embedded API server, which calls this crate's webhook server over HTTPS as a
//! cluster's would (its Service mapped to the server's local address), through the
//! webhook configurations and the converted CRD that the manager's manifests make,
//! trusting only the CA the caBundle keeper wrote into them. These run on the real
//! clock (TLS over real sockets); every wait is on a watch or a channel.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use reflector_core::manager::{DeployOptions, Manager};
use reflector_core::webhooks::{
    AdmissionContext, Certificates, Defaulter, Denial, Validator, WebhookServer,
};
use reflector_testkit::ApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::certificate_files;
use crate::support::gadgets::{v1, v2};
use crate::support::patience::PATIENCE;
use crate::support::wait_object::wait_object;
use crate::support::webhook_client::WebhookClient;

const SERVICE: &str = "widget-webhooks";
const NS: &str = "default";

/// Defaulted (`size`), validated on create, update and delete.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    size: Option<String>,
    replicas: u32,
}

impl Defaulter for Widget {
    fn set_defaults(&mut self, _: &AdmissionContext) {
        self.spec.size.get_or_insert_with(|| "small".to_owned());
    }
}

impl Validator for Widget {
    const VALIDATES_DELETE: bool = true;

    fn validate_create(&self, _: &AdmissionContext) -> Result<Vec<String>, Denial> {
        match self.spec.size.as_deref() {
            Some("small" | "large") => Ok(Vec::new()),
            other => Err(Denial::new(format!("size {other:?} is not small or large"))),
        }
    }

    fn validate_update(&self, old: &Self, ctx: &AdmissionContext) -> Result<Vec<String>, Denial> {
        if self.spec.replicas < old.spec.replicas {
            let (from, to) = (old.spec.replicas, self.spec.replicas);
            return Err(Denial::new(format!("replicas may not shrink ({from} to {to})")).code(422));
        }
        self.validate_create(ctx)
    }

    fn validate_delete(&self, _: &AdmissionContext) -> Result<Vec<String>, Denial> {
        match self.labels().get("protected").map(String::as_str) {
            Some("true") => Err(Denial::new(format!("{} is protected", self.name_any()))),
            _ => Ok(Vec::new()),
        }
    }
}

/// The API server, the manager serving the webhooks, and what the tests need of them.
struct Cluster {
    client: kube::Client,
    /// The webhook server's address, for a client of its own.
    addr: std::net::SocketAddr,
    /// The CA the webhook server's certificate chains to.
    ca: watch::Receiver<Option<std::sync::Arc<str>>>,
    stop: CancellationToken,
    running: JoinHandle<Result<(), reflector_core::manager::ManagerError>>,
    /// Kept for the lifetime of the test.
    _api_server: ApiServer,
}

impl Cluster {
    /// Starts the webhook server with `certificates` under a manager, the API server
    /// told where its Service is, and installs what the manifests deploy: Widget's
    /// CRD, the converted Gadget CRD, both webhook configurations (without a CA).
    /// Returns once the keeper has written the CA into all three.
    async fn start(certificates: Certificates) -> Cluster {
        let server = WebhookServer::new(SERVICE)
            .namespace(NS)
            .certificates(certificates)
            .bind("127.0.0.1:0".parse().unwrap())
            .unwrap();
        let addr = server.local_addr().unwrap();
        let api_server = ApiServer::builder()
            .webhook_service(NS, SERVICE, addr)
            .start()
            .await
            .unwrap();
        let client = api_server.client();
        let mut server = server.keep_ca_bundle(client.clone());
        server.defaulting::<Widget>().validating::<Widget>();
        server.conversion::<v2::Gadget>().spoke::<v1::Gadget>();
        let mut ca = server.ca_bundle();

        let stop = CancellationToken::new();
        let mut manager =
            Manager::new(client.clone()).graceful_shutdown_on(stop.clone().cancelled_owned());
        manager.add_webhooks(server);
        let manifests = manager.manifests(&DeployOptions::new("widget-operator", "unused"));
        let crds = Api::<CustomResourceDefinition>::all(client.clone());
        let pp = PostParams::default();
        crds.create(&pp, &Widget::crd()).await.unwrap();
        assert_eq!(manifests.custom_resource_definitions.len(), 1);
        for crd in &manifests.custom_resource_definitions {
            crds.create(&pp, crd).await.unwrap();
        }
        let validating = manifests.validating_webhook_configuration.unwrap();
        let mutating = manifests.mutating_webhook_configuration.unwrap();
        Api::all(client.clone())
            .create(&pp, &validating)
            .await
            .unwrap();
        Api::all(client.clone())
            .create(&pp, &mutating)
            .await
            .unwrap();
        let running = tokio::spawn(manager.run());

        let pem = tokio::time::timeout(PATIENCE, ca.wait_for(Option::is_some))
            .await
            .expect("no CA")
            .unwrap()
            .clone()
            .unwrap();
        let cluster = Cluster {
            client,
            addr,
            ca,
            stop,
            running,
            _api_server: api_server,
        };
        cluster.wait_ca_bundles(&pem).await;
        cluster
    }

    /// Waits until the keeper has written `pem` as the caBundle of both webhook
    /// configurations and of the Gadget CRD's conversion webhook.
    async fn wait_ca_bundles(&self, pem: &str) {
        let is = |b: Option<&ByteString>| b.is_some_and(|b| b.0 == pem.as_bytes());
        let validating = Api::<ValidatingWebhookConfiguration>::all(self.client.clone());
        wait_object(&validating, SERVICE, "validating caBundle", |c| {
            c.webhooks
                .iter()
                .flatten()
                .all(|w| is(w.client_config.ca_bundle.as_ref()))
        })
        .await;
        let mutating = Api::<MutatingWebhookConfiguration>::all(self.client.clone());
        wait_object(&mutating, SERVICE, "mutating caBundle", |c| {
            c.webhooks
                .iter()
                .flatten()
                .all(|w| is(w.client_config.ca_bundle.as_ref()))
        })
        .await;
        let crds = Api::<CustomResourceDefinition>::all(self.client.clone());
        wait_object(&crds, "gadgets.example.com", "conversion caBundle", |crd| {
            let webhook = crd
                .spec
                .conversion
                .as_ref()
                .and_then(|c| c.webhook.as_ref());
            let config = webhook.and_then(|w| w.client_config.as_ref());
            is(config.and_then(|c| c.ca_bundle.as_ref()))
        })
        .await;
    }

    fn widgets(&self) -> Api<Widget> {
        Api::namespaced(self.client.clone(), NS)
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(PATIENCE, self.running)
            .await
            .expect("the manager did not stop")
            .unwrap()
            .unwrap();
    }
}

fn widget(name: &str, size: Option<&str>, replicas: u32) -> Widget {
    let size = size.map(str::to_owned);
    Widget::new(name, WidgetSpec { size, replicas })
}

/// The API error of `result`, which must be one.
fn api_error<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(e)) => e,
        other => panic!("expected an API error, got {other:?}"),
    }
}

const DENIED_BY: &str = "admission webhook \"validate.v1.widgets.example.com\" denied the request";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_defaults_are_stored_and_denials_reach_the_client_as_the_api_servers() {
    let cluster = Cluster::start(Certificates::self_signed()).await;
    let widgets = cluster.widgets();
    let pp = PostParams::default();

    let created = widgets.create(&pp, &widget("a", None, 2)).await.unwrap();
    assert_eq!(created.spec.size.as_deref(), Some("small"));
    let stored = widgets.get("a").await.unwrap();
    assert_eq!(
        stored.spec.size.as_deref(),
        Some("small"),
        "the default is stored"
    );

    let denied = api_error(widgets.create(&pp, &widget("b", Some("huge"), 1)).await);
    assert_eq!(denied.code, 403);
    assert_eq!(
        denied.message,
        format!("{DENIED_BY}: size Some(\"huge\") is not small or large")
    );
    assert_eq!(
        api_error(widgets.get("b").await).code,
        404,
        "a denied create stored nothing"
    );

    // A dry run calls the hooks (a denial, a default) and stores nothing.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let denied = api_error(widgets.create(&dry, &widget("c", Some("huge"), 1)).await);
    assert_eq!(denied.code, 403, "{denied:?}");
    let answered = widgets.create(&dry, &widget("c", None, 1)).await.unwrap();
    assert_eq!(answered.spec.size.as_deref(), Some("small"));
    assert_eq!(
        api_error(widgets.get("c").await).code,
        404,
        "a dry run stored nothing"
    );
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_validator_of_updates_and_deletes_sees_the_old_object() {
    let cluster = Cluster::start(Certificates::self_signed()).await;
    let widgets = cluster.widgets();
    let mut protected = widget("a", Some("large"), 3);
    protected
        .labels_mut()
        .insert("protected".into(), "true".into());
    widgets
        .create(&PostParams::default(), &protected)
        .await
        .unwrap();

    let pp = PatchParams::default();
    let shrink = json!({"spec": {"replicas": 2}});
    let denied = api_error(widgets.patch("a", &pp, &Patch::Merge(&shrink)).await);
    assert_eq!(denied.code, 422);
    assert_eq!(
        denied.message,
        format!("{DENIED_BY}: replicas may not shrink (3 to 2)")
    );
    let grow = json!({"spec": {"replicas": 4}});
    let grown = widgets.patch("a", &pp, &Patch::Merge(&grow)).await.unwrap();
    assert_eq!(grown.spec.replicas, 4);

    // A DELETE's review carries the stored object as the old one.
    let denied = api_error(widgets.delete("a", &DeleteParams::default()).await);
    assert_eq!(denied.message, format!("{DENIED_BY}: a is protected"));
    assert_eq!(
        widgets.get("a").await.unwrap().spec.replicas,
        4,
        "still there"
    );
    let unprotect = json!({"metadata": {"labels": {"protected": null}}});
    widgets
        .patch("a", &pp, &Patch::Merge(&unprotect))
        .await
        .unwrap();
    widgets.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_error(widgets.get("a").await).code, 404);
    cluster.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_conversion_v1_written_is_read_listed_and_watched_in_both_versions() {
    let cluster = Cluster::start(Certificates::self_signed()).await;
    let spokes: Api<v1::Gadget> = Api::namespaced(cluster.client.clone(), NS);
    let hubs: Api<v2::Gadget> = Api::namespaced(cluster.client.clone(), NS);
    let pp = PostParams::default();

    // Written as v1, stored as v2 (the hub, the CRD's storage version).
    let spec = v1::GadgetSpec {
        size: "512Mi".into(),
    };
    let created = spokes
        .create(&pp, &v1::Gadget::new("g", spec))
        .await
        .unwrap();
    assert_eq!(created.spec.size, "512Mi");
    assert_eq!(hubs.get("g").await.unwrap().spec.size_mb, 512);
    assert_eq!(spokes.get("g").await.unwrap().spec.size, "512Mi");
    let listed = spokes.list(&ListParams::default()).await.unwrap();
    let sizes: Vec<_> = listed.items.iter().map(|g| g.spec.size.as_str()).collect();
    assert_eq!(sizes, ["512Mi"]);

    // A write in v2 is watched in v1.
    let version = listed.metadata.resource_version.unwrap();
    let mut events = spokes
        .watch(&WatchParams::default(), &version)
        .await
        .unwrap()
        .boxed();
    let grow = json!({"spec": {"size_mb": 1024}});
    hubs.patch("g", &PatchParams::default(), &Patch::Merge(&grow))
        .await
        .unwrap();
    let event = tokio::time::timeout(PATIENCE, events.next())
        .await
        .unwrap()
        .unwrap();
    match event.unwrap() {
        WatchEvent::Modified(g) => {
            assert_eq!(g.spec.size, "1024Mi");
            assert_eq!(g.metadata.name.as_deref(), Some("g"), "metadata kept");
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }

    // The hub refuses a size it cannot convert: the API server's 500.
    let bad = v1::GadgetSpec { size: "big".into() };
    let failed = api_error(spokes.create(&pp, &v1::Gadget::new("h", bad)).await);
    assert_eq!(failed.code, 500, "{failed:?}");
    // The real server's wording around the review's reason (which names the object).
    let reason = "object 0 (h): size \"big\" is not in Mi";
    assert_eq!(
        failed.message,
        format!("conversion webhook for example.com/v1, Kind=Gadget failed: {reason}")
    );
    assert_eq!(api_error(hubs.get("h").await).code, 404, "nothing stored");
    cluster.stop().await;
}

/// Calls the webhook server directly, one new connection after another, until
/// `stop`; sends the number of distinct certificates seen so far.
async fn watch_certificates(
    client: WebhookClient,
    stop: CancellationToken,
    seen: watch::Sender<usize>,
) {
    let review = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "example.com/v2", "objects": []},
    });
    let body = serde_json::to_vec(&review).unwrap();
    let mut certificates = HashSet::new();
    while !stop.is_cancelled() {
        let reply = client
            .post("/convert/example.com/gadgets", &body)
            .await
            .unwrap();
        if certificates.insert(reply.certificate) {
            seen.send_replace(certificates.len());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_certificate_renewed_while_a_client_keeps_writing_through_the_api_server() {
    // Renewed every 2 s (two thirds of 3 s), from the same CA.
    let cluster =
        Cluster::start(Certificates::self_signed().validity(Duration::from_secs(3))).await;
    let pem = cluster.ca.borrow().clone().unwrap();
    let seen = watch::Sender::new(0);
    let observing = CancellationToken::new();
    let observer = WebhookClient::new(cluster.addr, &format!("{SERVICE}.{NS}.svc"), &pem);
    let observer = tokio::spawn(watch_certificates(
        observer,
        observing.clone(),
        seen.clone(),
    ));

    // Writes through the API server, each calling both webhooks, while two renewals
    // are served; not one may fail.
    let widgets = cluster.widgets();
    let mut renewed = seen.subscribe();
    let mut written = 0;
    let mut writes_at_renewal = Vec::new();
    let writing = async {
        loop {
            let name = format!("w-{written}");
            let stored = widgets
                .create(&PostParams::default(), &widget(&name, None, 1))
                .await
                .unwrap_or_else(|e| panic!("write {written} failed: {e}"));
            assert_eq!(stored.spec.size.as_deref(), Some("small"));
            written += 1;
            if renewed.has_changed().unwrap() {
                let certificates = *renewed.borrow_and_update();
                writes_at_renewal.push(written);
                if certificates >= 3 {
                    return;
                }
            }
        }
    };
    tokio::time::timeout(PATIENCE, writing)
        .await
        .expect("two renewals were not seen");
    // Another write after the last renewal, through a fresh connection.
    widgets
        .create(&PostParams::default(), &widget("last", None, 1))
        .await
        .unwrap();
    observing.cancel();
    observer.await.unwrap();
    assert!(
        written > writes_at_renewal[0],
        "no write between the renewals: {writes_at_renewal:?}"
    );
    assert_eq!(
        cluster.ca.borrow().as_deref(),
        Some(&*pem),
        "the CA changed"
    );
    cluster.stop().await;
}

/// Writes a new CA and a serving certificate for the Service it signed into `dir`,
/// whole files renamed into place as kubelet updates a Secret's volume; the CA's PEM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_certificate_files_changed_are_served_to_the_api_server() {
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "reflector-webhook-round-trip-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let first = certificate_files::write_from_new_ca(&dir, &format!("{SERVICE}.{NS}.svc"));
    let certificates = Certificates::from_dir(&dir).poll_interval(Duration::from_secs(1));
    let cluster = Cluster::start(certificates).await;
    let widgets = cluster.widgets();
    widgets
        .create(&PostParams::default(), &widget("a", None, 1))
        .await
        .unwrap();

    // A new CA and certificate, as a renewed cert-manager issuer writes them: the
    // server serves them and the keeper puts the new CA where the API server reads it.
    let second = certificate_files::write_from_new_ca(&dir, &format!("{SERVICE}.{NS}.svc"));
    assert_ne!(first, second);
    cluster.wait_ca_bundles(&second).await;
    let stored = widgets
        .create(&PostParams::default(), &widget("b", None, 1))
        .await
        .unwrap();
    assert_eq!(stored.spec.size.as_deref(), Some("small"));
    // What the server shows chains to the new CA only.
    let old = WebhookClient::new(cluster.addr, &format!("{SERVICE}.{NS}.svc"), &first);
    assert!(
        old.post("/convert/example.com/gadgets", b"{}")
            .await
            .is_err()
    );
    cluster.stop().await;
    std::fs::remove_dir_all(&dir).unwrap();
}
