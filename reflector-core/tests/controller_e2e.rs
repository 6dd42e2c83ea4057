//! The controller end to end over real HTTP: a Deployment controller owning
//! ConfigMaps, on informers from an `InformerFactory` against the embedded API
//! server of `reflector-testkit`.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, PostParams};
use prometheus_client::registry::Registry;
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::informer::InformerFactory;
use reflector_core::metrics::{Metrics, render_metrics};
use reflector_core::object::ObjectKey;
use reflector_testkit::ApiServer;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

struct Ctx {
    seen: mpsc::UnboundedSender<(ObjectKey, bool)>,
}

async fn next(rx: &mut mpsc::UnboundedReceiver<(ObjectKey, bool)>) -> (ObjectKey, bool) {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
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
    let counted = tokio::time::timeout(Duration::from_secs(5), async {
        while !render_metrics(&registry).contains(success) {
            tokio::time::sleep(Duration::from_millis(5)).await;
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
