//! A first list streamed, page by page, into an empty DeltaFifo, as an informer
//! builds it.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use crate::fifo::DeltaType;
use crate::reflector::ReflectorOptions;
use crate::test_support::*;

/// The first list's pages reach an empty DeltaFifo as they arrive: its consumer pops
/// page one while page two is still being served, each item marked as in the
/// initial list, and the FIFO syncs only once the list has ended.
#[tokio::test(start_paused = true)]
async fn first_list_streams_pages_into_an_empty_delta_fifo() {
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
    let (fifo, r) = reflector_into_informer_fifo(lw, ReflectorOptions::default());
    let (cancel, task) = spawn_list_and_watch(&r);
    for name in ["a", "b"] {
        let item = pop(&fifo).await;
        assert_eq!(item.key.as_str(), name);
        assert!(item.is_in_initial_list);
        assert_eq!(
            item.deltas.iter().next().unwrap().delta_type,
            DeltaType::Replaced
        );
    }
    assert!(!fifo.has_synced(), "page two is still being served");
    assert_eq!(r.resource_version(), None);
    release.notify_one();
    let item = pop(&fifo).await;
    assert_eq!(item.key.as_str(), "c");
    assert!(item.is_in_initial_list);
    tokio::time::timeout(Duration::from_secs(1), fifo.wait_synced())
        .await
        .expect("synced once the list ended and its last item was popped");
    assert_eq!(r.resource_version().as_deref(), Some("10"));
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// A streamed list whose continue token expires starts over as one full list, which
/// the FIFO reconciles with what it streamed: an object the full list lacks gets a
/// tombstone, one it has gets its newer version.
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
    let (fifo, r) = reflector_into_informer_fifo(lw, ReflectorOptions::default());
    let (cancel, task) = spawn_list_and_watch(&r);
    eventually(|| r.resource_version().as_deref() == Some("20")).await;
    use DeltaType::{Deleted, Replaced};
    let mut popped = Vec::new();
    for _ in 0..3 {
        let item = pop(&fifo).await;
        let tombstone = item.deltas.iter().any(|d| d.object.is_tombstone());
        popped.push((item.key.to_string(), delta_summary(&item), tombstone));
    }
    assert_eq!(
        popped,
        [
            (
                "a".to_owned(),
                vec![(Replaced, "1".to_owned()), (Deleted, "1".to_owned())],
                true
            ),
            (
                "b".to_owned(),
                vec![(Replaced, "2".to_owned()), (Replaced, "5".to_owned())],
                false
            ),
            ("c".to_owned(), vec![(Replaced, "6".to_owned())], false),
        ]
    );
    assert!(fifo.has_synced());
    cancel.cancel();
    task.await.unwrap().unwrap();
}
