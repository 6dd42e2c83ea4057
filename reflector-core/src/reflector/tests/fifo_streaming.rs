//! A first list streamed, page by page, into an informer's empty queue.

use std::sync::Arc;

use futures::FutureExt;

use super::QUEUE;
use crate::reflector::ReflectorOptions;
use crate::test_support::*;

/// The first list's pages reach an empty queue as they arrive: its consumer pops
/// page one while page two is still being served, each item marked as in the
/// initial list, and the queue syncs only once the list has ended (the in-order
/// queue marks the end with a bookmark at the list's resource version).
#[tokio::test(start_paused = true)]
async fn first_list_streams_pages_into_an_empty_queue() {
    let release = Arc::new(tokio::sync::Notify::new());
    let lw = Scripted {
        list: Box::new({
            let release = Arc::clone(&release);
            move |p| {
                let release = Arc::clone(&release);
                let continued = p.continue_token.is_some();
                async move {
                    if continued {
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
            }
        }),
        watch: Box::new(|_, _| futures::future::ready(Ok(pending_watch())).boxed()),
    };
    let (queue, r) = reflector_into_informer_queue(QUEUE, lw, ReflectorOptions::default());
    let (cancel, task) = spawn_list_and_watch(&r);
    queue
        .assert_pops(&["initial a: Replaced@1", "initial b: Replaced@2"])
        .await;
    assert!(!queue.has_synced(), "page two is still being served");
    assert_eq!(r.resource_version(), None);
    release.notify_one();
    queue
        .assert_pops(queue.per_queue(
            &["initial c: Replaced@3"],
            &["initial c: Replaced@3", "initial Bookmark@10"],
        ))
        .await;
    queue.assert_syncs().await;
    assert_eq!(r.resource_version().as_deref(), Some("10"));
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// A streamed list whose continue token expires starts over as one full list, which
/// the queue reconciles with what it streamed: in the DeltaFifo an object the full
/// list lacks gets a tombstone, one it has gets its newer version; the in-order queue
/// hands over the full list whole, after what it streamed, for the consumer to
/// replace its cache with.
#[tokio::test(start_paused = true)]
async fn streamed_list_started_over_after_expired_continue_is_reconciled() {
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
    let (queue, r) = reflector_into_informer_queue(QUEUE, lw, ReflectorOptions::default());
    let (cancel, task) = spawn_list_and_watch(&r);
    eventually(|| r.resource_version().as_deref() == Some("20")).await;
    queue
        .assert_pops(queue.per_queue(
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
        ))
        .await;
    assert!(queue.has_synced());
    cancel.cancel();
    task.await.unwrap().unwrap();
}
