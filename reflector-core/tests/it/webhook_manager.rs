//! A webhook server under a `Manager`: its manifests (Service, webhook configurations
//! with rules from the registered kinds, the converted CRD's conversion stanza, the
//! container port) and RBAC; the caBundle keeper writing a CRD's conversion caBundle
//! on the embedded API server, and again when the CA changes; and the server run on
//! a replica that does not lead.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::CustomResource;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use reflector_core::leader_election::LeaderElectionConfig;
use reflector_core::manager::{DeployOptions, Manager};
use reflector_core::webhooks::{
    AdmissionContext, Certificates, Defaulter, Validator, WebhookServer,
};
use reflector_testkit::ApiServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::certificate_files;
use crate::support::clients::replica_client;
use crate::support::gadgets::{v1, v2};
use crate::support::namespaces::create_namespaces;
use crate::support::patience::PATIENCE;
use crate::support::webhook_client::WebhookClient;

/// A kind defaulted and validated (deletes too).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    replicas: Option<u32>,
}

impl Defaulter for Widget {
    fn set_defaults(&mut self, _: &AdmissionContext) {
        self.spec.replicas.get_or_insert(1);
    }
}

impl Validator for Widget {
    const VALIDATES_DELETE: bool = true;
}

fn webhooks(client: Option<kube::Client>, certificates: Certificates) -> WebhookServer {
    let mut server = WebhookServer::new("widget-webhooks")
        .certificates(certificates)
        .bind("127.0.0.1:0".parse().unwrap())
        .unwrap();
    if let Some(client) = client {
        server = server.keep_ca_bundle(client);
    }
    server.defaulting::<Widget>().validating::<Widget>();
    server.conversion::<v2::Gadget>().spoke::<v1::Gadget>();
    server
}

#[tokio::test]
async fn manifests_and_rbac_have_the_webhook_server() {
    let server = ApiServer::start().await.unwrap();
    let client = replica_client(&server, "op", "widgets");
    let mut manager = Manager::new(client.clone());
    let plain = manager.manifests(&DeployOptions::new("op", "img"));
    assert!(plain.webhook_service.is_none() && plain.validating_webhook_configuration.is_none());
    assert!(plain.custom_resource_definitions.is_empty());

    let server = webhooks(Some(client), Certificates::self_signed());
    let manager_port = i64::from(server.port());
    manager.add_webhooks(server);
    let manifests = manager.manifests(&DeployOptions::new("op", "img").namespace("widgets"));
    let json = |o: &dyn erased::Json| o.json();
    let service = json(&manifests.webhook_service.clone().expect("a Service"));
    assert_eq!(service["metadata"]["name"], "widget-webhooks");
    assert_eq!(service["metadata"]["namespace"], "widgets");
    assert_eq!(
        service["spec"]["selector"],
        json!({"app.kubernetes.io/name": "op"})
    );
    assert_eq!(
        service["spec"]["ports"],
        json!([{"name": "webhooks", "port": 443, "targetPort": "webhooks", "protocol": "TCP"}])
    );
    let deployment = json(&manifests.deployment);
    let ports = &deployment["spec"]["template"]["spec"]["containers"][0]["ports"];
    assert_eq!(ports[1]["name"], "webhooks");
    assert_eq!(ports[1]["containerPort"], manager_port);

    let client_config = |path: &str| json!({"service": {"name": "widget-webhooks", "namespace": "widgets", "path": path, "port": 443}});
    let validating = json(
        &manifests
            .validating_webhook_configuration
            .clone()
            .expect("a validating configuration"),
    );
    assert_eq!(validating["metadata"]["name"], "widget-webhooks");
    assert_eq!(
        validating["webhooks"],
        json!([{
            "name": "validate.v1.widgets.example.com",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "clientConfig": client_config("/validate/example.com/v1/widgets"),
            "rules": [{
                "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"],
                "operations": ["CREATE", "UPDATE", "DELETE"]
            }]
        }])
    );
    let mutating = json(
        &manifests
            .mutating_webhook_configuration
            .clone()
            .expect("a mutating configuration"),
    );
    assert_eq!(
        mutating["webhooks"][0]["name"],
        "default.v1.widgets.example.com"
    );
    assert_eq!(
        mutating["webhooks"][0]["clientConfig"],
        client_config("/mutate/example.com/v1/widgets")
    );
    assert_eq!(
        mutating["webhooks"][0]["rules"][0]["operations"],
        json!(["CREATE", "UPDATE"])
    );

    let [crd] = &manifests.custom_resource_definitions[..] else {
        panic!("one CRD")
    };
    let crd = json(crd);
    assert_eq!(crd["metadata"]["name"], "gadgets.example.com");
    let versions: Vec<_> = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].clone(), v["storage"].clone()))
        .collect();
    assert_eq!(
        versions,
        [(json!("v2"), json!(true)), (json!("v1"), json!(false))]
    );
    assert_eq!(
        crd["spec"]["conversion"],
        json!({"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": client_config("/convert/example.com/gadgets")
        }})
    );
    let kinds: Vec<_> = manifests
        .objects()
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_owned())
        .collect();
    for kind in [
        "CustomResourceDefinition",
        "Service",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "{kind} missing from {kinds:?}"
        );
    }

    let rules = json(&manager.rbac("op").cluster_role);
    let rules = rules["rules"].as_array().unwrap();
    for (group, resource, name) in [
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            "widget-webhooks",
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            "widget-webhooks",
        ),
        (
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "gadgets.example.com",
        ),
    ] {
        let rule = json!({"apiGroups": [group], "resources": [resource], "resourceNames": [name], "verbs": ["get", "patch"]});
        assert!(rules.contains(&rule), "{rule} missing from {rules:?}");
    }
}

