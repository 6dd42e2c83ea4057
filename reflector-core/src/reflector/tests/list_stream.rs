//! One list body streamed into an informer's queue as it arrives, through an `ApiListerWatcher`
//! over a real `kube::Client` (scripted bodies): items reach an empty queue before the
//! body ends; a body cut mid-item or a malformed item fails the list as a whole, with a
//! typed error, and the reflector lists again; a relist applies nothing of a failed body.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use crate::fifo::QueueMode;
use crate::listwatch::mock_api::MockApi;
use crate::listwatch::{ApiListerWatcher, ListWatchError};
use crate::reflector::{ReflectorError, ReflectorOptions};
use crate::test_support::*;

fn pod_json(name: &str, rv: &str) -> String {
    serde_json::to_string(&pod(name, rv)).unwrap()
}

/// A one-page pod list at resourceVersion 10 of `items` (`name@rv`).
fn body(items: &[(&str, &str)]) -> String {
    let items: Vec<String> = items.iter().map(|(n, rv)| pod_json(n, rv)).collect();
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"10"}},"items":[{}]}}"#,
        items.join(",")
    )
}

/// An `ApiListerWatcher` of pods over `api`.
fn lw(api: &MockApi) -> ApiListerWatcher<Pod> {
    ApiListerWatcher::new(Api::<Pod>::all(api.client()))
}

/// Options with no backoff jitter that record each round's error as
/// `list:<kind>` / `watch`.
fn recording_errors() -> (ReflectorOptions, Arc<Mutex<Vec<String>>>) {
    let errors = recorder();
    let seen = Arc::clone(&errors);
    let options = ReflectorOptions::default()
        .backoff_jitter(0.0)
        .watch_error_handler(move |e| {
            let what = match e {
                ReflectorError::List { source, .. } => match source {
                    ListWatchError::Transport(_) => "list:transport".to_owned(),
                    ListWatchError::DecodeItem { index, .. } => format!("list:item {index}"),
                    other => format!("list:{other}"),
                },
                _ => "watch".to_owned(),
            };
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(what);
        });
    (options, errors)
}

