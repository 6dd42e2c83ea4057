//! The controller end to end over real HTTP: a Deployment controller owning
//! ConfigMaps, on informers from an `InformerFactory` against the embedded API
//! server of `reflector-testkit`; an error policy recording Warning Events.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as EventObject;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use prometheus_client::registry::Registry;
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::events::{Event, Recorder};
use reflector_core::informer::InformerFactory;
use reflector_core::metrics::{Metrics, render_metrics};
use reflector_core::object::{ObjectKey, ObjectRef};
use reflector_testkit::ApiServer;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::namespaces::create_namespaces;
use crate::support::patience::{PATIENCE, POLL};

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

struct Ctx {
    seen: mpsc::UnboundedSender<(ObjectKey, bool)>,
}

async fn next(rx: &mut mpsc::UnboundedReceiver<(ObjectKey, bool)>) -> (ObjectKey, bool) {
    tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .expect("a reconcile in time")
        .expect("controller running")
}

/// Initial sync reconciles the Deployment; creating an owned ConfigMap over HTTP
/// reconciles its owner; deleting the Deployment reconciles it once more with the
/// request's object `None`; the metrics count the three successes. The informers
/// are the factory's, started by the factory: the controller leaves them running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_controller_over_http() {
    let server = ApiServer::start().await.expect("server");
    create_namespaces(&server.client(), &["e2e"]).await;
    server.register_resource::<Deployment>();
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("e2e".into()),
            ..ObjectMeta::default()
        },
        ..Deployment::default()
    };
    server.insert(&deployment).expect("insert");

    let factory = InformerFactory::new(server.client());
    let deployments = factory.namespaced::<Deployment>("e2e");
    let config_maps = factory.namespaced::<ConfigMap>("e2e");
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let deployments_informer = deployments.clone();
    let controller = Controller::new(deployments)
        .owns(config_maps)
        .concurrency(2)
        .metrics(&metrics);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let ctx = Arc::new(Ctx { seen: tx });
    let cancel = CancellationToken::new();
    factory.start();
    let run = tokio::spawn(
        controller
            .graceful_shutdown_on(cancel.clone().cancelled_owned())
            .run(
                |req: Request<Deployment>, ctx: Arc<Ctx>| async move {
                    let _ = ctx.seen.send((req.key.into_key(), req.object.is_some()));
                    Ok::<_, Never>(Action::done())
                },
                ctx,
            ),
    );
    let web = ObjectKey::new(Some("e2e"), "web");
    assert_eq!(next(&mut rx).await, (web.clone(), true));

    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "e2e");
    let owned = ConfigMap {
        metadata: ObjectMeta {
            name: Some("web-config".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                uid: "uid-web".into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    cms.create(&PostParams::default(), &owned)
        .await
        .expect("create");
    assert_eq!(next(&mut rx).await, (web.clone(), true));

    let deploys: Api<Deployment> = Api::namespaced(server.client(), "e2e");
    deploys
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(next(&mut rx).await, (web.clone(), false));

    // The reconcile reports through the channel before it returns; the success is
    // counted once it has returned.
    let success =
        "controller_runtime_reconcile_total{controller=\"deployment\",result=\"success\"} 3";
    let counted = tokio::time::timeout(PATIENCE, async {
        while !render_metrics(&registry).contains(success) {
            tokio::time::sleep(POLL).await;
        }
    })
    .await;
    let text = render_metrics(&registry);
    assert!(counted.is_ok(), "{text}");
    assert!(
        text.contains("reflector_lists_total{name=\"deployment/Deployment\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("reflector_lists_total{name=\"deployment/ConfigMap\"} 1"),
        "{text}"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(
        !deployments_informer.is_stopped(),
        "the controller stopped an informer the factory started"
    );
    factory.shutdown().await;
    assert!(deployments_informer.is_stopped());
    server.shutdown().await;
}

#[derive(Debug, thiserror::Error)]
#[error("the data is invalid")]
struct Invalid;

/// What an error policy was handed: the key, and the object if there was one.
type Failure = (ObjectRef<ConfigMap>, Option<Arc<ConfigMap>>);

async fn next_failure(rx: &mut mpsc::UnboundedReceiver<Failure>) -> Failure {
    tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .expect("a failure in time")
        .expect("controller running")
}

struct PolicyCtx {
    recorder: Recorder,
    failures: mpsc::UnboundedSender<Failure>,
}

/// The error policy receives what the failed reconcile saw — the key, and the cached
/// object when there is one — so it publishes a Warning Event about the object with
/// `events::Recorder::publish`, no reference built by hand: the stored Event's
/// `regarding` is the object's reference field by field (apiVersion, kind, namespace,
/// name, uid, resourceVersion). A deleted object's failure reaches the policy with its
/// key and no object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_policy_gets_the_object_and_records_a_warning_about_it() {
    let server = ApiServer::start().await.expect("server");
    create_namespaces(&server.client(), &["e2e"]).await;
    let mut broken = ConfigMap::default();
    broken.metadata.name = Some("broken".into());
    broken.metadata.namespace = Some("e2e".into());
    server.insert(&broken).expect("insert");
    let stored: ConfigMap = server.get(Some("e2e"), "broken").unwrap().unwrap();

    let (tx, mut failures) = mpsc::unbounded_channel();
    let recorder = Recorder::new(server.client(), "configmap-controller").expect("recorder");
    let ctx = Arc::new(PolicyCtx {
        recorder: recorder.clone(),
        failures: tx,
    });
    let cancel = CancellationToken::new();
    let run = tokio::spawn(
        Controller::for_api(Api::<ConfigMap>::namespaced(server.client(), "e2e"))
            .error_policy(
                |req: &Request<ConfigMap>, err: &Invalid, ctx: Arc<PolicyCtx>| {
                    if let Some(cm) = &req.object {
                        let warning =
                            Event::warning("ReconcileFailed", "Reconcile").note(err.to_string());
                        ctx.recorder
                            .publish(cm.as_ref(), warning)
                            .expect("published");
                    }
                    let _ = ctx.failures.send((req.key.clone(), req.object.clone()));
                    Action::done()
                },
            )
            .graceful_shutdown_on(cancel.clone().cancelled_owned())
            .run(
                |_: Request<ConfigMap>, _: Arc<PolicyCtx>| async { Err::<Action, _>(Invalid) },
                ctx,
            ),
    );
    let (key, object) = next_failure(&mut failures).await;
    assert_eq!(key, ObjectRef::new(Some("e2e"), "broken"));
    let object = object.expect("the policy got the cached object");
    assert_eq!(object.metadata.uid, stored.metadata.uid);

    recorder.flush().await.expect("written");
    let events: Api<EventObject> = Api::namespaced(server.client(), "e2e");
    let listed = events.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let event = &listed[0];
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.reason.as_deref(), Some("ReconcileFailed"));
    assert_eq!(event.note.as_deref(), Some("the data is invalid"));
    let regarding = event.regarding.as_ref().expect("regarding");
    assert_eq!(regarding.api_version.as_deref(), Some("v1"));
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.namespace.as_deref(), Some("e2e"));
    assert_eq!(regarding.name.as_deref(), Some("broken"));
    assert_eq!(regarding.uid, stored.metadata.uid);
    assert!(regarding.uid.is_some());
    assert_eq!(regarding.resource_version, stored.metadata.resource_version);
    assert_eq!(regarding.field_path, None);

    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "e2e");
    cms.delete("broken", &DeleteParams::default())
        .await
        .expect("delete");
    let (key, object) = next_failure(&mut failures).await;
    assert_eq!(key, ObjectRef::new(Some("e2e"), "broken"));
    assert!(object.is_none(), "a deleted object has no object");
    cancel.cancel();
    run.await.unwrap().unwrap();
    server.shutdown().await;
}
