//! `shutdown_on_signal`: SIGTERM (what the kubelet sends a pod) shuts the
//! controller down gracefully. Its own test binary, apart from the suites in `it/`:
//! the signal goes to the whole process, and the test installs the process's global
//! tracing subscriber to see the controller take it.

#[path = "it/support/patience.rs"]
mod patience;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use patience::PATIENCE;
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::informer::SharedIndexInformer;
use reflector_core::listwatch::FakeSource;
use tokio::sync::Notify;

/// How long the test watches for a wrong early return after the shutdown began.
const ABSENCE_WINDOW: std::time::Duration = std::time::Duration::from_millis(100);

/// Wakes the test when the controller logs that it took the signal: the moment it
/// starts waiting for the reconciles in flight.
struct ShutdownSeen(Arc<Notify>);

impl tracing::Subscriber for ShutdownSeen {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(bool);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 |= format!("{value:?}").contains("shutdown signal received");
                }
            }
        }
        let mut message = Message(false);
        event.record(&mut message);
        if message.0 {
            self.0.notify_one();
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

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
    let shutdown_seen = Arc::new(Notify::new());
    tracing::subscriber::set_global_default(ShutdownSeen(Arc::clone(&shutdown_seen)))
        .expect("the only subscriber in this test binary");
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
    let mut run = tokio::spawn(Controller::new(informer.clone()).shutdown_on_signal().run(
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
    // The controller took the signal and is waiting for the reconcile in flight.
    tokio::time::timeout(PATIENCE, shutdown_seen.notified())
        .await
        .expect("the controller never began its shutdown on SIGTERM");
    // From then on it must not return while the reconcile is held. A window, not a
    // wait: a controller that did not wait would return within it; one that waits
    // never does, however slow the machine.
    assert!(
        tokio::time::timeout(ABSENCE_WINDOW, &mut run)
            .await
            .is_err(),
        "run returned with a reconcile in flight"
    );
    ctx.gate.notify_one();
    tokio::time::timeout(PATIENCE, run)
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
