//! The per-key queue's watermark at a relist and at a streamed first list: a list's
//! version only once every entry it queued is applied (beside the event, bookmark
//! and churn cases in `pop_batch_per_key.rs`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::Fifo;
use crate::store::StoreSink;
use crate::test_support::*;

/// A ConfigMap `name` at resource version `rv`.
fn at(name: &str, rv: &str) -> Obj {
    let mut cm = Arc::unwrap_or_clone(mk(name, rv));
    cm.metadata.resource_version = Some(rv.to_owned());
    Arc::new(cm)
}

/// Pops a batch of up to `max`: how many items, and its watermark.
async fn batch(f: &Fifo<ConfigMap>, max: usize) -> (usize, Option<String>) {
    f.pop_batch(max, |items, w| (items.len(), w)).await.unwrap()
}

/// A relist moves the watermark to the list's version only once its items and the
/// deletions it inferred (queued behind them) are all popped.
#[tokio::test(start_paused = true)]
async fn delta_fifo_watermark_waits_for_a_relists_tombstones() {
    let f = fifo_known(vec![mk("gone", "1")]);
    f.replace(vec![at("a", "15"), at("b", "16")], "40").unwrap();
    assert_eq!(
        batch(&f, 2).await,
        (2, None),
        "the tombstone of gone is queued"
    );
    assert_eq!(batch(&f, 2).await, (1, Some("40".to_owned())));
}

/// The pages of a streamed first list move nothing; the end of the list does.
#[tokio::test(start_paused = true)]
async fn delta_fifo_watermark_of_a_streamed_list_waits_for_its_end() {
    let f = fifo();
    assert!(f.stream_list_page(&[at("a", "7")], true).unwrap());
    assert_eq!(batch(&f, 10).await, (1, None), "the list has not ended");
    f.finish_list_stream(vec![at("b", "3")], "9").unwrap();
    assert_eq!(batch(&f, 10).await, (1, Some("9".to_owned())));
}
