//! One list body streamed into the FIFO as it arrives, through an `ApiListerWatcher`
//! over a real `kube::Client` (scripted bodies): items reach an empty FIFO before the
//! body ends; a body cut mid-item or a malformed item fails the list as a whole, with a
//! typed error, and the reflector lists again; a relist applies nothing of a failed body.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;

use crate::fifo::DeltaFifo;
use crate::fifo::DeltaType::{self, Replaced};
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

/// Pops three items: (key, deltas) of each.
async fn pop_three(fifo: &DeltaFifo<Pod>) -> Vec<(String, Vec<(DeltaType, String)>)> {
    let mut popped = Vec::new();
    for _ in 0..3 {
        let item = pop(fifo).await;
        popped.push((item.key.to_string(), delta_summary(&item)));
    }
    popped
}

fn errors_of(errors: &Mutex<Vec<String>>) -> Vec<String> {
    errors
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// The first list's one body reaches an empty FIFO as it arrives: the consumer pops
/// the first items while the server has not finished the body, and the FIFO syncs
/// once the body has ended. One request, the informer's first (`limit=500`, RV 0).
#[tokio::test(start_paused = true)]
async fn one_list_body_streams_into_an_empty_fifo_as_it_arrives() {
    let api = MockApi::new("", "");
    let text = body(&[("a", "1"), ("b", "2"), ("c", "3")]);
    let cut = text.find(r#""name":"c""#).unwrap();
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, std::io::Error>>();
    api.queue_list_body(rx.boxed());
    tx.unbounded_send(Ok(Bytes::copy_from_slice(&text.as_bytes()[..cut])))
        .unwrap();
    let (fifo, r) = reflector_into_informer_fifo(lw(&api), ReflectorOptions::default());
    let (cancel, task) = spawn_list_and_watch(&r);
    pop_initial_listed(&fifo, &[("a", "1"), ("b", "2")]).await;
    assert!(!fifo.has_synced(), "the body is still arriving");
    assert_eq!(r.resource_version(), None);
    tx.unbounded_send(Ok(Bytes::copy_from_slice(&text.as_bytes()[cut..])))
        .unwrap();
    drop(tx);
    let item = pop(&fifo).await;
    assert_eq!(item.key.as_str(), "c");
    tokio::time::timeout(std::time::Duration::from_secs(1), fifo.wait_synced())
        .await
        .expect("synced once the body ended and its last item was popped");
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

/// A body broken off mid-item fails the list with the transport's error; what was
/// decoded before the cut stays queued (a first list into an empty FIFO), the cut
/// item is never applied, and the reflector lists again: that list's `replace`
/// reconciles the FIFO, which then syncs.
#[tokio::test(start_paused = true)]
async fn a_body_cut_mid_item_fails_the_list_and_it_is_listed_again() {
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
    let (fifo, r) = reflector_into_informer_fifo(lw(&api), options);
    let (cancel, task) = spawn_run(&r);
    eventually(|| !errors_of(&errors).is_empty()).await;
    assert_eq!(errors_of(&errors), ["list:transport"]);
    assert_eq!(fifo.len(), 1, "only the item before the cut");
    assert!(!fifo.has_synced());
    eventually(|| r.resource_version().as_deref() == Some("10")).await;
    assert_eq!(
        pop_three(&fifo).await,
        [
            (
                "a".to_owned(),
                vec![(Replaced, "1".to_owned()), (Replaced, "1".to_owned())]
            ),
            ("b".to_owned(), vec![(Replaced, "2".to_owned())]),
            ("c".to_owned(), vec![(Replaced, "3".to_owned())]),
        ]
    );
    assert!(fifo.has_synced());
    assert_eq!(
        errors_of(&errors),
        ["list:transport"],
        "listed once more, fine"
    );
    cancel.cancel();
    task.await.unwrap();
}

/// A relist whose body has a malformed item in the middle fails with a decode error
/// naming the item, and applies nothing (a relist is one `replace` at the end); the
/// next relist applies the new state.
#[tokio::test(start_paused = true)]
async fn a_malformed_item_fails_a_relist_naming_it_and_applies_nothing() {
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
    let (fifo, r) = reflector_into_informer_fifo(lw(&api), options);
    let (cancel, task) = spawn_run(&r);
    for name in ["a", "b"] {
        assert_eq!(pop(&fifo).await.key.as_str(), name);
    }
    eventually(|| errors_of(&errors).len() == 2).await;
    assert_eq!(errors_of(&errors), ["watch", "list:item 1"]);
    assert_eq!(fifo.len(), 0, "nothing of the failed relist was applied");
    eventually(|| fifo.len() == 3).await;
    assert_eq!(
        pop_three(&fifo).await,
        [
            ("a".to_owned(), vec![(Replaced, "1".to_owned())]),
            ("b".to_owned(), vec![(Replaced, "5".to_owned())]),
            ("c".to_owned(), vec![(Replaced, "6".to_owned())]),
        ]
    );
    cancel.cancel();
    task.await.unwrap();
}
