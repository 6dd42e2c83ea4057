//! Tests of [`ItemDecoder`] on its own: the order batches come back in when they finish
//! out of order, a free worker taking the next queued batch by itself, the bound on the
//! bytes not yet handed back, what dropping or aborting it does to the batches in
//! flight, and an error in a later batch.
//!
//! Every interleaving is made by holding items of a [`Scripted`] decoder and letting them
//! go, never by timing: the test waits on the script's condition variable for what it
//! needs, and on [`wait_until`] for a batch's task to end.

use std::sync::Arc;

use futures::FutureExt;

use super::*;
use crate::listwatch::scripted_decode::{LetGo, Scripted, wait_until};

/// Decodes an item's bytes as a JSON number: the tests make item `i` the number `i`,
/// so a decoded batch shows which items it holds; anything else is
/// [`ListWatchError::DecodeItem`].
#[derive(Debug)]
struct Numbers;

impl DecodeItem<usize> for Numbers {
    fn decode(&self, index: usize, bytes: &[u8]) -> Result<usize, ListWatchError> {
        serde_json::from_slice(bytes).map_err(|source| ListWatchError::DecodeItem { index, source })
    }
}

/// An item decoder over [`Numbers`], scripted: `held` items wait until let go.
type Decoder = ItemDecoder<usize, Scripted<Numbers>>;

/// A decoder holding `held`, the script it shares, and the guard that lets every item
/// go when the test ends.
fn scripted(
    held: impl IntoIterator<Item = usize>,
) -> (Decoder, Arc<Scripted<Numbers>>, LetGo<Numbers>) {
    let (script, let_go) = Scripted::new(Numbers, held);
    (ItemDecoder::with(Arc::clone(&script)), script, let_go)
}

/// Gathers items `range` (each its index as JSON) and queues them as one batch, even
/// with a batch waiting for each worker when `force` is set.
fn batch(decoder: &mut Decoder, range: std::ops::Range<usize>, force: bool) {
    for i in range {
        decoder.push(i, i.to_string().as_bytes());
    }
    decoder.dispatch(force);
}

/// Item `i` as exactly `size` bytes: its index as JSON, padded with leading spaces.
fn padded(i: usize, size: usize) -> Vec<u8> {
    let number = i.to_string();
    let mut bytes = vec![b' '; size - number.len()];
    bytes.extend_from_slice(number.as_bytes());
    bytes
}

/// The batches in flight (queued or being decoded).
fn in_flight(decoder: &Decoder) -> usize {
    decoder.queue.in_flight.len()
}

/// The batches queued and not yet taken by a worker.
fn queued(decoder: &Decoder) -> usize {
    decoder.shared.lock().queue.len()
}

/// References to the script: the test's, the guard's, the decoder's (while it lives)
/// and one per worker still running.
fn holders(script: &Arc<Scripted<Numbers>>) -> usize {
    Arc::strong_count(script)
}

/// A later batch that finishes first is kept until every batch before it is returned:
/// nothing comes out while the first batch is held, then the batches come out in body
/// order.
#[tokio::test]
async fn batches_come_back_in_body_order_when_a_later_one_finishes_first() {
    let (mut decoder, script, _let_go) = scripted([0]);
    batch(&mut decoder, 0..10, true);
    batch(&mut decoder, 10..20, true);
    assert_eq!(in_flight(&decoder), 2);
    script.wait_for("the second batch is decoded, the first is on item 0", |s| {
        s.position(19).is_some() && s.begun == 11
    });
    assert!(!decoder.front_is_done(), "the first batch is held");
    for _ in 0..100 {
        assert!(
            decoder.next_done().now_or_never().is_none(),
            "nothing comes out before the first batch"
        );
    }
    assert_eq!(
        in_flight(&decoder),
        2,
        "waiting returned nothing and dropped nothing"
    );
    script.read(|s| {
        assert_eq!(s.position(0), None, "the first batch is not done");
        assert_eq!(s.begun, 11, "item 0 and the second batch, nothing more");
    });

    script.let_go(0);
    let first = decoder.next_done().await.expect("in flight").unwrap();
    assert_eq!(first, (0..10).collect::<Vec<_>>());
    let second = decoder.next_done().await.expect("in flight").unwrap();
    assert_eq!(second, (10..20).collect::<Vec<_>>());
    assert!(
        decoder.next_done().await.is_none(),
        "nothing else in flight"
    );
    assert!(decoder.is_idle());
    script.read(|s| {
        assert!(
            s.position(19) < s.position(0),
            "the second batch finished first"
        );
        assert_eq!(s.pooled, 20, "every item decoded on the pool");
    });
}

