//! One list response, decoded item by item as its bytes arrive.
//!
//! The API server answers an informer's first list (`resourceVersion=0`, served from its
//! watch cache) in one page of every object, whatever the `limit`: ~140 MB of JSON for
//! 100k ConfigMaps. A [`ListStream`] never holds that body: a [`ListScanner`] finds each
//! element of `items` in the chunks as they come, and an [`ItemDecoder`] decodes the
//! elements straight into `K` (skipping the field filter's paths) on the blocking pool,
//! in batches of about 64 KiB that a worker per core takes in turn, while the body is
//! still being read. The decoded batches come out in list order. The
//! reflector hands each batch on as it hands on a page (see [`crate::reflector`]): into
//! an empty informer's FIFO at once, or gathered for one atomic `replace` on a relist.
//!
//! This is a crate-private path that [`ApiListerWatcher`] provides and the reflector
//! prefers ([`streaming_lister`]); [`ListerWatcher::list`] stays the one way users'
//! lister-watchers answer (and [`ApiListerWatcher`]'s own `list` reads its body through
//! a `ListStream` too).

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

use super::{ApiListerWatcher, ListWatchError, ListerWatcher};
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
        // Checked as UTF-8 once, whole, not string by string as serde_json checks bytes.
        None => match std::str::from_utf8(bytes) {
            Ok(text) => serde_json::from_str(text),
            Err(_) => serde_json::from_slice(bytes),
        },
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
    /// ([`ItemDecoder`]) while the body is read on. `Ok(None)` once the list has ended (then
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
            // Items gathered while the workers were behind go out once one is not.
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

/// The lister-watcher that can stream list bodies, if `lw` is one (or wraps one): an
/// [`ApiListerWatcher`], as its [`ListerWatcher::api_lister_watcher`] says. Any other
/// lister-watcher is listed page by page through [`ListerWatcher::list`].
pub(crate) fn streaming_lister<K: Object, L: ListerWatcher<K>>(
    lw: &L,
) -> Option<&ApiListerWatcher<K>> {
    lw.api_lister_watcher()
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
mod tests;
