//! First lists streamed in page by page into an empty FIFO.

use crate::fifo::DeltaType;
use crate::store::{SinkError, StoreSink};

use crate::test_support::*;
use DeltaType::Replaced;

/// The pages of a first list into an empty FIFO are poppable as they come, each item
/// marked as in the initial list; `has_synced` waits for the list's end and then for
/// every item still queued.
#[tokio::test(start_paused = true)]
async fn delta_fifo_streamed_first_list_pops_before_it_ends() {
    let f = fifo_known_replaced(vec![]);
    let (a, b, c, e) = (mk("a", 1), mk("b", 2), mk("c", 3), mk("e", 4));
    assert!(f.stream_list_page(&[a.clone(), b.clone()], true).unwrap());
    let first = pop(&f).await;
    assert_eq!(first.key.as_str(), "a");
    assert_eq!(first.deltas, deltas(vec![d(Replaced, &a)]));
    assert!(first.is_in_initial_list);
    assert!(!f.has_synced(), "the list has not ended");
    assert!(f.stream_list_page(std::slice::from_ref(&c), false).unwrap());
    f.finish_list_stream(vec![e.clone()], "9").unwrap();
    assert!(!f.has_synced(), "b, c and e are still queued");
    for (name, obj) in [("b", &b), ("c", &c), ("e", &e)] {
        let item = pop(&f).await;
        assert_eq!(item.key.as_str(), name);
        assert_eq!(item.deltas, deltas(vec![d(Replaced, obj)]));
        assert!(item.is_in_initial_list);
    }
    assert!(f.has_synced());
    assert_nothing_to_pop(&f).await;
}

/// Only a first list into an empty FIFO streams: not after a `replace` or an `add`,
/// not with known objects, not a page whose list's first page was refused.
#[tokio::test(start_paused = true)]
async fn delta_fifo_stream_refused_unless_first_list_into_empty_fifo() {
    let page = [mk("x", 1)];
    let replaced = fifo_known_replaced(vec![]);
    replaced.replace(vec![], "1").unwrap();
    assert!(!replaced.stream_list_page(&page, true).unwrap());

    let added = fifo_known_replaced(vec![]);
    added.add(mk("a", 1)).unwrap();
    assert!(!added.stream_list_page(&page, true).unwrap());

    let known = fifo_known_replaced(vec![mk("k", 1)]);
    assert!(!known.stream_list_page(&page, true).unwrap());

    let no_first_page = fifo_known_replaced(vec![]);
    assert!(!no_first_page.stream_list_page(&page, false).unwrap());
    assert!(no_first_page.is_empty());

    let closed = fifo_known_replaced(vec![]);
    closed.close();
    assert_eq!(closed.stream_list_page(&page, true), Err(SinkError::Closed));
}

/// A streamed list that is abandoned (its next page failed) is reconciled by the
/// next list's `replace`: streamed objects the new list lacks get a tombstone, the
/// ones it has get its version, and the initial population is everything queued.
#[tokio::test(start_paused = true)]
async fn delta_fifo_abandoned_stream_is_reconciled_by_replace() {
    let f = fifo_known_replaced(vec![]);
    let (a, b) = (mk("a", 1), mk("b", 2));
    assert!(f.stream_list_page(&[a.clone(), b.clone()], true).unwrap());
    // The list starts over; its first page finds the FIFO no longer empty.
    let (b2, c) = (mk("b", 3), mk("c", 4));
    assert!(!f.stream_list_page(&[b2.clone(), c.clone()], true).unwrap());
    f.replace(vec![b2.clone(), c.clone()], "9").unwrap();
    assert_drains(
        "streamed list",
        &f,
        vec![
            deltas(vec![d(Replaced, &a), tomb("a", &a)]),
            deltas(vec![d(Replaced, &b), d(Replaced, &b2)]),
            deltas(vec![d(Replaced, &c)]),
        ],
    )
    .await;
    assert!(f.has_synced());
}

/// A deletion while a first list streams in (a `DELETED` among a watch-list's
/// initial events) belongs to that list: it does not sync the FIFO, and is popped
/// with the key's listed state, in the initial list.
#[tokio::test(start_paused = true)]
async fn delta_fifo_deletion_during_a_streamed_first_list_does_not_sync() {
    let f = fifo_known_replaced(vec![]);
    let (a, b) = (mk("a", 1), mk("b", 2));
    assert!(f.stream_list_page(&[a.clone(), b.clone()], true).unwrap());
    f.delete(a.clone()).unwrap();
    assert!(!f.has_synced(), "the list has not ended");
    f.finish_list_stream(vec![], "9").unwrap();
    assert!(!f.has_synced(), "a and b are still queued");
    for (name, want) in [
        (
            "a",
            deltas(vec![d(Replaced, &a), d(DeltaType::Deleted, &a)]),
        ),
        ("b", deltas(vec![d(Replaced, &b)])),
    ] {
        let item = pop(&f).await;
        assert_eq!((item.key.as_str(), &item.deltas), (name, &want));
        assert!(item.is_in_initial_list, "{name}");
    }
    assert!(f.has_synced());
}

/// As `delta_fifo_deletion_during_a_streamed_first_list_does_not_sync`, for the
/// in-order FIFO: the deletion is an entry of the initial list, in its place.
#[tokio::test(start_paused = true)]
async fn in_order_deletion_during_a_streamed_first_list_does_not_sync() {
    let f = in_order(vec![]);
    let (a, b) = (mk("a", 1), mk("b", 2));
    assert!(f.stream_list_page(&[a.clone(), b], true).unwrap());
    f.delete(a).unwrap();
    assert!(!f.has_synced(), "the list has not ended");
    f.finish_list_stream(vec![], "9").unwrap();
    let mut popped = Vec::new();
    while !f.is_empty() {
        assert!(!f.has_synced(), "entries of the list are still queued");
        popped.push(f.pop(|e, initial| (show(&e), initial)).await.unwrap());
    }
    let want = ["Replaced a=1", "Replaced b=2", "Deleted a=1", "Bookmark@9"];
    assert_eq!(popped, want.map(|s| (s.to_owned(), true)));
    assert!(f.has_synced());
}