/// k8s-openapi objects as JSON, for comparisons that read as the YAML applied.
mod erased {
    pub trait Json {
        fn json(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap()
        }
    }
}

/// Waits until the CRD `name`'s conversion caBundle is `pem`.
async fn wait_ca_bundle(crds: &Api<CustomResourceDefinition>, name: &str, pem: &str) {
    let bundle = |crd: &CustomResourceDefinition| {
        crd.spec
            .conversion
            .as_ref()?
            .webhook
            .as_ref()?
            .client_config
            .as_ref()?
            .ca_bundle
            .as_ref()
            .map(|b| b.0.clone())
    };
    let current = crds.get(name).await.unwrap();
    if bundle(&current).as_deref() == Some(pem.as_bytes()) {
        return;
    }
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let version = current.metadata.resource_version.unwrap();
    let mut events = crds.watch(&params, &version).await.unwrap().boxed();
    tokio::time::timeout(PATIENCE, async {
        while let Some(event) = events.next().await {
            if let WatchEvent::Modified(crd) = event.unwrap()
                && bundle(&crd).as_deref() == Some(pem.as_bytes())
            {
                return;
            }
        }
        panic!("the watch ended");
    })
    .await
    .expect("the caBundle was not written");
}

#[tokio::test]
async fn the_ca_bundle_keeper_writes_a_crds_conversion_ca_bundle_and_follows_the_ca() {
    let server = ApiServer::start().await.unwrap();
    let client = server.client();
    // The CRD as the manifests make it, applied before the operator starts.
    let mut manager = Manager::new(client.clone());
    manager.add_webhooks(webhooks(None, Certificates::self_signed()));
    let crd = manager
        .manifests(&DeployOptions::new("op", "img"))
        .custom_resource_definitions
        .remove(0);
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.create(&PostParams::default(), &crd).await.unwrap();

    // Certificates from files whose CA then changes, as a renewed cert-manager CA.
    let dir = std::env::temp_dir().join(format!("reflector-keeper-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let first = certificate_files::write_from_new_ca(&dir, "widget-webhooks.default.svc");
    let certificates = Certificates::from_dir(&dir).poll_interval(Duration::from_secs(1));
    let webhooks = webhooks(Some(client.clone()), certificates);
    let stop = CancellationToken::new();
    let serving = tokio::spawn(webhooks.run(stop.clone()));
    wait_ca_bundle(&crds, "gadgets.example.com", &first).await;
    let second = certificate_files::write_from_new_ca(&dir, "widget-webhooks.default.svc");
    assert_ne!(first, second);
    wait_ca_bundle(&crds, "gadgets.example.com", &second).await;
    stop.cancel();
    serving.await.unwrap().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Writes a new CA and a serving certificate it signed to `dir`; the CA's PEM.
#[tokio::test]
async fn a_replica_that_does_not_lead_serves_webhooks_until_it_stops() {
    let server = ApiServer::start().await.unwrap();
    let client = replica_client(&server, "follower", "widgets");
    create_namespaces(&client, &["widgets"]).await;
    // Another replica holds the lease for an hour.
    let lease = Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("op".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("other".into()),
            lease_duration_seconds: Some(3600),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    Api::<Lease>::namespaced(client.clone(), "widgets")
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();

    let stop = CancellationToken::new();
    let webhooks = webhooks(None, Certificates::self_signed());
    let addr = webhooks.local_addr().unwrap();
    let mut ca = webhooks.ca_bundle();
    let mut manager = Manager::new(client)
        .leader_election("op", LeaderElectionConfig::default())
        .unwrap()
        .graceful_shutdown_on({
            let stop = stop.clone();
            async move { stop.cancelled().await }
        });
    manager.add_webhooks(webhooks);
    assert!(!manager.election().unwrap().is_leader());
    let running = tokio::spawn(manager.run());

    let pem = tokio::time::timeout(PATIENCE, ca.wait_for(Option::is_some))
        .await
        .unwrap()
        .unwrap()
        .clone()
        .unwrap();
    // The Service's namespace is the client's default namespace.
    let https = WebhookClient::new(addr, "widget-webhooks.widgets.svc", &pem);
    let review = json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "u1", "operation": "CREATE", "userInfo": {},
            "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
            "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
            "object": {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}}
        }
    });
    let reply = https
        .review("/mutate/example.com/v1/widgets", &review)
        .await;
    assert_eq!(reply.json()["response"]["uid"], "u1");

    stop.cancel();
    tokio::time::timeout(PATIENCE, running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let refused = https.post("/mutate/example.com/v1/widgets", b"{}").await;
    assert!(refused.is_err(), "still serving after the manager stopped");
}
