//! A handler stuck while 10,000 watch events arrive stalls neither the watch nor
//! the cache, with either informer queue: the informer applies every event to its
//! cache while the handler is stuck (the handler's own buffer holds its
//! notifications), the watch is never dropped, and once unstuck the handler gets
//! all 10,000 in order. The queue's length is exported as `informer_queued_items`.
//! On a runtime of one worker thread too: the stuck handler holds no worker, so the
//! informer, its watch and the embedded server go on (a handler that blocked its
//! worker would stall them all until released).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;
use prometheus_client::registry::Registry;
use reflector_core::fifo::QueueMode;
use reflector_core::informer::{Change, InformerOptions, SharedIndexInformer};
use reflector_core::listwatch::ApiListerWatcher;
use reflector_core::metrics::{Metrics, render_metrics};
use reflector_testkit::ApiServer;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::support::patience::PATIENCE;

const EVENTS: usize = 10_000;

async fn stuck_handler_stalls_nothing(queue: QueueMode) {
    let server = ApiServer::start().await.expect("server");
    let informer = SharedIndexInformer::with_options(
        ApiListerWatcher::new(kube::Api::<ConfigMap>::namespaced(
            server.client(),
            "default",
        )),
        InformerOptions::default().queue(queue),
    );

    // The handler gets stuck at its first add until the test releases it.
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let stuck = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let progress = Arc::new(Notify::new());
    informer
        .add_event_fn({
            let (stuck, seen, progress) = (stuck.clone(), seen.clone(), progress.clone());
            move |change: Change<ConfigMap>| {
                let Change::Added { obj, .. } = change else {
                    return;
                };
                let mut seen_now = seen.lock().unwrap();
                if seen_now.is_empty() {
                    drop(seen_now);
                    stuck.store(true, Ordering::SeqCst);
                    progress.notify_one();
                    // Bounded, so a failing test never hangs.
                    let _ = released.lock().unwrap().recv_timeout(PATIENCE);
                    stuck.store(false, Ordering::SeqCst);
                    seen_now = seen.lock().unwrap();
                }
                seen_now.push(obj.metadata.name.clone().unwrap_or_default());
                if seen_now.len() == EVENTS {
                    progress.notify_one();
                }
            }
        })
        .unwrap();
    let mut registry = Registry::default();
    Metrics::registered(&mut registry).informer("configmaps", &informer);

    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    tokio::time::timeout(PATIENCE, informer.wait_synced())
        .await
        .expect("synced")
        .unwrap();

    let mut last_rv = 0;
    for i in 0..EVENTS {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i:05}"));
        cm.metadata.namespace = Some("default".into());
        last_rv = server.insert(&cm).unwrap();
        if i % 1000 == 999 {
            tokio::task::yield_now().await;
        }
    }
    // The cache holds every event while the handler is still stuck at the first.
    tokio::time::timeout(
        PATIENCE,
        informer.wait_for_resource_version(&last_rv.to_string()),
    )
    .await
    .expect("the cache caught up with the watch")
    .unwrap();
    assert!(stuck.load(Ordering::SeqCst), "the handler is still stuck");
    assert_eq!(informer.indexer().len(), EVENTS);
    let stats = informer.reflector_stats();
    assert_eq!(
        (stats.watches, stats.relists, stats.events),
        (1, 0, EVENTS as u64),
        "one watch, never dropped nor relisted, every event read: {stats:?}"
    );
    let metrics = render_metrics(&registry);
    assert!(
        metrics.contains("informer_queued_items{name=\"configmaps\"} 0"),
        "{metrics}"
    );

    release.send(()).unwrap();
    tokio::time::timeout(PATIENCE, async {
        loop {
            let notified = progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if seen.lock().unwrap().len() == EVENTS {
                return;
            }
            notified.await;
        }
    })
    .await
    .expect("the handler got every event once unstuck");
    let want: Vec<String> = (0..EVENTS).map(|i| format!("cm-{i:05}")).collect();
    assert!(*seen.lock().unwrap() == want, "all 10,000 adds, in order");
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn stuck_handler_stalls_nothing_with_the_delta_fifo() {
    stuck_handler_stalls_nothing(QueueMode::PerKey).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn stuck_handler_stalls_nothing_with_the_in_order_queue() {
    stuck_handler_stalls_nothing(QueueMode::InOrder).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn stuck_handler_stalls_nothing_on_one_worker_with_the_delta_fifo() {
    stuck_handler_stalls_nothing(QueueMode::PerKey).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn stuck_handler_stalls_nothing_on_one_worker_with_the_in_order_queue() {
    stuck_handler_stalls_nothing(QueueMode::InOrder).await;
}