fn errors_of(errors: &Mutex<Vec<String>>) -> Vec<String> {
    errors
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

each_queue!(
    #[tokio::test(start_paused = true)]
    one_list_body_streams_into_an_empty_queue_as_it_arrives
);

/// The first list's one body reaches an empty queue as it arrives: the consumer pops
/// the first items while the server has not finished the body, and the queue syncs
/// once the body has ended (the in-order queue marks the end with a bookmark). One request, the informer's first (`limit=500`, RV 0).
async fn one_list_body_streams_into_an_empty_queue_as_it_arrives(mode: QueueMode) {
    let api = MockApi::new("", "");
    let text = body(&[("a", "1"), ("b", "2"), ("c", "3")]);
    let cut = text.find(r#""name":"c""#).unwrap();
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, std::io::Error>>();
    api.queue_list_body(rx.boxed());
    tx.unbounded_send(Ok(Bytes::copy_from_slice(&text.as_bytes()[..cut])))
        .unwrap();
    let (queue, r) = reflector_into_informer_queue(mode, lw(&api), ReflectorOptions::default());
    let (cancel, task) = spawn_list_and_watch(&r);
    assert_pops(&queue, &["initial a: Replaced@1", "initial b: Replaced@2"]).await;
    assert!(!queue.has_synced(), "the body is still arriving");
    assert_eq!(r.resource_version(), None);
    tx.unbounded_send(Ok(Bytes::copy_from_slice(&text.as_bytes()[cut..])))
        .unwrap();
    drop(tx);
    assert_pops(
        &queue,
        per_mode(
            mode,
            &["initial c: Replaced@3"],
            &["initial c: Replaced@3", "initial Bookmark@10"],
        ),
    )
    .await;
    assert_syncs(&queue).await;
    assert_eq!(r.resource_version().as_deref(), Some("10"));
    let requests = api.requests();
    assert!(
        requests[0].ends_with("?limit=500&resourceVersion=0"),
        "{requests:?}"
    );
    assert_eq!(
        requests
            .iter()
            .filter(|u| !u.contains("watch=true"))
            .count(),
        1
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}

each_queue!(
    #[tokio::test(start_paused = true)]
    a_body_cut_mid_item_fails_the_list_and_it_is_listed_again
);

/// A body broken off mid-item fails the list with the transport's error; what was
/// decoded before the cut stays queued (a first list into an empty queue), the cut
/// item is never applied, and the reflector lists again: that list's `replace`
/// reconciles the queue (the per-key queue key by key, the in-order queue with the whole
/// list after what it streamed), which then syncs.
async fn a_body_cut_mid_item_fails_the_list_and_it_is_listed_again(mode: QueueMode) {
    let text = body(&[("a", "1"), ("b", "2"), ("c", "3")]);
    let api = MockApi::new(&text, "");
    let cut = text.find(r#""name":"b""#).unwrap();
    api.queue_list_body(
        futures::stream::iter([
            Ok(Bytes::copy_from_slice(&text.as_bytes()[..cut])),
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "reset",
            )),
        ])
        .boxed(),
    );
    let (options, errors) = recording_errors();
    let (queue, r) = reflector_into_informer_queue(mode, lw(&api), options);
    let (cancel, task) = spawn_run(&r);
    eventually(|| !errors_of(&errors).is_empty()).await;
    assert_eq!(errors_of(&errors), ["list:transport"]);
    assert_eq!(queue.len(), 1, "only the item before the cut");
    assert!(!queue.has_synced());
    eventually(|| r.resource_version().as_deref() == Some("10")).await;
    assert_pops(
        &queue,
        per_mode(
            mode,
            &[
                "initial a: Replaced@1, Replaced@1",
                "initial b: Replaced@2",
                "initial c: Replaced@3",
            ],
            &[
                "initial a: Replaced@1",
                "initial ReplacedAll@10 [a@1 b@2 c@3]",
            ],
        ),
    )
    .await;
    assert!(queue.has_synced());
    assert_eq!(
        errors_of(&errors),
        ["list:transport"],
        "listed once more, fine"
    );
    cancel.cancel();
    task.await.unwrap();
}

each_queue!(
    #[tokio::test(start_paused = true)]
    a_malformed_item_fails_a_relist_naming_it_and_applies_nothing
);

/// A relist whose body has a malformed item in the middle fails with a decode error
/// naming the item, and applies nothing (a relist is one `replace` at the end); the
/// next relist applies the new state.
async fn a_malformed_item_fails_a_relist_naming_it_and_applies_nothing(mode: QueueMode) {
    let good = body(&[("a", "1"), ("b", "5"), ("c", "6")]);
    let mut api = MockApi::new(&good, "");
    // Every watch fails, so every round relists.
    api.watch = (
        410,
        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}"#.into(),
    );
    api.queue_list_body(MockApi::chunked(&body(&[("a", "1"), ("b", "2")]), 64));
    let good_b = pod_json("b", "5");
    let malformed = body(&[("a", "1"), ("b", "5"), ("c", "6")]).replacen(
        &good_b,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":["b"]}}"#,
        1,
    );
    assert_ne!(malformed, good);
    api.queue_list_body(MockApi::chunked(&malformed, 64));
    let (options, errors) = recording_errors();
    let (queue, r) = reflector_into_informer_queue(mode, lw(&api), options);
    let (cancel, task) = spawn_run(&r);
    assert_pops(
        &queue,
        per_mode(
            mode,
            &["initial a: Replaced@1", "initial b: Replaced@2"],
            &[
                "initial a: Replaced@1",
                "initial b: Replaced@2",
                "initial Bookmark@10",
            ],
        ),
    )
    .await;
    eventually(|| errors_of(&errors).len() == 2).await;
    assert_eq!(errors_of(&errors), ["watch", "list:item 1"]);
    assert_eq!(queue.len(), 0, "nothing of the failed relist was applied");
    let relisted = per_mode(
        mode,
        &["a: Replaced@1", "b: Replaced@5", "c: Replaced@6"],
        &["ReplacedAll@10 [a@1 b@5 c@6]"],
    );
    eventually(|| queue.len() == relisted.len()).await;
    assert_pops(&queue, relisted).await;
    cancel.cancel();
    task.await.unwrap();
}