/// While the oldest batch is held, the other workers decode every batch queued after
/// it, one after another, with nothing handed back in between: a worker that is done
/// takes the next batch itself, without the reading task, and no more workers run
/// than there are cores.
#[tokio::test]
async fn a_free_worker_takes_the_next_queued_batch_while_the_oldest_is_held() {
    let (mut decoder, script, _let_go) = scripted([0]);
    for i in 0..6 {
        // Each item fills a batch, which goes out as it is pushed.
        decoder.push(i, &padded(i, BATCH_BYTES));
    }
    assert_eq!(in_flight(&decoder), 6);
    script.wait_for("every batch after the held one is decoded", |s| {
        (1..6).all(|i| s.position(i).is_some())
    });
    script.read(|s| {
        assert_eq!(s.begun, 6, "item 0 and the five later batches");
        assert_eq!(s.position(0), None);
    });
    assert_eq!(queued(&decoder), 0, "no batch is left waiting for a worker");
    let workers = decoder.shared.lock().workers;
    assert!((1..=max_workers()).contains(&workers), "{workers} workers");
    assert!(!decoder.front_is_done(), "the first batch is held");

    script.let_go(0);
    let mut items = Vec::new();
    while let Some(done) = decoder.next_done().await {
        items.extend(done.unwrap());
    }
    assert_eq!(items, (0..6).collect::<Vec<_>>());
}

/// A batch is queued as soon as it holds [`BATCH_BYTES`]; the bytes not yet handed
/// back (queued, decoded, gathered) make the decoder full exactly when they reach
/// [`MAX_UNDELIVERED_BYTES`], and handing back the oldest batch frees its bytes.
#[tokio::test]
async fn undelivered_bytes_make_it_full_until_the_oldest_batch_is_handed_back() {
    const ITEM: usize = 1024;
    let (mut decoder, script, _let_go) = scripted([0]);
    decoder.push(0, &padded(0, ITEM));
    decoder.dispatch(false);
    assert_eq!(
        in_flight(&decoder),
        1,
        "a worker is free: the item goes at once"
    );
    script.wait_for("the first batch is on its item", |s| s.begun == 1);

    let per_batch = BATCH_BYTES / ITEM;
    let last = MAX_UNDELIVERED_BYTES / ITEM - 1;
    for i in 1..=last {
        assert!(!decoder.is_full(), "{i} items pushed");
        decoder.push(i, &padded(i, ITEM));
        assert_eq!(
            in_flight(&decoder),
            1 + i / per_batch,
            "a batch goes out whenever it holds BATCH_BYTES"
        );
    }
    assert_eq!(decoder.pending_bytes(), (last % per_batch) * ITEM);
    assert!(decoder.is_full(), "full at MAX_UNDELIVERED_BYTES");

    script.let_go(0);
    assert_eq!(decoder.next_done().await.expect("in flight").unwrap(), [0]);
    assert!(
        !decoder.is_full(),
        "the oldest batch's bytes are handed back"
    );
    assert_eq!(
        decoder.next_done().await.expect("in flight").unwrap(),
        (1..=per_batch).collect::<Vec<_>>(),
        "a batch of BATCH_BYTES"
    );
    decoder.dispatch(true);
    assert_eq!(decoder.pending_bytes(), 0);
    let mut items = (0..=per_batch).collect::<Vec<_>>();
    while let Some(done) = decoder.next_done().await {
        items.extend(done.unwrap());
    }
    assert_eq!(items, (0..=last).collect::<Vec<_>>());
}

/// With every worker held and a batch waiting for each, the items gathered stay
/// gathered (to join a fuller batch) unless forced out; once a worker takes a waiting
/// batch, they are queued.
#[tokio::test]
async fn gathered_items_wait_while_every_worker_has_a_batch_waiting() {
    let cores = max_workers();
    let held: Vec<usize> = (0..cores).map(|i| i * 10).collect();
    let (mut decoder, script, _let_go) = scripted(held.clone());
    for &start in &held {
        batch(&mut decoder, start..start + 10, true);
    }
    script.wait_for("every worker is on a held item", |s| s.begun == cores);
    let next = cores * 10;
    for i in 0..cores {
        batch(&mut decoder, next + i..next + i + 1, true);
    }
    assert_eq!(queued(&decoder), cores);
    let gathered = next + cores;
    decoder.push(gathered, gathered.to_string().as_bytes());
    decoder.dispatch(false);
    assert_eq!(in_flight(&decoder), 2 * cores, "not queued");
    assert!(decoder.pending_bytes() > 0);

    script.let_go(0);
    wait_until("a worker has taken a waiting batch", || {
        queued(&decoder) < cores
    });
    decoder.dispatch(false);
    assert_eq!(in_flight(&decoder), 2 * cores + 1, "queued");
    assert_eq!(decoder.pending_bytes(), 0);

    held.iter().for_each(|&i| script.let_go(i));
    let mut items = Vec::new();
    while let Some(done) = decoder.next_done().await {
        items.extend(done.unwrap());
    }
    assert_eq!(items, (0..=gathered).collect::<Vec<_>>());
}

