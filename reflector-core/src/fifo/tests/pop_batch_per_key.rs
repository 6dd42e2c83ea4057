//! The per-key mode's batch pops, the room a drained queue gives back, and the
//! consumer's watermark under churn of other keys.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::state::SHRINK_ABOVE;
use crate::fifo::{Fifo, QueueMode};
use crate::store::StoreSink;

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
    let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
    fifo.replace((0..5).map(cm).collect(), "1").unwrap();
    let first = fifo
        .pop_batch(3, |items, _| {
            items
                .iter()
                .map(|i| (i.key.as_ref().unwrap().to_string(), i.is_in_initial_list))
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
    let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
    fifo.replace((0..10_000).map(cm).collect(), "1").unwrap();
    assert!(fifo.lock().queue.capacity() >= 10_000);
    for _ in 0..10_000 {
        fifo.pop(|_, _| ()).await.unwrap();
    }
    let (queue, items) = {
        let state = fifo.lock();
        (state.queue.capacity(), state.positions.capacity())
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
    let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
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
    let no_news = fifo.pop_batch(10, |items, w| (items.len(), w));
    let no_news = tokio::time::timeout(std::time::Duration::from_secs(1), no_news).await;
    assert!(no_news.is_err(), "12 was answered already: nothing to pop");
    // An event's own version is handed over with it.
    fifo.add(cm_at(5, "13")).unwrap();
    let event = fifo
        .pop_batch(10, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(event, (1, Some("13".to_owned())));

    // A plain pop never answers a watermark nor returns without an item.
    fifo.handed_over("14");
    fifo.add(cm_at(6, "15")).unwrap();
    assert_eq!(fifo.pop(|e, _| e.deltas().unwrap().len()).await.unwrap(), 1);
    let after = fifo
        .pop_batch(10, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(after, (0, Some("15".to_owned())));
}

/// The watermark moves with every batch, to the version handed over last before
/// the oldest change still queued: a key whose changes joined its entry is applied
/// whole, so its later change counts once its entry is popped; a change of another
/// key queued between stays unapplied until its own entry is.
#[tokio::test]
async fn per_key_watermark_stops_before_the_oldest_change_still_queued() {
    let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
    fifo.add(cm_at(1, "10")).unwrap();
    fifo.add(cm_at(2, "11")).unwrap();
    fifo.update(cm_at(1, "12")).unwrap();
    fifo.handed_over("12");
    let first = fifo
        .pop_batch(1, |items, w| (items[0].entry.deltas().unwrap().len(), w))
        .await
        .unwrap();
    assert_eq!(
        first,
        (2, Some("10".to_owned())),
        "cm-1's 10 and 12 are applied, cm-2's 11 is not"
    );
    let second = fifo
        .pop_batch(1, |items, w| (items.len(), w))
        .await
        .unwrap();
    assert_eq!(second, (1, Some("12".to_owned())));
}

/// Under steady churn of other keys — the queue never drains — the watermark still
/// reaches a write's version with the batch that applies the write's entry (what a
/// read-your-writes wait for it is released by), and keeps up with every batch.
#[tokio::test]
async fn per_key_watermark_reaches_a_write_under_churn_of_other_keys() {
    let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
    let mut rv = 100_usize;
    // A run of `n` updates to other keys (`cm-10` to `cm-59`), then its hand-over.
    let churn = |rv: &mut usize, n: usize| {
        for k in 0..n {
            *rv += 1;
            fifo.update(cm_at(10 + k % 50, &rv.to_string())).unwrap();
        }
        fifo.handed_over(&rv.to_string());
    };
    churn(&mut rv, 20);
    rv += 1;
    let write_rv = rv;
    fifo.update(cm_at(1, &write_rv.to_string())).unwrap();
    let mut reached = Vec::new();
    for _ in 0..10 {
        churn(&mut rv, 10);
        let (applied_write, watermark) = fifo
            .pop_batch(8, |items, w| {
                let write = items
                    .iter()
                    .any(|p| p.key.as_ref().unwrap().name() == "cm-1");
                (write, w.map(|w| w.parse::<usize>().unwrap()))
            })
            .await
            .unwrap();
        assert!(!fifo.is_empty(), "the churn keeps the queue from draining");
        reached.push(watermark);
        if applied_write {
            assert!(
                watermark.is_some_and(|w| w >= write_rv),
                "the batch that applied the write reached {watermark:?}, not {write_rv}"
            );
            return;
        }
    }
    panic!("the write's entry was never popped: {reached:?}");
}
