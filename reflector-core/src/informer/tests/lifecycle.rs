//! An informer's run and its end: list errors reported, everything it started
//! stopped and freed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::fifo::QueueMode;
use crate::informer::*;
use crate::listwatch::{FakeSource, ListWatchError};
use crate::reflector::ReflectorOptions;

use crate::test_support::*;

each_queue!(
    #[tokio::test(start_paused = true)]
    shared_informer_error_handling
);

/// TestSharedInformerErrorHandling: a list error reaches the watch-error handler.
async fn shared_informer_error_handling(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    source.add(ns_pod("pod1"));
    let mut denied = kube::core::Status::failure("Access Denied", "Forbidden").with_code(403);
    denied.reason = "Forbidden".into();
    source.fail_lists(ListWatchError::Api(Box::new(denied)));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let e = errors.clone();
    let informer = SharedIndexInformer::with_options(
        source.clone(),
        InformerOptions::default()
            .queue(queue)
            .resync(Duration::from_secs(1))
            .reflector_options(ReflectorOptions::default().watch_error_handler(move |err| {
                let mut msg = err.to_string();
                let mut src = std::error::Error::source(err);
                while let Some(s) = src {
                    msg.push_str(&format!(": {s}"));
                    src = s.source();
                }
                e.lock().unwrap().push(msg);
            })),
    );
    let running = start(&informer);
    eventually(|| !errors.lock().unwrap().is_empty()).await;
    assert!(
        errors.lock().unwrap()[0].contains("Access Denied"),
        "{:?}",
        errors.lock().unwrap()
    );
    assert!(!informer.has_synced());
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    shutdown
);

/// TestShutdown: `run` returns only after every listener task has ended, and the
/// informer holds no task afterwards.
async fn shutdown(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    source.add(ns_pod("pod1"));
    let informer =
        SharedIndexInformer::with_options(source.clone(), InformerOptions::default().queue(queue));
    let handler = TestListener::default();
    informer.add_event_handler(handler.clone()).unwrap();
    let running = start(&informer);
    eventually(|| informer.has_synced()).await;
    running.stop().await;
    assert!(informer.is_stopped());
    assert_eq!(source.open_watches(), 0, "the watch was dropped");
    assert_eq!(
        Arc::strong_count(&handler.received),
        2,
        "the listener task released its handler"
    );
}

each_queue!(
    #[tokio::test(start_paused = true)]
    dropped_informer_frees_its_cache_and_handlers
);

/// Once stopped and no longer referenced, an informer frees its cache and its
/// handlers: nothing it started keeps a handle to it.
async fn dropped_informer_frees_its_cache_and_handlers(queue: QueueMode) {
    let (_source, informer) = resyncing_informer(queue, &["pod1"]);
    let handler = TestListener::default();
    // The registration holds the informer (for its `has_synced`); drop it too.
    drop(
        informer
            .add_event_handler_with_resync(handler.clone(), Duration::from_secs(1))
            .unwrap(),
    );
    let running = start(&informer);
    eventually(|| informer.has_synced()).await;
    let cached = informer.lister().get(Some("ns"), "pod1").unwrap();
    running.stop().await;
    drop(informer);
    assert_eq!(
        Arc::strong_count(&cached),
        1,
        "the cache still holds the object"
    );
    assert_eq!(
        Arc::strong_count(&handler.received),
        1,
        "the handler was not dropped"
    );
}
