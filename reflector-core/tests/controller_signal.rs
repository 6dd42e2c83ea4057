//! `shutdown_on_signal`: SIGTERM (what the kubelet sends a pod) shuts the
//! controller down gracefully. Its own test binary: the signal goes to the whole
//! process.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::informer::SharedIndexInformer;
use reflector_core::listwatch::FakeSource;
use tokio::sync::Notify;

#[derive(Default)]
struct Ctx {
    entered: Notify,
    gate: Notify,
    reconciles: AtomicUsize,
    finished: AtomicBool,
}

/// SIGTERM during a reconcile: the reconcile in flight finishes, no other key is
/// taken, `run` returns `Ok` and the informer it started is stopped; the process
/// lives on (the signal was handled, not fatal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_shuts_the_controller_down_gracefully() {
    let source = FakeSource::<ConfigMap>::new();
    for name in ["a", "b"] {
        source.add(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        });
    }
    let informer = SharedIndexInformer::new(source);
    let ctx = Arc::new(Ctx::default());
    let run = tokio::spawn(Controller::new(informer.clone()).shutdown_on_signal().run(
        |_req: Request<ConfigMap>, ctx: Arc<Ctx>| async move {
            ctx.reconciles.fetch_add(1, Ordering::SeqCst);
            ctx.entered.notify_one();
            ctx.gate.notified().await;
            ctx.finished.store(true, Ordering::SeqCst);
            Ok::<_, std::convert::Infallible>(Action::done())
        },
        Arc::clone(&ctx),
    ));
    ctx.entered.notified().await;

    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    // The controller is shutting down but waits for the reconcile in flight.
    for _ in 0..50 {
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    assert!(
        !run.is_finished(),
        "run returned with a reconcile in flight"
    );
    ctx.gate.notify_one();
    tokio::time::timeout(std::time::Duration::from_secs(30), run)
        .await
        .expect("the controller did not stop on SIGTERM")
        .unwrap()
        .expect("a clean stop");

    assert!(ctx.finished.load(Ordering::SeqCst));
    assert_eq!(
        ctx.reconciles.load(Ordering::SeqCst),
        1,
        "a key was taken after SIGTERM"
    );
    assert!(informer.is_stopped(), "the informer it started still runs");
}
