//! Live changes before the backlog (controller-runtime's priority queue): a change
//! made while a controller works through its initial list is reconciled before the
//! rest of that list. Against an in-memory source; tokio's paused clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::informer::SharedIndexInformer;
use reflector_core::listwatch::FakeSource;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Objects in the initial list.
const BACKLOG: usize = 10_000;
/// Backlog keys reconciled after a live change was made and before it: at most one,
/// taken while the change's event was still on its way through the informer to the
/// queue (the reconcile in flight when it was made is not counted). Measured: none.
const MAX_AHEAD: usize = 1;

fn cm(i: usize, live: bool) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i:05}")),
            namespace: Some("ns".into()),
            labels: live.then(|| [("live".to_owned(), "yes".to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

struct Ctx {
    /// Every reconciled object's name and whether it carried the live change.
    reconciled: Mutex<Vec<(String, bool)>>,
    /// Told of the first reconcile and of the live change's.
    events: mpsc::UnboundedSender<bool>,
}

async fn reconcile(
    req: Request<ConfigMap>,
    ctx: Arc<Ctx>,
) -> Result<Action, std::convert::Infallible> {
    let live = req
        .object
        .as_ref()
        .is_some_and(|cm| cm.metadata.labels.is_some());
    let first = {
        let mut reconciled = ctx.reconciled.lock().unwrap();
        reconciled.push((req.key.name().to_owned(), live));
        reconciled.len() == 1
    };
    if first || live {
        let _ = ctx.events.send(live);
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    Ok(Action::done())
}

/// Runs a controller over `BACKLOG` objects; once it reconciles, changes the last
/// object of the list; answers how many backlog reconciles ran after the change
/// and before the changed object's.
async fn backlog_ahead_of_a_live_change(priority_queue: bool) -> usize {
    let source = FakeSource::<ConfigMap>::new();
    for i in 0..BACKLOG {
        source.add(cm(i, false));
    }
    let (events, mut told) = mpsc::unbounded_channel();
    let ctx = Arc::new(Ctx {
        reconciled: Mutex::new(Vec::new()),
        events,
    });
    let stop = CancellationToken::new();
    let run = tokio::spawn(
        Controller::new(SharedIndexInformer::new(source.clone()))
            .priority_queue(priority_queue)
            .graceful_shutdown_on(stop.clone().cancelled_owned())
            .run(reconcile, Arc::clone(&ctx)),
    );
    assert_eq!(told.recv().await, Some(false), "reconciling started");
    let before = ctx.reconciled.lock().unwrap().len();
    source.modify(cm(BACKLOG - 1, true));
    assert_eq!(
        told.recv().await,
        Some(true),
        "the live change was reconciled"
    );
    let ahead = ctx.reconciled.lock().unwrap().len() - before - 1;
    stop.cancel();
    run.await.unwrap().unwrap();
    ahead
}

#[tokio::test(start_paused = true)]
async fn manager_live_change_is_reconciled_before_the_initial_backlog() {
    let ahead = backlog_ahead_of_a_live_change(true).await;
    assert!(
        ahead <= MAX_AHEAD,
        "{ahead} backlog keys were reconciled before the live change"
    );
}

/// The opt-out: keys in the order queued, so the change waits for the backlog.
#[tokio::test(start_paused = true)]
async fn manager_without_the_priority_queue_reconciles_a_live_change_after_the_backlog() {
    let ahead = backlog_ahead_of_a_live_change(false).await;
    assert!(
        ahead >= BACKLOG - 10,
        "only {ahead} backlog keys were reconciled before the live change"
    );
}
