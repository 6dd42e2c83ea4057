//! A watch-list's initial events streamed into an informer's queue.

use kube::api::WatchEvent;

use crate::fifo::QueueMode;
use crate::reflector::tests::watch_list::watch_list_options;
use crate::test_support::*;

each_queue!(
    #[tokio::test(start_paused = true)]
    watch_list_initial_events_stream_into_an_empty_queue_before_the_bookmark
);

/// Into an empty informer, a watch-list's initial events are a streamed first list:
/// the consumer pops them before the initial-events-end bookmark comes (each marked
/// as in the initial list, with a `Replaced` delta), a `MODIFIED` or `DELETED` among
/// them follows as the key's next change (per key, under the key; in the
/// in-order queue, in the order it came) and is in the initial list too (a
/// `DELETED` reaches the queue as a deletion, which does not end the list), and the
/// queue syncs at the bookmark, whose resourceVersion the reflector takes.
async fn watch_list_initial_events_stream_into_an_empty_queue_before_the_bookmark(mode: QueueMode) {
    let (tx, stream) = fake_watch();
    let lw = scripted(no_list, watch_once(stream));
    let (queue, r) = reflector_into_informer_queue(mode, lw, watch_list_options());
    let (cancel, task) = spawn_list_and_watch(&r);
    send(&tx, [added("a", "1"), added("b", "2")]);
    assert_pops(&queue, &["initial a: Replaced@1", "initial b: Replaced@2"]).await;
    assert!(!queue.has_synced(), "the bookmark has not come");
    assert_eq!(r.resource_version(), None);
    send(
        &tx,
        [
            added("c", "3"),
            modified("c", "4"),
            WatchEvent::Deleted(pod("c", "5")),
            added("d", "6"),
            bookmark("6", true),
        ],
    );
    assert_pops(
        &queue,
        per_mode(
            mode,
            &[
                "initial c: Replaced@3, Replaced@4, Deleted@5",
                "initial d: Replaced@6",
            ],
            &[
                "initial c: Replaced@3",
                "initial c: Replaced@4",
                "initial c: Deleted@5",
                "initial d: Replaced@6",
                "initial Bookmark@6",
            ],
        ),
    )
    .await;
    assert_syncs(&queue).await;
    assert_eq!(r.resource_version().as_deref(), Some("6"));
    assert_eq!(r.stats().lists, 1);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

each_queue!(
    #[tokio::test(start_paused = true)]
    a_watch_list_cut_before_its_bookmark_is_reconciled_by_the_next
);

/// A watch-list that ends before its bookmark leaves what it streamed queued; the
/// next watch-list finds the queue no longer empty, collects its initial events and
/// `replace`s: the per-key queue infers the deletion of what the first streamed and the
/// second no longer holds; the in-order queue hands the second whole to the
/// consumer, after what the first streamed.
async fn a_watch_list_cut_before_its_bookmark_is_reconciled_by_the_next(mode: QueueMode) {
    let (_, watch) = counted_watch(|call| match call {
        0 => Ok(watch_of([added("a", "1"), added("b", "2")])),
        1 => Ok(watch_of([added("a", "3"), bookmark("3", true)])),
        _ => Ok(pending_watch()),
    });
    let lw = scripted(no_list, watch);
    let (queue, r) = reflector_into_informer_queue(mode, lw, watch_list_options());
    let (cancel, task) = spawn_list_and_watch(&r);
    assert_pops(
        &queue,
        per_mode(
            mode,
            &[
                "initial a: Replaced@1, Replaced@3",
                "initial b: Replaced@2, Deleted~@2",
            ],
            &[
                "initial a: Replaced@1",
                "initial b: Replaced@2",
                "initial ReplacedAll@3 [a@3]",
            ],
        ),
    )
    .await;
    assert_syncs(&queue).await;
    assert_eq!(r.resource_version().as_deref(), Some("3"));
    cancel.cancel();
    task.await.unwrap().unwrap();
}
