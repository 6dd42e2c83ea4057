//! Tests of the streamed list: items, pages, the read-ahead and parallel batches.

use bytes::Bytes;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use futures::FutureExt;

use super::*;
use crate::listwatch::mock_api::MockApi;
use crate::listwatch::scripted_decode::{Announced, wait_until};
use crate::listwatch::{BoxListerWatcher, FakeSource};

/// A ConfigMap whose data has escapes, multi-byte characters and brackets in
/// strings, and a managedFields entry.
fn cm_json(name: &str, rv: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}","managedFields":[{{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{"f:k":{{}}}}}}}}]}},"data":{{"k":"é€😀 \"]}}\\","u":"\u00e9\n\t{name}"}}}}"#
    )
}

fn list_json(cont: &str, items: &[String]) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMapList","metadata":{{"resourceVersion":"10","continue":"{cont}"}},"items":[{}]}}"#,
        items.join(",\n ")
    )
}

fn lw(api: &MockApi) -> ApiListerWatcher<ConfigMap> {
    ApiListerWatcher::new(Api::<ConfigMap>::all(api.client()))
}

/// Every batch of `stream` until it ends, then its metadata.
async fn drain(
    stream: &mut ListStream<'_, ConfigMap>,
) -> Result<(Vec<Vec<ConfigMap>>, ListMeta), ListWatchError> {
    let mut batches = Vec::new();
    while let Some(batch) = stream.next_batch().await? {
        batches.push(batch);
    }
    Ok((batches, stream.metadata()))
}

/// At every chunk size, from one byte (every item larger than a chunk, every escape
/// and multi-byte character cut somewhere) to the whole body: the streamed items
/// are the ones `list` decodes from the whole body, with the field filter applied,
/// in non-empty batches.
#[tokio::test]
async fn streamed_items_equal_the_whole_body_decode_at_every_chunk_size() {
    let items: Vec<String> = (0..5).map(|i| cm_json(&format!("c{i}"), "3")).collect();
    let body = list_json("", &items);
    let api = MockApi::new(&body, "");
    for filter in [FieldFilter::new(), FieldFilter::managed_fields()] {
        let lw = lw(&api).field_filter(filter.clone());
        let whole: ObjectList<ConfigMap> =
            decode_filtered(body.as_bytes(), Some(&filter.for_list_items())).unwrap();
        assert_eq!(whole.items.len(), 5);
        for size in [1, 2, 3, 7, 64, 1000, body.len()] {
            api.queue_list_body(MockApi::chunked(&body, size));
            let mut stream = lw.list_stream(&ListParams::default()).await.unwrap();
            let (batches, meta) = drain(&mut stream).await.unwrap();
            let streamed: Vec<ConfigMap> = batches.iter().flatten().cloned().collect();
            assert_eq!(streamed, whole.items, "chunks of {size}");
            assert_eq!(meta.resource_version.as_deref(), Some("10"));
            assert!(batches.iter().all(|batch| !batch.is_empty()));
        }
        assert_eq!(
            whole.items[0].metadata.managed_fields.is_none(),
            !filter.is_empty()
        );
        assert_eq!(whole.items[4].data.as_ref().unwrap()["u"], "é\n\tc4");
    }
}

/// A malformed item in the middle fails the list with its index; the items before
/// it may have come out, nothing after it does.
#[tokio::test]
async fn a_malformed_item_fails_the_list_naming_its_index() {
    let items = [
        cm_json("a", "1"),
        r#"{"metadata":{"name":5}}"#.to_owned(),
        cm_json("c", "3"),
    ];
    let body = list_json("", &items);
    let api = MockApi::new(&body, "");
    let lw = lw(&api);
    for size in [1, 50, body.len()] {
        api.queue_list_body(MockApi::chunked(&body, size));
        let mut stream = lw.list_stream(&ListParams::default()).await.unwrap();
        let err = drain(&mut stream).await.unwrap_err();
        assert!(
            matches!(err, ListWatchError::DecodeItem { index: 1, .. }),
            "{err:?}"
        );
        assert_eq!(err.to_string(), "cannot decode list item 1");
        assert!(stream.next_batch().await.unwrap().is_none(), "over");
    }
}

