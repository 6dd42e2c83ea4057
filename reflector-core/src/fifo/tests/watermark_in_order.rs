//! The consumer's watermark a batch pop answers (the seam to the store's resource
//! version): exact for the in-order FIFO, the version of the batch's last entry
//! that carries one.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::Fifo;
use crate::store::{StoreSink, WatchAction};
use crate::test_support::*;

/// A ConfigMap `name` at resource version `rv`.
fn at(name: &str, rv: &str) -> Obj {
    let mut cm = Arc::unwrap_or_clone(mk(name, rv));
    cm.metadata.resource_version = Some(rv.to_owned());
    Arc::new(cm)
}

/// Pops a batch of up to `max`: its entries shown, and its watermark.
async fn batch(f: &Fifo<ConfigMap>, max: usize) -> (Vec<String>, Option<String>) {
    f.pop_batch(max, |entries, w| {
        (entries.iter().map(|p| show(&p.entry)).collect(), w)
    })
    .await
    .unwrap()
}

/// Watch events: each batch answers the version of its last event, even with
/// events of other objects still queued behind it.
#[tokio::test(start_paused = true)]
async fn in_order_watermark_of_events_is_the_last_applied() {
    let f = in_order(vec![]);
    let mut run = vec![
        (WatchAction::Add, at("a", "10")),
        (WatchAction::Update, at("b", "11")),
        (WatchAction::Update, at("a", "12")),
    ];
    f.apply_watch_run(&mut run, &mut |_, e| panic!("{e}"));
    f.handed_over("12");
    let (first, w) = batch(&f, 1).await;
    assert_eq!((first.len(), w.as_deref()), (1, Some("10")));
    let (rest, w) = batch(&f, 10).await;
    assert_eq!(
        rest,
        ["Updated b=11", "Updated a=12"],
        "no bookmark: the run ended at 12"
    );
    assert_eq!(w.as_deref(), Some("12"), "the batch's last event");
}

/// A bookmark after events is an entry of its own: the watermark reaches it once
/// the events before it are applied.
#[tokio::test(start_paused = true)]
async fn in_order_watermark_of_a_bookmark_after_events() {
    let f = in_order(vec![]);
    f.add(at("a", "10")).unwrap();
    f.handed_over("20");
    let (events, w) = batch(&f, 1).await;
    assert_eq!((events.len(), w.as_deref()), (1, Some("10")));
    let (bookmark, w) = batch(&f, 10).await;
    assert_eq!(bookmark, ["Bookmark@20"]);
    assert_eq!(w.as_deref(), Some("20"));
    f.handed_over("20");
    assert!(f.is_empty(), "the same version again queues nothing");
}

/// A relist: the watermark reaches the list's version with the entry that applies
/// the whole list, not before; the events before it answer their own.
#[tokio::test(start_paused = true)]
async fn in_order_watermark_of_a_relist() {
    let f = in_order(vec![]);
    f.replace(vec![at("a", "3")], "5").unwrap();
    f.update(at("a", "8")).unwrap();
    f.replace(vec![at("a", "8"), at("b", "9")], "40").unwrap();
    let (list, w) = batch(&f, 10).await;
    assert_eq!(
        (list, w.as_deref()),
        (vec!["ReplacedAll@5 [a=3]".to_owned()], Some("5"))
    );
    let (event, w) = batch(&f, 10).await;
    assert_eq!(
        (event, w.as_deref()),
        (vec!["Updated a=8".to_owned()], Some("8"))
    );
    let (relist, w) = batch(&f, 10).await;
    assert_eq!(relist, ["ReplacedAll@40 [a=8 b=9]"]);
    assert_eq!(w.as_deref(), Some("40"));
}

/// A first list streamed page by page: its pages carry no version, its end does.
#[tokio::test(start_paused = true)]
async fn in_order_watermark_of_a_streamed_list_waits_for_its_end() {
    let f = in_order(vec![]);
    assert!(f.stream_list_page(&[at("a", "7")], true).unwrap());
    let (page, w) = batch(&f, 10).await;
    assert_eq!((page, w), (vec!["Replaced a=7".to_owned()], None));
    f.finish_list_stream(vec![at("b", "3")], "9").unwrap();
    let (end, w) = batch(&f, 10).await;
    assert_eq!(end, ["Replaced b=3", "Bookmark@9"]);
    assert_eq!(w.as_deref(), Some("9"));
    assert!(f.has_synced());
}