/// Two batches held at their first item, the body's next items gathered: `stop` makes
/// the decoder let go of them, and each batch, once its item is let go, stops before its
/// next one and lets go of the shared decoder.
async fn batches_in_flight_stop(stop: impl FnOnce(Decoder) -> Option<Decoder>) {
    let (mut decoder, script, _let_go) = scripted([0, 10]);
    batch(&mut decoder, 0..10, true);
    batch(&mut decoder, 10..20, true);
    decoder.push(20, b"20");
    script.wait_for("both batches are on their first item", |s| s.begun == 2);
    assert_eq!(
        holders(&script),
        5,
        "the test, the guard, the decoder, two workers"
    );

    let decoder = stop(decoder);
    let kept = usize::from(decoder.is_some());
    assert_eq!(holders(&script), 4 + kept, "the workers still hold it");
    script.let_go(0);
    script.wait_for("item 0 is decoded", |s| s.position(0).is_some());
    script.let_go(10);
    script.wait_for("item 10 is decoded", |s| s.position(10).is_some());
    wait_until("both workers have ended", || holders(&script) == 2 + kept);
    script.read(|s| {
        assert_eq!(s.begun, 2, "no item after the held ones");
        assert_eq!(s.done, [0, 10]);
    });
    if let Some(mut decoder) = decoder {
        assert!(decoder.is_idle());
        assert_eq!(decoder.pending_bytes(), 0, "the gathered item is dropped");
        assert!(decoder.next_done().await.is_none(), "nothing comes out");
    }
}

/// Dropping the decoder stops every batch in flight before its next item.
#[tokio::test]
async fn dropping_the_decoder_stops_the_batches_in_flight() {
    batches_in_flight_stop(|decoder| {
        drop(decoder);
        None
    })
    .await;
}

/// [`ItemDecoder::abort`] drops what is gathered and in flight, and every batch in
/// flight stops before its next item.
#[tokio::test]
async fn abort_stops_the_batches_in_flight() {
    batches_in_flight_stop(|mut decoder| {
        decoder.abort();
        assert!(decoder.is_idle(), "nothing gathered or in flight");
        Some(decoder)
    })
    .await;
}

/// An item that does not decode in a later batch, finished before the first: the
/// batches before it come out first, then its error, and then nothing: the batch
/// after it (held) stops and the items gathered are dropped.
#[tokio::test]
async fn an_error_in_a_later_batch_is_the_last_thing_out() {
    let (mut decoder, script, _let_go) = scripted([0, 20]);
    batch(&mut decoder, 0..10, true);
    for i in 10..20 {
        let bytes = if i == 15 {
            b"x".to_vec()
        } else {
            i.to_string().into_bytes()
        };
        decoder.push(i, &bytes);
    }
    decoder.dispatch(true);
    batch(&mut decoder, 20..30, true);
    decoder.push(30, b"30");
    assert_eq!(in_flight(&decoder), 3);
    script.wait_for(
        "the second batch has failed, the third is on its held item",
        |s| s.position(15).is_some() && s.begun == 1 + 6 + 1,
    );
    assert!(
        decoder.next_done().now_or_never().is_none(),
        "the first batch is held"
    );

    script.let_go(0);
    let first = decoder.next_done().await.expect("in flight").unwrap();
    assert_eq!(first, (0..10).collect::<Vec<_>>());
    let error = decoder.next_done().await.expect("in flight").unwrap_err();
    assert!(
        matches!(error, ListWatchError::DecodeItem { index: 15, .. }),
        "{error:?}"
    );
    assert!(
        decoder.is_idle(),
        "the third batch and the gathered item are dropped"
    );
    assert_eq!(decoder.pending_bytes(), 0);
    assert!(
        decoder.next_done().await.is_none(),
        "nothing after the error"
    );

    script.let_go(20);
    script.wait_for("the third batch's held item is decoded", |s| {
        s.position(20).is_some()
    });
    wait_until("the workers have ended", || holders(&script) == 3);
    script.read(|s| {
        assert_eq!(s.position(16), None, "the bad item's batch stops there");
        assert_eq!(s.position(21), None, "the batch after the error stops");
        assert_eq!(s.begun, 10 + 6 + 1);
    });
}

/// Panics at item 3 and decodes every other item as [`Numbers`] does.
#[derive(Debug)]
struct PanicsAtThree;

impl DecodeItem<usize> for PanicsAtThree {
    fn decode(&self, index: usize, bytes: &[u8]) -> Result<usize, ListWatchError> {
        assert_ne!(index, 3, "a decode that panics");
        Numbers.decode(index, bytes)
    }
}

/// A decode that panics on a worker panics where its batch is handed back, with the
/// same message; the worker lives on, and the batch after it still comes out.
#[tokio::test]
async fn a_panic_in_a_decode_is_resumed_where_its_batch_is_handed_back() {
    let mut decoder: ItemDecoder<usize, PanicsAtThree> = ItemDecoder::with(Arc::new(PanicsAtThree));
    for i in 0..5 {
        decoder.push(i, i.to_string().as_bytes());
    }
    decoder.dispatch(true);
    for i in 5..10 {
        decoder.push(i, i.to_string().as_bytes());
    }
    decoder.dispatch(true);
    let panic = std::panic::AssertUnwindSafe(decoder.next_done())
        .catch_unwind()
        .await
        .expect_err("the first batch panicked");
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default();
    assert!(message.contains("a decode that panics"), "{message:?}");
    let second = decoder.next_done().await.expect("in flight").unwrap();
    assert_eq!(second, (5..10).collect::<Vec<_>>());
    assert!(decoder.next_done().await.is_none());
}
