//! Indexers on a running informer (client-go's TestIndexer).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::fifo::QueueMode;
use crate::informer::*;
use crate::listwatch::FakeSource;
use crate::store::Indexers;

use crate::test_support::*;

each_queue!(
    #[tokio::test(start_paused = true)]
    indexer
);

/// TestIndexer: by_index works after sync, after later adds, and for an indexer
/// added while the informer runs (existing objects are indexed).
async fn indexer(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    source.add(labelled("a", "app", "web"));
    source.add(labelled("b", "app", "db"));
    let informer = SharedIndexInformer::with_options(
        source.clone(),
        InformerOptions::default()
            .queue(queue)
            .indexers(Indexers::new().with("by_app", |p: &Pod| {
                p.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("app").cloned())
                    .into_iter()
                    .collect()
            })),
    );
    let running = start(&informer);
    informer.wait_synced().await.unwrap();
    let names = |v: Vec<Arc<Pod>>| -> BTreeSet<String> {
        v.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
    };
    assert_eq!(
        names(informer.lister().by_index("by_app", "web").unwrap()),
        set(&["a"])
    );

    source.add(labelled("c", "app", "web"));
    eventually(|| informer.lister().by_index("by_app", "web").unwrap().len() == 2).await;

    informer
        .add_indexers(Indexers::new().with("by_name_len", |p: &Pod| {
            vec![p.metadata.name.as_deref().unwrap_or("").len().to_string()]
        }))
        .unwrap();
    assert_eq!(
        names(informer.lister().by_index("by_name_len", "1").unwrap()),
        set(&["a", "b", "c"])
    );
    assert!(matches!(
        informer.add_indexers(Indexers::new().with("by_app", |_: &Pod| vec![])),
        Err(InformerError::Store(_))
    ));
    assert_eq!(informer.lister().list_namespace("ns").len(), 3);
    running.stop().await;
}
