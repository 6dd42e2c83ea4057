//! Index query comparison, in the parent process: our `Lister::by_index` on an index of
//! the `app.kubernetes.io/instance` label against scans of kube-runtime's store.

use std::hint::black_box;
use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::reflector as kr;
use kube::runtime::watcher;
use reflector::informer::{InformerOptions, SharedIndexInformer};
use reflector::listwatch::ApiListerWatcher;
use reflector::store::Indexers;
use reflector_testkit::ApiServer;
use tokio_util::sync::CancellationToken;

/// The label indexed and queried.
const LABEL: &str = "app.kubernetes.io/instance";
/// The value queried (100 objects of 100,000; 10 of 10,000).
const VALUE: &str = "bench-7";
/// Our index's name.
const INDEX: &str = "instance";

/// One measured query.
pub struct QueryFigure {
    /// What was measured.
    pub name: &'static str,
    /// Nanoseconds per query.
    pub ns: f64,
    /// Objects each query returned.
    pub results: usize,
}

fn instance(cm: &ConfigMap) -> Option<&str> {
    cm.metadata.labels.as_ref()?.get(LABEL).map(String::as_str)
}

fn time<F: FnMut() -> usize>(iters: usize, mut query: F) -> (f64, usize) {
    let mut results = query();
    let start = Instant::now();
    for _ in 0..iters {
        results = black_box(query());
    }
    (start.elapsed().as_nanos() as f64 / iters as f64, results)
}

/// Syncs both caches from `server` and times the queries.
///
/// # Cancel safety
/// Not relevant: awaited to completion by the parent.
pub async fn run(server: &ApiServer, objects: usize) -> Result<Vec<QueryFigure>, String> {
    let client = server.client();
    let informer = SharedIndexInformer::with_options(
        ApiListerWatcher::new(Api::<ConfigMap>::all(client.clone())),
        InformerOptions::default()
            .queue(crate::scenario::PINNED_QUEUE)
            .indexers(Indexers::new().with(INDEX, |cm: &ConfigMap| {
                instance(cm).map(str::to_owned).into_iter().collect()
            })),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let informer = informer.clone();
        let cancel = cancel.clone();
        async move { informer.run(cancel).await }
    });
    if informer.wait_synced().await.is_err() {
        return Err("index: our informer did not sync".to_owned());
    }
    let (store, writer) = kr::store::<ConfigMap>();
    let stream = kr::reflector(
        writer,
        watcher(
            Api::<ConfigMap>::all(client),
            watcher::Config::default().page_size(500),
        ),
    );
    let drive = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while stream.next().await.is_some() {}
    });
    store
        .wait_until_ready()
        .await
        .map_err(|e| format!("index: kube-runtime: {e}"))?;

    let lister = informer.lister();
    let scans = (20_000_000 / objects.max(1)).clamp(20, 1000);
    let (ours_ns, ours_n) = time(10_000, || {
        lister.by_index(INDEX, VALUE).map_or(0, |v| v.len())
    });
    let (filter_ns, filter_n) = time(scans, || {
        store.state_filter(|cm| instance(cm) == Some(VALUE)).len()
    });
    let (state_ns, state_n) = time(scans, || {
        store
            .state()
            .into_iter()
            .filter(|cm| instance(cm) == Some(VALUE))
            .count()
    });
    cancel.cancel();
    let _ = task.await;
    drive.abort();
    Ok(vec![
        QueryFigure {
            name: "ours: lister.by_index(\"instance\", \"bench-7\")",
            ns: ours_ns,
            results: ours_n,
        },
        QueryFigure {
            name: "kube-runtime: store.state_filter(label == \"bench-7\")",
            ns: filter_ns,
            results: filter_n,
        },
        QueryFigure {
            name: "kube-runtime: store.state() + filter",
            ns: state_ns,
            results: state_n,
        },
    ])
}