/// A body broken off mid-item is the transport's error, after the items before it;
/// one that simply ends mid-item is a decode error naming the item.
#[tokio::test]
async fn a_body_cut_mid_item_fails_the_list() {
    let items = [cm_json("a", "1"), cm_json("b", "2")];
    let body = list_json("", &items);
    let cut = body.find(r#""name":"b""#).unwrap();
    let api = MockApi::new(&body, "");
    let lw = lw(&api);
    let head = Bytes::copy_from_slice(&body.as_bytes()[..cut]);
    api.queue_list_body(
        futures::stream::iter([
            Ok(head.clone()),
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "reset",
            )),
        ])
        .boxed(),
    );
    let mut stream = lw.list_stream(&ListParams::default()).await.unwrap();
    let first = stream.next_batch().await.unwrap().unwrap();
    assert_eq!(first[0].metadata.name.as_deref(), Some("a"));
    let err = stream.next_batch().await.unwrap_err();
    assert!(matches!(err, ListWatchError::Transport(_)), "{err:?}");

    api.queue_list_body(futures::stream::iter([Ok(head)]).boxed());
    let mut stream = lw.list_stream(&ListParams::default()).await.unwrap();
    let err = drain(&mut stream).await.unwrap_err();
    assert!(
        matches!(&err, ListWatchError::Decode { what: "list", source } if source.to_string().contains("inside item 1")),
        "{err:?}"
    );
}

/// A page that names a next one gets the next one requested as soon as its
/// `metadata` is in, while its own items are still arriving; the next page is then
/// taken from the request ahead.
#[tokio::test]
async fn the_next_page_is_requested_while_a_page_streams() {
    let page1 = list_json("c1", &[cm_json("a", "1"), cm_json("b", "2")]);
    let page2 = list_json("", &[cm_json("c", "3")]);
    let api = MockApi::new(&page2, "");
    let lw = lw(&api);
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, std::io::Error>>();
    api.queue_list_body(rx.boxed());
    let cut = page1.find(r#""name":"b""#).unwrap();
    tx.unbounded_send(Ok(Bytes::copy_from_slice(&page1.as_bytes()[..cut])))
        .unwrap();
    let params = ListParams::default().limit(2);
    let mut stream = lw.list_stream(&params).await.unwrap();
    let first = stream.next_batch().await.unwrap().unwrap();
    assert_eq!(first.len(), 1);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let requests = api.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(requests[1].contains("continue=c1"), "{requests:?}");
    tx.unbounded_send(Ok(Bytes::copy_from_slice(&page1.as_bytes()[cut..])))
        .unwrap();
    drop(tx);
    let (rest, meta) = drain(&mut stream).await.unwrap();
    assert_eq!(rest.concat()[0].metadata.name.as_deref(), Some("b"));
    assert_eq!(meta.continue_.as_deref(), Some("c1"));
    let mut next = lw
        .list_stream(&params.clone().continue_token("c1"))
        .await
        .unwrap();
    let (batches, _) = drain(&mut next).await.unwrap();
    assert_eq!(batches.concat()[0].metadata.name.as_deref(), Some("c"));
    assert_eq!(
        api.requests().len(),
        2,
        "page two came from the request ahead"
    );
}

/// Only an `ApiListerWatcher` (boxed or not) streams; any other lister-watcher is
/// listed through `ListerWatcher::list`.
#[tokio::test]
async fn only_api_lister_watchers_stream() {
    let api = MockApi::new("", "");
    assert!(streaming_lister(&lw(&api)).is_some());
    assert!(streaming_lister(&BoxListerWatcher::new(lw(&api))).is_some());
    let fake = FakeSource::<ConfigMap>::new();
    assert!(streaming_lister(&fake).is_none());
    assert!(streaming_lister(&BoxListerWatcher::new(fake)).is_none());
}

/// A list of `n` small ConfigMaps `c0`, `c1`, …, in one body.
fn numbered_list(n: usize) -> String {
    let items: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"metadata":{{"name":"c{i}","namespace":"ns"}},"data":{{"k":"v"}}}}"#))
        .collect();
    list_json("", &items)
}

/// `body` in chunks of `size` bytes, as a response body stream.
fn body_in_chunks(body: &str, size: usize) -> BoxStream<'static, Result<Bytes, ListWatchError>> {
    let chunks: Vec<Result<Bytes, ListWatchError>> = body
        .as_bytes()
        .chunks(size)
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    futures::stream::iter(chunks).boxed()
}

/// The index in an item's name (`c17` is 17).
fn number(cm: &ConfigMap) -> usize {
    cm.metadata.name.as_deref().unwrap()[1..].parse().unwrap()
}

/// Items other than `c0` decoded so far (by any test of this module).
static DECODED_AFTER_START: Announced<usize> = Announced::new(0);

