//! A first list streamed, page by page, into an informer's empty queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;
use tokio::sync::Notify;

use crate::fifo::{Entry, Fifo, QueueMode};
use crate::object::ObjectKey;
use crate::reflector::{Reflector, ReflectorOptions};
use crate::store::{Indexer, Indexers, KeyListerGetter, Writer};
use crate::test_support::*;

/// A lister-watcher whose first list is two pages at resourceVersion 10, `a@1 b@2`
/// then `c@3`, the second served once `release` is notified; a relist (from version
/// 10) answers `relisted` in one page at version 20. Its watches stay open.
fn two_pages(release: &Arc<Notify>, relisted: Vec<Pod>) -> Scripted {
    let release = Arc::clone(release);
    Scripted {
        list: Box::new(move |p| {
            let release = Arc::clone(&release);
            let (relist, continued) = (rv_of(p) == "10", p.continue_token.is_some());
            let relisted = relisted.clone();
            async move {
                if relist {
                    Ok(pod_list("20", None, relisted))
                } else if continued {
                    release.notified().await;
                    Ok(pod_list("10", None, vec![pod("c", "3")]))
                } else {
                    Ok(pod_list(
                        "10",
                        Some("next"),
                        vec![pod("a", "1"), pod("b", "2")],
                    ))
                }
            }
            .boxed()
        }),
        watch: Box::new(|_, _| futures::future::ready(Ok(pending_watch())).boxed()),
    }
}

each_queue!(
    #[tokio::test(start_paused = true)]
    first_list_streams_pages_into_an_empty_queue
);

/// The first list's pages reach an empty queue as they arrive: its consumer pops
/// page one while page two is still being served, each item marked as in the
/// initial list, and the queue syncs only once the list has ended (the in-order
/// queue marks the end with a bookmark at the list's resource version).
async fn first_list_streams_pages_into_an_empty_queue(mode: QueueMode) {
    let release = Arc::new(Notify::new());
    let lw = two_pages(&release, Vec::new());
    let (queue, r) = reflector_into_informer_queue(mode, lw, ReflectorOptions::default());
    let (cancel, task) = spawn_list_and_watch(&r);
    assert_pops(&queue, &["initial a: Replaced@1", "initial b: Replaced@2"]).await;
    assert!(!queue.has_synced(), "page two is still being served");
    assert_eq!(r.resource_version(), None);
    release.notify_one();
    assert_pops(
        &queue,
        per_mode(
            mode,
            &["initial c: Replaced@3"],
            &["initial c: Replaced@3", "initial Bookmark@10"],
        ),
    )
    .await;
    assert_syncs(&queue).await;
    assert_eq!(r.resource_version().as_deref(), Some("10"));
    cancel.cancel();
    task.await.unwrap().unwrap();
}

each_queue!(
    #[tokio::test(start_paused = true)]
    streamed_list_started_over_after_expired_continue_is_reconciled
);

/// A streamed list whose continue token expires starts over as one full list, which
/// the queue reconciles with what it streamed: per key an object the full
/// list lacks gets a tombstone, one it has gets its newer version; the in-order queue
/// hands over the full list whole, after what it streamed, for the consumer to
/// replace its cache with.
async fn streamed_list_started_over_after_expired_continue_is_reconciled(mode: QueueMode) {
    let lw = scripted(
        |p| {
            if p.continue_token.is_some() {
                Err(expired())
            } else if p.limit.is_none() {
                Ok(pod_list("20", None, vec![pod("b", "5"), pod("c", "6")]))
            } else {
                Ok(pod_list(
                    "10",
                    Some("next"),
                    vec![pod("a", "1"), pod("b", "2")],
                ))
            }
        },
        never_send,
    );
    let (queue, r) = reflector_into_informer_queue(mode, lw, ReflectorOptions::default());
    let (cancel, task) = spawn_list_and_watch(&r);
    eventually(|| r.resource_version().as_deref() == Some("20")).await;
    assert_pops(
        &queue,
        per_mode(
            mode,
            &[
                "initial a: Replaced@1, Deleted~@1",
                "initial b: Replaced@2, Replaced@5",
                "initial c: Replaced@6",
            ],
            &[
                "initial a: Replaced@1",
                "initial b: Replaced@2",
                "initial ReplacedAll@20 [b@5 c@6]",
            ],
        ),
    )
    .await;
    assert!(queue.has_synced());
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// A queue's cache as the informer fills it (the test applies what it pops), and
/// how many objects were looked up in it.
struct CountingCache {
    indexer: Indexer<Pod>,
    gets: AtomicUsize,
}

impl KeyListerGetter<Pod> for CountingCache {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.indexer.list_keys()
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<Pod>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.indexer.get(key)
    }

    fn is_empty(&self) -> bool {
        self.indexer.is_empty()
    }
}

each_queue!(
    #[tokio::test(start_paused = true)]
    only_a_relist_looks_listed_objects_up_in_the_cache
);

/// The first list into an empty queue looks none of its objects up in the cache,
/// though the cache fills while the list is read (every such lookup would miss); a
/// relist looks each of its objects up, and hands the queue the cached copy of an
/// unchanged one.
async fn only_a_relist_looks_listed_objects_up_in_the_cache(mode: QueueMode) {
    let release = Arc::new(Notify::new());
    let relisted = vec![pod("a", "1"), pod("b", "5"), pod("c", "3")];
    let lw = two_pages(&release, relisted);
    let mut writer = Writer::new(Indexers::new());
    let cache = Arc::new(CountingCache {
        indexer: writer.reader(),
        gets: AtomicUsize::new(0),
    });
    let queue = Arc::new(
        Fifo::new(mode)
            .cache_view(cache.clone())
            .emit_replaced(true),
    );
    let r = Arc::new(Reflector::with_queue(
        lw,
        Arc::clone(&queue),
        ReflectorOptions::default(),
    ));
    let first_list = tokio::spawn({
        let r = Arc::clone(&r);
        async move { r.list().await }
    });
    assert_pops(&queue, &["initial a: Replaced@1", "initial b: Replaced@2"]).await;
    // What the informer does with them: the cache is no longer empty.
    writer.add(Arc::new(pod("a", "1"))).unwrap();
    writer.add(Arc::new(pod("b", "2"))).unwrap();
    release.notify_one();
    first_list.await.unwrap().unwrap();
    assert_eq!(cache.gets.load(Ordering::SeqCst), 0, "first list");
    assert_pops(
        &queue,
        per_mode(
            mode,
            &["initial c: Replaced@3"],
            &["initial c: Replaced@3", "initial Bookmark@10"],
        ),
    )
    .await;
    writer.add(Arc::new(pod("c", "3"))).unwrap();
    let cached_a = cache.indexer.get(&ObjectKey::new(None, "a")).unwrap();

    r.list().await.unwrap();
    assert_eq!(
        cache.gets.load(Ordering::SeqCst),
        3,
        "relist: one per object"
    );
    let relisted_a = queue
        .pop_batch(1, |mut popped, _| match popped.pop().map(|p| p.entry) {
            Some(Entry::ReplacedAll { objects, .. }) => objects.first().cloned(),
            Some(Entry::Deltas(deltas)) => deltas.newest().map(|d| Arc::clone(d.object.object())),
            _ => None,
        })
        .await
        .unwrap();
    assert!(
        relisted_a.is_some_and(|a| Arc::ptr_eq(&a, &cached_a)),
        "unchanged: cached copy"
    );
}
