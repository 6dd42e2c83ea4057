//! Tests of [`ItemDecoder`] on its own: the order batches come back in when they finish
//! out of order, the bound on the bytes gathered while every core decodes, what dropping
//! or aborting it does to the batches in flight, and an error in a later batch.
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

/// Gathers items `range` (each its index as JSON) and hands them out as one batch,
/// forced past the limit of batches in flight when `force` is set.
fn batch(decoder: &mut Decoder, range: std::ops::Range<usize>, force: bool) {
    for i in range {
        decoder.push(i, i.to_string().as_bytes());
    }
    decoder.dispatch(force);
}

/// Item `i` as exactly `size` bytes: its index as JSON, padded with leading spaces.
fn padded(i: usize, size: usize) -> Vec<u8> {
    format!("{i:>size$}").into_bytes()
}

/// The batches in flight.
fn in_flight(decoder: &Decoder) -> usize {
    decoder.queue.in_flight.len()
}

/// References to the script: the test's, the guard's, the decoder's (while it lives)
/// and one per batch task still running.
fn holders(script: &Arc<Scripted<Numbers>>) -> usize {
    Arc::strong_count(script)
}

/// A later batch that finishes first is kept until every batch before it is returned:
/// nothing comes out while the first batch is held, then the batches come out in body
/// order.
#[tokio::test]
async fn batches_come_back_in_body_order_when_a_later_one_finishes_first() {
    let (mut decoder, script, _let_go) = scripted([0]);
    batch(&mut decoder, 0..10, false);
    batch(&mut decoder, 10..20, false);
    assert_eq!(in_flight(&decoder), 2, "a batch per core, at least two");
    script.wait_for("the second batch is decoded, the first is on item 0", |s| {
        s.position(19).is_some() && s.begun == 11
    });
    wait_until("the second batch's task has ended", || {
        decoder.queue.in_flight[1].is_finished()
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

/// With a batch in flight per core, the bytes gathered meanwhile make the decoder full
/// exactly when they reach [`MAX_PENDING_BYTES`]; until a batch is returned, dispatch
/// hands out no more batches unless forced, and a returned batch frees a core for the
/// gathered one.
#[tokio::test]
async fn gathered_bytes_make_it_full_while_every_core_decodes() {
    const ITEM: usize = 1024;
    let cores = max_in_flight();
    // One batch per core, each a single item, held.
    let (mut decoder, script, _let_go) = scripted(0..cores);
    for i in 0..cores {
        batch(&mut decoder, i..i + 1, false);
    }
    assert_eq!(in_flight(&decoder), cores);
    script.wait_for("every core's batch is on its item", |s| s.begun == cores);

    let per_batch = MAX_PENDING_BYTES / ITEM;
    for n in 0..per_batch {
        assert!(!decoder.is_full(), "{n} items gathered");
        decoder.push(cores + n, &padded(cores + n, ITEM));
        assert_eq!(decoder.pending_bytes(), (n + 1) * ITEM);
        decoder.dispatch(false);
        assert_eq!(in_flight(&decoder), cores, "no core is free");
    }
    assert_eq!(decoder.pending_bytes(), MAX_PENDING_BYTES);
    assert!(decoder.is_full(), "full at MAX_PENDING_BYTES");
    // The reading side stops here; an item pushed anyway joins the gathered batch.
    let last = cores + per_batch;
    decoder.push(last, &padded(last, ITEM));
    decoder.dispatch(false);
    assert_eq!(in_flight(&decoder), cores);
    assert_eq!(decoder.pending_bytes(), MAX_PENDING_BYTES + ITEM);
    assert!(decoder.is_full());

    // The oldest batch comes back: a core is free, so the decoder is no longer full and
    // the gathered batch goes out whole.
    script.let_go(0);
    assert_eq!(decoder.next_done().await.expect("in flight").unwrap(), [0]);
    assert_eq!(in_flight(&decoder), cores - 1);
    assert!(!decoder.is_full(), "a core is free");
    decoder.dispatch(false);
    assert_eq!(in_flight(&decoder), cores);
    assert_eq!(decoder.pending_bytes(), 0);

    // Full again, then forced out (the body has ended) past the limit.
    for i in last + 1..=last + per_batch {
        decoder.push(i, &padded(i, ITEM));
    }
    assert!(decoder.is_full());
    decoder.dispatch(true);
    assert_eq!(in_flight(&decoder), cores + 1, "forced past the limit");
    assert_eq!(decoder.pending_bytes(), 0);
    assert!(!decoder.is_full());

    (1..cores).for_each(|i| script.let_go(i));
    let mut items = vec![0];
    while let Some(done) = decoder.next_done().await {
        items.extend(done.unwrap());
    }
    assert_eq!(items, (0..=last + per_batch).collect::<Vec<_>>());
}

/// Two batches held at their first item, the body's next items gathered: `stop` makes
/// the decoder let go of them, and each batch, once its item is let go, stops before its
/// next one and lets go of the shared decoder.
async fn batches_in_flight_stop(stop: impl FnOnce(Decoder) -> Option<Decoder>) {
    let (mut decoder, script, _let_go) = scripted([0, 10]);
    batch(&mut decoder, 0..10, false);
    batch(&mut decoder, 10..20, false);
    decoder.push(20, b"20");
    script.wait_for("both batches are on their first item", |s| s.begun == 2);
    assert_eq!(
        holders(&script),
        5,
        "the test, the guard, the decoder, two tasks"
    );

    let decoder = stop(decoder);
    let kept = usize::from(decoder.is_some());
    assert_eq!(holders(&script), 4 + kept, "the tasks still hold it");
    script.let_go(0);
    script.wait_for("item 0 is decoded", |s| s.position(0).is_some());
    script.let_go(10);
    script.wait_for("item 10 is decoded", |s| s.position(10).is_some());
    wait_until("both tasks have ended", || holders(&script) == 2 + kept);
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
    batch(&mut decoder, 0..10, false);
    for i in 10..20 {
        let bytes = if i == 15 {
            b"x".to_vec()
        } else {
            i.to_string().into_bytes()
        };
        decoder.push(i, &bytes);
    }
    decoder.dispatch(false);
    batch(&mut decoder, 20..30, true);
    decoder.push(30, b"30");
    assert_eq!(in_flight(&decoder), 3);
    script.wait_for("the second batch has reached its bad item", |s| {
        s.position(15).is_some() && s.begun == 1 + 6 + 1
    });
    wait_until("the second batch's task has ended", || {
        decoder.queue.in_flight[1].is_finished()
    });
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
    wait_until("the third batch's task has ended", || holders(&script) == 3);
    script.read(|s| {
        assert_eq!(s.position(16), None, "the bad item's batch stops there");
        assert_eq!(s.position(21), None, "the batch after the error stops");
        assert_eq!(s.begun, 10 + 6 + 1);
    });
}
