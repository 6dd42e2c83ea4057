//! One list response, decoded item by item as its bytes arrive.
//!
//! The API server answers an informer's first list (`resourceVersion=0`, served from its
//! watch cache) in one page of every object, whatever the `limit`: ~140 MB of JSON for
//! 100k ConfigMaps. A [`ListStream`] never holds that body: a [`ListScanner`] finds each
//! element of `items` in the chunks as they come, and an [`ItemDecoder`] decodes the
//! elements straight into `K` (skipping the field filter's paths) on the blocking pool,
//! a batch per free core, while the body is still being read. The decoded batches come
//! out in list order, at most ~256 KiB of items (plus one read chunk's) each. The
//! reflector hands each batch on as it hands on a page (see [`crate::reflector`]): into
//! an empty informer's FIFO at once, or gathered for one atomic `replace` on a relist.
//!
//! This is a crate-private path that [`ApiListerWatcher`] provides and the reflector
//! prefers ([`streaming_lister`]); [`ListerWatcher::list`] stays the one way users'
//! lister-watchers answer (and [`ApiListerWatcher`]'s own `list` reads its body through
//! a `ListStream` too).

use std::any::Any;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, ObjectList, TypeMeta};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde::de::IgnoredAny;

use super::list_decoder::ItemDecoder;
use super::list_prefetch::Page;
use super::list_scanner::ListScanner;
use serde_field_filter::FieldFilter;

use super::{ApiListerWatcher, BoxListerWatcher, ListWatchError, ListerWatcher};
use crate::object::Object;

/// Decodes one list element into `K`, skipping the filter's paths (relative to the
/// object). A plain function, so the lister-watcher keeps it without `K`'s serde bound.
pub(crate) type ItemDecodeFn<K> = fn(&[u8], Option<&FieldFilter>) -> serde_json::Result<K>;

/// Decodes `T`, skipping `filter`'s paths while decoding (plain serde without one):
/// the [`ItemDecodeFn`] of a deserializable `K` as `decode_filtered::<K>`, and how
/// whole list bodies and watch lines are decoded.
pub(crate) fn decode_filtered<T: DeserializeOwned>(
    bytes: &[u8],
    filter: Option<&FieldFilter>,
) -> serde_json::Result<T> {
    match filter {
        Some(filter) => serde_field_filter::from_slice(bytes, filter),
        None => serde_json::from_slice(bytes),
    }
}

/// Told a streamed list's metadata once, as soon as its items begin.
pub(crate) type OnHead<'a> = Box<dyn FnOnce(&ListMeta) + Send + 'a>;

/// The members of a list other than `items`, as the scanner re-assembles them.
#[derive(Deserialize)]
struct Head {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: ListMeta,
    /// `items` lands here only when it was not an array (`null` is an empty list; any
    /// other value fails the decode).
    #[serde(default)]
    items: Option<Vec<IgnoredAny>>,
}

/// Decodes a head the scanner assembled: the list's `apiVersion` and `kind`, and its
/// metadata.
fn decode_head(bytes: &[u8]) -> Result<(TypeMeta, ListMeta), ListWatchError> {
    let head: Head = serde_json::from_slice(bytes).map_err(|source| ListWatchError::Decode {
        what: "list",
        source,
    })?;
    let _ = head.items;
    let types = TypeMeta {
        api_version: head.api_version,
        kind: head.kind,
    };
    Ok((types, head.metadata))
}

/// Where a list response's items come from.
enum Source<'a, K> {
    /// A body being read and scanned.
    Body {
        body: BoxStream<'static, Result<Bytes, ListWatchError>>,
        /// `None` once the body has ended, broken off or failed to scan.
        scanner: Option<ListScanner>,
        /// Decodes the items found, on every core.
        decoder: ItemDecoder<K>,
        /// Why the body ended early: returned once the items found before it are out.
        failed: Option<ListWatchError>,
        /// Told the list's metadata once, as soon as `items` opens (the API server
        /// writes `metadata` first), so the next page can be asked for early.
        on_head: Option<OnHead<'a>>,
    },
    /// A page decoded whole (requested ahead); its items are handed out as one batch.
    Page(Option<Vec<K>>),
}

/// The items of one list response, in batches as they are decoded, then its metadata.
pub(crate) struct ListStream<'a, K> {
    source: Source<'a, K>,
    /// The list's metadata, once known (at the end of the body).
    metadata: Option<ListMeta>,
    /// The list's `apiVersion` and `kind`, once known (with its metadata).
    types: TypeMeta,
}

