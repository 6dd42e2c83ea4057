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
        .pop_batch(3, |items| {
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
    let rest = fifo.pop_batch(10, |items| items.len()).await.unwrap();
    assert_eq!(rest, 2, "only what is queued");
    assert!(fifo.has_synced());
    fifo.add(cm(9)).unwrap();
    let after = fifo
        .pop_batch(0, |items| items[0].is_in_initial_list)
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
