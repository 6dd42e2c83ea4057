//! Unit tests of `pop_batch` and of the room a drained FIFO gives back.
use k8s_openapi::api::core::v1::ConfigMap;

use super::*;

fn cm(i: usize) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("cm-{i}"));
    Arc::new(cm)
}

/// `pop_batch` hands over at most `max` items in queue order, each marked as
/// part of the initial list, and `has_synced` turns true only with the batch
/// holding the last initial item.
#[tokio::test]
async fn pop_batch_takes_up_to_max_in_order() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.replace((0..5).map(cm).collect(), "1").unwrap();
    let first = fifo
        .pop_batch(3, |items, _| {
            items
                .iter()
                .map(|i| (i.key.to_string(), i.is_in_initial_list))
                .collect::<Vec<_>>()
        })
        .await
        .unwrap();
    let want: Vec<(String, bool)> = (0..3).map(|i| (format!("cm-{i}"), true)).collect();
    assert_eq!(first, want);
    assert!(!fifo.has_synced());
    let rest = fifo.pop_batch(10, |items, _| items.len()).await.unwrap();
    assert_eq!(rest, 2, "only what is queued");
    assert!(fifo.has_synced());
    fifo.add(cm(9)).unwrap();
    let after = fifo
        .pop_batch(0, |items, _| items[0].is_in_initial_list)
        .await
        .unwrap();
    assert!(!after, "max 0 pops one, outside the initial list");
}

/// After a large list is drained the FIFO gives its room back; short queues
/// (watch traffic) keep theirs.
#[tokio::test]
async fn drained_fifo_frees_the_room_of_a_large_list() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.replace((0..10_000).map(cm).collect(), "1").unwrap();
    assert!(fifo.lock().queue.capacity() >= 10_000);
    for _ in 0..10_000 {
        fifo.pop(|_, _| ()).await.unwrap();
    }
    let (queue, items) = {
        let state = fifo.lock();
        (state.queue.capacity(), state.items.capacity())
    };
    assert!(queue <= SHRINK_ABOVE, "{queue}");
    assert!(items <= SHRINK_ABOVE, "{items}");

    for i in 0..100 {
        fifo.add(cm(i)).unwrap();
    }
    let grown = fifo.lock().queue.capacity();
    for _ in 0..100 {
        fifo.pop(|_, _| ()).await.unwrap();
    }
    assert_eq!(
        fifo.lock().queue.capacity(),
        grown,
        "short queues keep their room"
    );
}

fn cm_at(i: usize, rv: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("cm-{i}"));
    cm.metadata.resource_version = Some(rv.to_owned());
    Arc::new(cm)
}

/// The watermark a batch answers (the seam to the store's resource version): the
/// handed-over version, only from a batch that leaves the queue empty, once per
/// change; a version handed over while nothing is queued comes in a batch of no
/// items.
#[tokio::test]
async fn stale_watermark_only_from_a_batch_that_drains_the_queue() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.replace((0..3).map(|i| cm_at(i, "5")).collect(), "7")
        .unwrap();
    let first = fifo
        .pop_batch(2, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(first, (2, None), "one item is still queued");
    let last = fifo
        .pop_batch(2, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(last, (1, Some("7".to_owned())), "the list is applied");

    // Events handed over, then their run's version: answered once drained.
    fifo.add(cm_at(4, "8")).unwrap();
    fifo.update(cm_at(0, "9")).unwrap();
    fifo.handed_over("9");
    let both = fifo
        .pop_batch(10, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(both, (2, Some("9".to_owned())));

    // A bookmark while idle: a batch of no items carries it, once.
    fifo.handed_over("12");
    let bookmark = fifo
        .pop_batch(10, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(bookmark, (0, Some("12".to_owned())));
    fifo.handed_over("12");
    fifo.add(cm_at(5, "13")).unwrap();
    let no_news = fifo
        .pop_batch(10, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(
        no_news,
        (1, None),
        "12 was answered already; 13 not handed over"
    );

    // A plain pop never answers a watermark nor returns without an item.
    fifo.handed_over("14");
    fifo.add(cm_at(6, "15")).unwrap();
    assert_eq!(fifo.pop(|d, _| d.len()).await.unwrap(), 1);
    let after = fifo
        .pop_batch(10, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(after, (0, Some("14".to_owned())));
}

/// A version handed over while the queue still holds a key handed over earlier
/// is answered only by the batch that empties the queue, whatever the order of
/// keys inside it (a `DeltaFifo` queues per key, so a partly drained queue says
/// nothing about the versions behind it).
#[tokio::test]
async fn stale_watermark_waits_for_keys_queued_before_it() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.add(cm_at(1, "10")).unwrap();
    fifo.add(cm_at(2, "11")).unwrap();
    fifo.update(cm_at(1, "12")).unwrap();
    fifo.handed_over("12");
    let first = fifo
        .pop_batch(1, |items, w| (items[0].deltas.len(), w))
        .await
        .unwrap();
    assert_eq!(
        first,
        (2, None),
        "cm-1's 10 and 12 are applied, cm-2's 11 is not"
    );
    let second = fifo
        .pop_batch(1, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(second, (1, Some("12".to_owned())));
}