impl<'a, K> ListStream<'a, K> {
    /// A response body to read and decode as it arrives; `on_head` is told the list's
    /// metadata as soon as the items begin.
    pub(crate) fn from_body(
        body: BoxStream<'static, Result<Bytes, ListWatchError>>,
        decode: ItemDecodeFn<K>,
        filter: Option<Arc<FieldFilter>>,
        on_head: Option<OnHead<'a>>,
    ) -> Self {
        ListStream {
            source: Source::Body {
                body,
                scanner: Some(ListScanner::default()),
                decoder: ItemDecoder::new(decode, filter),
                failed: None,
                on_head,
            },
            metadata: None,
            types: TypeMeta::default(),
        }
    }

    /// A page already decoded.
    pub(crate) fn from_page(page: Page<K>) -> Self {
        let (types, metadata, items) = page.into_parts();
        ListStream {
            source: Source::Page(Some(items)),
            metadata: Some(metadata),
            types,
        }
    }
}

impl<K: Send + 'static> ListStream<'_, K> {
    /// The next batch of items, in list order. Items are decoded on the blocking pool
    /// ([`ItemDecoder`]) while the body is read on: a batch is the items of the chunks
    /// read while the cores were busy. `Ok(None)` once the list has ended (then
    /// [`ListStream::metadata`] holds its metadata).
    ///
    /// # Errors
    /// [`ListWatchError::Transport`] when the body breaks off (after the items before
    /// it; the list as a whole failed); [`ListWatchError::DecodeItem`] naming the
    /// first item that does not decode (no item after it comes out);
    /// [`ListWatchError::Decode`] for a body that is not a list (or ends early), after
    /// the items before the fault. After an error the stream is over.
    ///
    /// # Cancel safety
    /// Cancel-safe: a chunk is scanned in the poll that reads it and its items join
    /// the decoder, which the stream keeps; a decoded batch leaves the decoder only
    /// when it is returned.
    pub(crate) async fn next_batch(&mut self) -> Result<Option<Vec<K>>, ListWatchError> {
        let ListStream {
            source,
            metadata,
            types,
        } = self;
        let (body, scanner_slot, decoder, failed, on_head) = match source {
            Source::Page(items) => return Ok(items.take()),
            Source::Body {
                body,
                scanner,
                decoder,
                failed,
                on_head,
            } => (body, scanner, decoder, failed, on_head),
        };
        loop {
            // A core freed by the batch returned last takes the items gathered meanwhile.
            decoder.dispatch(false);
            if decoder.front_is_done() || decoder.is_full() {
                return Self::deliver(decoder.next_done().await, scanner_slot, failed);
            }
            let Some(scanner) = scanner_slot.as_mut() else {
                // The body is over: the items found in it go out, then its fault.
                decoder.dispatch(true);
                if let Some(done) = decoder.next_done().await {
                    return Self::deliver(Some(done), scanner_slot, failed);
                }
                return failed.take().map_or(Ok(None), Err);
            };
            let chunk = tokio::select! {
                biased;
                Some(done) = decoder.next_done() => {
                    return Self::deliver(Some(done), scanner_slot, failed);
                }
                chunk = body.next() => chunk,
            };
            let chunk = match chunk {
                Some(Ok(chunk)) => chunk,
                Some(Err(e)) => {
                    *failed = Some(e);
                    *scanner_slot = None;
                    continue;
                }
                None => {
                    let head = scanner_slot.take().map(ListScanner::finish);
                    match head.map(|head| decode_head(&head?)) {
                        Some(Ok((list_types, meta))) => {
                            if let Some(tell) = on_head.take() {
                                tell(&meta);
                            }
                            *metadata = Some(meta);
                            *types = list_types;
                        }
                        Some(Err(e)) => *failed = Some(e),
                        None => {}
                    }
                    continue;
                }
            };
            let fed = scanner.feed(&chunk, &mut |index, bytes| {
                decoder.push(index, bytes);
                Ok(())
            });
            if let Err(e) = fed {
                *failed = Some(e);
                *scanner_slot = None;
                continue;
            }
            if scanner.items_open()
                && let Some(tell) = on_head.take()
                && let Ok((_, meta)) = decode_head(&scanner.head_so_far())
            {
                tell(&meta);
            }
            decoder.dispatch(false);
        }
    }