/// Decodes as the lister-watcher does, but item `c0` is done only once some other
/// item has been decoded after it began (on another worker: `c0`'s own batch waits
/// behind it), so a later batch finishes first.
fn slow_start_decode(bytes: &[u8], filter: Option<&FieldFilter>) -> serde_json::Result<ConfigMap> {
    let cm: ConfigMap = decode_filtered(bytes, filter)?;
    if cm.metadata.name.as_deref() == Some("c0") {
        let before = DECODED_AFTER_START.read(|&n| n);
        DECODED_AFTER_START.wait_then(|&n| n != before, |_| ());
    } else {
        DECODED_AFTER_START.update(|n| *n += 1);
    }
    Ok(cm)
}

/// Items decoded on several cores come out in list order, in several batches,
/// although the first batches take longest to decode.
#[tokio::test]
async fn list_order_is_kept_across_worker_batches() {
    let body = numbered_list(2000);
    for size in [200, 4096] {
        let mut stream =
            ListStream::from_body(body_in_chunks(&body, size), slow_start_decode, None, None);
        let (batches, meta) = drain(&mut stream).await.unwrap();
        assert!(batches.len() > 1, "{} batches", batches.len());
        let numbers: Vec<usize> = batches.iter().flatten().map(number).collect();
        assert_eq!(numbers, (0..2000).collect::<Vec<_>>(), "chunks of {size}");
        assert_eq!(meta.resource_version.as_deref(), Some("10"));
    }
}

/// A malformed item in a batch decoded beside others fails the list naming its
/// index; the items that come out before the error are a prefix of the list
/// before it, and nothing after it comes out, although later batches decode first.
#[tokio::test]
async fn an_item_error_in_a_parallel_batch_names_it_and_stops_the_list() {
    let body = numbered_list(2000).replace(r#""name":"c1500""#, r#""name":1500"#);
    for size in [300, 8192] {
        let mut stream =
            ListStream::from_body(body_in_chunks(&body, size), slow_start_decode, None, None);
        let mut delivered = Vec::new();
        let err = loop {
            match stream.next_batch().await {
                Ok(Some(batch)) => delivered.extend(batch.iter().map(number)),
                Ok(None) => panic!("the list ended without its error"),
                Err(e) => break e,
            }
        };
        assert!(
            matches!(err, ListWatchError::DecodeItem { index: 1500, .. }),
            "{err:?}"
        );
        assert_eq!(delivered, (0..delivered.len()).collect::<Vec<_>>());
        assert!(delivered.len() <= 1500, "{}", delivered.len());
        assert!(stream.next_batch().await.unwrap().is_none(), "over");
    }
}

/// Calls of [`gated_decode`], and whether its gate is open.
static GATE: Announced<(usize, bool)> = Announced::new((0, false));

/// Decodes as the lister-watcher does once the gate is open, counting its calls.
fn gated_decode(bytes: &[u8], filter: Option<&FieldFilter>) -> serde_json::Result<ConfigMap> {
    GATE.update(|(calls, _)| *calls += 1);
    GATE.wait_then(|&(_, open)| open, |_| ());
    decode_filtered(bytes, filter)
}

/// Dropping the stream while a batch decodes stops the worker after the item it is
/// on: it decodes nothing more and lets go of what it shares with the stream.
#[tokio::test]
async fn dropping_the_stream_stops_the_worker() {
    /// Opens the gate however the test ends, so no worker waits on.
    struct OpenOnDrop;
    impl Drop for OpenOnDrop {
        fn drop(&mut self) {
            GATE.update(|(_, open)| *open = true);
        }
    }
    let open_on_drop = OpenOnDrop;
    let filter = Arc::new(FieldFilter::managed_fields());
    let body = numbered_list(200);
    let mut stream = ListStream::from_body(
        body_in_chunks(&body, body.len()),
        gated_decode,
        Some(filter.clone()),
        None,
    );
    assert!(
        stream.next_batch().now_or_never().is_none(),
        "the batch is held at the gate"
    );
    GATE.wait_for("the worker is on item 0", |&(calls, _)| calls == 1);
    drop(stream);
    assert_eq!(Arc::strong_count(&filter), 2, "the worker holds the filter");
    drop(open_on_drop);
    wait_until("the worker has ended", || Arc::strong_count(&filter) == 1);
    assert_eq!(GATE.read(|&(calls, _)| calls), 1, "no item after the drop");
}