    /// A decoded batch as [`ListStream::next_batch`] returns it: after an error
    /// nothing more is read (the decoder has dropped what was in flight).
    fn deliver(
        done: Option<Result<Vec<K>, ListWatchError>>,
        scanner: &mut Option<ListScanner>,
        failed: &mut Option<ListWatchError>,
    ) -> Result<Option<Vec<K>>, ListWatchError> {
        match done {
            Some(Ok(items)) => Ok(Some(items)),
            Some(Err(e)) => {
                *scanner = None;
                *failed = None;
                Err(e)
            }
            None => Ok(None),
        }
    }
}

impl<K> ListStream<'_, K> {
    /// The list's metadata (`resourceVersion`, `continue`), once
    /// [`ListStream::next_batch`] has returned `Ok(None)`; default before.
    pub(crate) fn metadata(&mut self) -> ListMeta {
        self.metadata.take().unwrap_or_default()
    }
}

impl<K: Clone + Send + 'static> ListStream<'_, K> {
    /// The whole list, read to its end: what [`ListerWatcher::list`] answers, without
    /// ever holding the body (its items are decoded as it arrives, as
    /// [`ListStream::next_batch`] hands them out).
    ///
    /// # Errors
    /// As [`ListStream::next_batch`]; the items before the error are dropped.
    ///
    /// # Cancel safety
    /// Not cancel-safe: the items read so far are lost with the future.
    pub(crate) async fn into_list(mut self) -> Result<ObjectList<K>, ListWatchError> {
        let mut items = Vec::new();
        while let Some(batch) = self.next_batch().await? {
            items.extend(batch);
        }
        Ok(ObjectList {
            metadata: self.metadata(),
            types: std::mem::take(&mut self.types),
            items,
        })
    }
}

/// The lister-watcher that can stream list bodies, if `lw` is one (or boxes one): an
/// [`ApiListerWatcher`], found by its type as client-go finds a store's optional
/// interfaces. Any other lister-watcher is listed page by page through
/// [`ListerWatcher::list`].
pub(crate) fn streaming_lister<K: Object, L: ListerWatcher<K>>(
    lw: &L,
) -> Option<&ApiListerWatcher<K>> {
    let any: &dyn Any = lw;
    if let Some(api) = any.downcast_ref::<ApiListerWatcher<K>>() {
        return Some(api);
    }
    any.downcast_ref::<BoxListerWatcher<K>>()?
        .as_any()
        .downcast_ref::<ApiListerWatcher<K>>()
}

/// Lists one page of `params` through `lw`, streamed when `lw` can
/// ([`streaming_lister`]): each batch of items goes to `keep` as it is decoded, with
/// whether it starts the list (the first batch of a page that does; `starts_list`), and
/// what `keep` returns is added to `items`. Returns the page's metadata.
///
/// # Errors
/// The list's error; the batches before it have already gone to `keep`.
///
/// # Cancel safety
/// Cancel-safe as far as `keep` goes: every batch decoded went to `keep`.
pub(crate) async fn list_page<K, L, F>(
    lw: &L,
    params: &ListParams,
    starts_list: bool,
    keep: &mut F,
    items: &mut Vec<Arc<K>>,
) -> Result<ListMeta, ListWatchError>
where
    K: Object,
    L: ListerWatcher<K>,
    F: FnMut(Vec<K>, bool) -> Vec<Arc<K>>,
{
    let Some(api) = streaming_lister(lw) else {
        let page = lw.list(params).await?;
        items.extend(keep(page.items, starts_list));
        return Ok(page.metadata);
    };
    let mut stream = api.list_stream(params).await?;
    let mut first = starts_list;
    while let Some(batch) = stream.next_batch().await? {
        items.extend(keep(batch, first));
        first = false;
    }
    if first {
        // An empty page still starts (or continues) the list.
        items.extend(keep(Vec::new(), starts_list));
    }
    Ok(stream.metadata())
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Api;

    use futures::FutureExt;

    use super::*;
    use crate::listwatch::FakeSource;
    use crate::listwatch::mock_api::MockApi;
    use crate::listwatch::scripted_decode::{Announced, wait_until};

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
            .map(|i| {
                format!(r#"{{"metadata":{{"name":"c{i}","namespace":"ns"}},"data":{{"k":"v"}}}}"#)
            })
            .collect();
        list_json("", &items)
    }

    /// `body` in chunks of `size` bytes, as a response body stream.
    fn body_in_chunks(
        body: &str,
        size: usize,
    ) -> BoxStream<'static, Result<Bytes, ListWatchError>> {
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
    fn slow_start_decode(
        bytes: &[u8],
        filter: Option<&FieldFilter>,
    ) -> serde_json::Result<ConfigMap> {
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
}
