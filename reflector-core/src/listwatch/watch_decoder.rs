//! Turns a watch response body (newline-delimited JSON) into [`WatchEvent`]s.
//!
//! Each line is decoded once, envelope and object together, straight into `K`. Only
//! when that fails is the line looked at again, to tell a skippable event of another
//! kind from a malformed line. A line cut short by the end of the body ends the watch
//! quietly (the next watch resumes from the last resource version, as client-go's
//! stream watcher does on an unexpected EOF); a malformed line in the middle ends it
//! with an error.
//!
//! With a [`FieldFilter`] the one pass also skips the filtered fields of the object
//! (`metadata.managedFields` by default in informers): they are never allocated.

use std::marker::PhantomData;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use futures::{FutureExt, Stream, StreamExt};
use memchr::memmem::Finder;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use serde_field_filter::FieldFilter;

use super::list_decoder::{DecodeItem, ItemDecoder};
use super::list_stream::decode_filtered;
use super::{ListWatchError, WatchEvent, WatchStream};

/// Decodes watch lines for one resource type.
#[derive(Debug)]
pub struct WatchDecoder<K> {
    api_version: String,
    kind: String,
    /// Finders of `"apiVersion":"<api_version>"` and `"kind":"<kind>"` as the API server
    /// writes them: finding both in a line confirms its kind without parsing it again.
    /// Built once, not per line.
    kind_needles: Arc<[Finder<'static>; 2]>,
    /// The filter for a whole event (`object.` + the object paths); `None`: plain
    /// serde_json.
    filter: Option<Arc<FieldFilter>>,
    /// Trims each added or modified object before it is handed on (see
    /// [`compact`](super::compact)); does nothing unless set.
    compact: fn(&mut K),
    _k: PhantomData<fn() -> K>,
}

impl<K> Clone for WatchDecoder<K> {
    fn clone(&self) -> Self {
        WatchDecoder {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            kind_needles: Arc::clone(&self.kind_needles),
            filter: self.filter.clone(),
            compact: self.compact,
            _k: PhantomData,
        }
    }
}

/// What a line must at least look like to be an event: used only to classify lines
/// that failed to decode as `WatchEvent<K>`.
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    event_type: String,
    object: TypeMetaOnly,
}

#[derive(Deserialize)]
struct TypeMetaOnly {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
}

impl<K: DeserializeOwned> WatchDecoder<K> {
    /// A decoder expecting objects of `api_version` (`v1`, `apps/v1`) and `kind`.
    #[must_use]
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        let (api_version, kind) = (api_version.into(), kind.into());
        let needle = |key: &str, value: &str| {
            let bytes = serde_json::to_vec(&serde_json::json!({ key: value }))
                .map(|mut v| {
                    // `{"key":"value"}` → `"key":"value"`
                    v.pop();
                    v.remove(0);
                    v
                })
                .unwrap_or_default();
            Finder::new(&bytes).into_owned()
        };
        WatchDecoder {
            kind_needles: Arc::new([needle("apiVersion", &api_version), needle("kind", &kind)]),
            api_version,
            kind,
            filter: None,
            compact: |_| {},
            _k: PhantomData,
        }
    }

    /// Runs `compact` on the object of every ADDED or MODIFIED event decoded.
    #[must_use]
    pub(crate) fn compacting(mut self, compact: fn(&mut K)) -> Self {
        self.compact = compact;
        self
    }

    /// Skips `filter`'s paths of each event's object while decoding (paths are
    /// relative to the object: `metadata.managedFields`). An empty filter decodes
    /// with plain serde_json.
    #[must_use]
    pub fn field_filter(mut self, filter: &FieldFilter) -> Self {
        self.filter = (!filter.is_empty()).then(|| Arc::new(filter.for_watch_object()));
        self
    }

    /// Decodes one line.
    ///
    /// # Errors
    /// [`ListWatchError::UnexpectedKind`] for a well-formed event of another kind or
    /// apiVersion; [`ListWatchError::Decode`] for anything else that is not an event.
    pub fn decode_line(&self, line: &[u8]) -> Result<WatchEvent<K>, ListWatchError> {
        let decoded = decode_filtered::<WatchEvent<K>>(line, self.filter.as_deref());
        match decoded {
            Ok(WatchEvent::Error(status)) => Ok(WatchEvent::Error(status)),
            // Types whose deserializer does not check `apiVersion`/`kind` (kube-derive's
            // custom resources) decode an object of any kind: confirm it.
            Ok(mut ev) => match self.kind_mismatch(line) {
                Some(mismatch) => Err(mismatch),
                None => {
                    if let WatchEvent::Added(obj) | WatchEvent::Modified(obj) = &mut ev {
                        (self.compact)(obj);
                    }
                    Ok(ev)
                }
            },
            Err(source) => Err(self.classify_failure(line, source)),
        }
    }

    /// `Some(UnexpectedKind)` when the event's object is of another kind or
    /// apiVersion. Usually two substring searches; the line is parsed again only when
    /// they do not both match.
    fn kind_mismatch(&self, line: &[u8]) -> Option<ListWatchError> {
        let [api_version, kind] = &*self.kind_needles;
        if kind.find(line).is_some() && api_version.find(line).is_some() {
            return None;
        }
        let env = serde_json::from_slice::<Envelope>(line).ok()?;
        let found_api_version = env.object.api_version.unwrap_or_default();
        let found_kind = env.object.kind.unwrap_or_default();
        let mismatch = (!found_api_version.is_empty() && found_api_version != self.api_version)
            || (!found_kind.is_empty() && found_kind != self.kind);
        mismatch.then(|| ListWatchError::UnexpectedKind {
            expected: format!("{}/{}", self.api_version, self.kind),
            found: format!("{found_api_version}/{found_kind}"),
        })
    }

    fn classify_failure(&self, line: &[u8], source: serde_json::Error) -> ListWatchError {
        if let Ok(env) = serde_json::from_slice::<Envelope>(line)
            && matches!(
                env.event_type.as_str(),
                "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK"
            )
        {
            let api_version = env.object.api_version.unwrap_or_default();
            let kind = env.object.kind.unwrap_or_default();
            if (!api_version.is_empty() && api_version != self.api_version)
                || (!kind.is_empty() && kind != self.kind)
            {
                return ListWatchError::UnexpectedKind {
                    expected: format!("{}/{}", self.api_version, self.kind),
                    found: format!("{api_version}/{kind}"),
                };
            }
        }
        ListWatchError::Decode {
            what: "watch event",
            source,
        }
    }
}

/// One watch line as the blocking pool decodes it: the event, or why the line is not
/// one (an unexpected kind goes on; anything else is the last line).
impl<K: DeserializeOwned + Send + 'static> DecodeItem<Result<WatchEvent<K>, ListWatchError>>
    for WatchDecoder<K>
{
    fn decode(
        &self,
        _index: usize,
        line: &[u8],
    ) -> Result<Result<WatchEvent<K>, ListWatchError>, ListWatchError> {
        Ok(self.decode_line(line))
    }

    fn is_last(item: &Result<WatchEvent<K>, ListWatchError>) -> bool {
        ends_the_watch(item)
    }

    const WHAT: &'static str = "watch event";
}

/// Whether `item` is the last of a watch: an error other than an unexpected kind.
fn ends_the_watch<K>(item: &Result<WatchEvent<K>, ListWatchError>) -> bool {
    matches!(item, Err(e) if !e.is_unexpected_kind())
}

impl<K: DeserializeOwned + Send + 'static> WatchDecoder<K> {
    /// Frames `body` into lines and decodes each: the stream a
    /// [`ListerWatcher::watch`](super::ListerWatcher::watch) returns. A transport
    /// error or a malformed line is yielded once and ends the stream.
    ///
    /// A line or two decode on the task that polls the stream, as they arrive; a
    /// backlog (the initial events of a watch-list, a burst) is decoded on every core
    /// by an [`ItemDecoder`], in order.
    pub fn decode_body<S, E>(self, body: S) -> WatchStream<K>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<ListWatchError>,
    {
        decode_lines(body, Arc::new(self))
    }
}

/// The complete lines buffered that make a backlog worth the blocking pool: fewer
/// decode on the polling task, one by one, with no hand-off (16 KiB: ~11 ConfigMaps of
/// ~1.4 KiB, some 30 µs of decoding, several times a hand-off to the pool and back).
const POOL_MIN_BYTES: usize = 16 * 1024;

/// How much is read without waiting, when the body has it, before lines go to the
/// decoder (64 KiB: a batch of ~45 ConfigMaps, ~100 µs of decoding). A server may write
/// each event as a chunk of its own; chunks already there to read are what shows a
/// backlog.
const READ_AHEAD_BYTES: usize = 64 * 1024;

/// Frames `body` into lines and decodes each with `decoder`, inline or on the blocking
/// pool: [`WatchDecoder::decode_body`], with the decoder a parameter for tests.
fn decode_lines<S, E, K, D>(body: S, decoder: Arc<D>) -> WatchStream<K>
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Into<ListWatchError>,
    K: Send + 'static,
    D: DecodeItem<Result<WatchEvent<K>, ListWatchError>>,
{
    let state = LineState {
        body: Box::pin(body),
        buf: BytesMut::new(),
        scanned: 0,
        body_ended: false,
        failed: None,
        done: false,
        pool: ItemDecoder::with(Arc::clone(&decoder)),
        decoder,
        ready: Vec::new().into_iter(),
        lines: 0,
    };
    futures::stream::unfold(state, |mut st| async move {
        let item = st.next_item().await?;
        Some((item, st))
    })
    .boxed()
}

/// A watch body being framed into lines and decoded.
struct LineState<S, K, D> {
    body: std::pin::Pin<Box<S>>,
    /// The bytes read and not yet framed into lines.
    buf: BytesMut,
    /// How many leading bytes of `buf` are known to hold no newline, so a line that
    /// spans many chunks is scanned once, not once per chunk.
    scanned: usize,
    /// The body has ended or failed: nothing more is read.
    body_ended: bool,
    /// Why the body failed: yielded once every event before it is out.
    failed: Option<ListWatchError>,
    /// The stream is over: `None` forever.
    done: bool,
    /// Decodes lines here, one by one.
    decoder: Arc<D>,
    /// Decodes a backlog's lines on the blocking pool, in order; shares `decoder`.
    pool: ItemDecoder<Result<WatchEvent<K>, ListWatchError>, D>,
    /// The rest of the oldest batch the pool decoded, yielded before anything else.
    ready: std::vec::IntoIter<Result<WatchEvent<K>, ListWatchError>>,
    /// The non-empty lines framed so far (the next one's index).
    lines: usize,
}

impl<S, E, K, D> LineState<S, K, D>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: Into<ListWatchError>,
    K: Send + 'static,
    D: DecodeItem<Result<WatchEvent<K>, ListWatchError>>,
{
    /// The next event, error, or `None` at the end. After an error that ends the
    /// watch, returns `None` forever.
    ///
    /// Lines keep their order: one decodes here only when no line before it is
    /// waiting for or on the pool.
    ///
    /// # Cancel safety
    /// Cancel-safe: a chunk read is in `buf` before any await, and a decoded batch
    /// leaves the pool only into `ready`.
    async fn next_item(&mut self) -> Option<Result<WatchEvent<K>, ListWatchError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(item) = self.ready.next() {
                // Lines gathered while the workers were behind go out once one is not.
                self.pool.dispatch(false);
                return Some(self.yielded(item));
            }
            self.read_ready_chunks();
            if self.pool.is_idle() && self.complete_len() < POOL_MIN_BYTES {
                // No backlog (an ordinary watch): decode the next line now, here.
                if let Some(line) = self.split_line() {
                    let trimmed = line.trim_ascii();
                    if trimmed.is_empty() {
                        continue;
                    }
                    let item = self.decode_here(trimmed);
                    return Some(self.yielded(item));
                }
            } else {
                self.hand_lines_to_pool();
                self.pool.dispatch(self.body_ended);
            }
            if self.pool.front_is_done()
                || self.pool.is_full()
                || (self.body_ended && !self.pool.is_idle())
            {
                self.pool.dispatch(self.body_ended);
                if let Some(done) = self.pool.next_done().await {
                    self.take_batch(done);
                    continue;
                }
            }
            if self.body_ended {
                return self.end_of_body();
            }
            let chunk = tokio::select! {
                biased;
                Some(done) = self.pool.next_done() => {
                    self.take_batch(done);
                    continue;
                }
                chunk = self.body.next() => chunk,
            };
            self.take_chunk(chunk);
        }
    }

    /// Decodes one line on this task.
    fn decode_here(&mut self, line: &[u8]) -> Result<WatchEvent<K>, ListWatchError> {
        let index = self.lines;
        self.lines += 1;
        self.decoder.decode(index, line).and_then(|item| item)
    }

    /// `item`, once it is yielded: an error other than an unexpected kind ends the
    /// watch, and whatever the pool still decodes is dropped.
    fn yielded(
        &mut self,
        item: Result<WatchEvent<K>, ListWatchError>,
    ) -> Result<WatchEvent<K>, ListWatchError> {
        if ends_the_watch(&item) {
            self.done = true;
            self.pool.abort();
            self.ready = Vec::new().into_iter();
        }
        item
    }

    /// A batch the pool has decoded: its events are yielded next. (A batch of lines
    /// fails only when the runtime shuts down; that error ends the watch.)
    fn take_batch(
        &mut self,
        done: Result<Vec<Result<WatchEvent<K>, ListWatchError>>, ListWatchError>,
    ) {
        self.ready = match done {
            Ok(items) => items,
            Err(e) => vec![Err(e)],
        }
        .into_iter();
    }

    /// Adds what the body yielded to the buffer, or notes that it ended.
    fn take_chunk(&mut self, chunk: Option<Result<Bytes, E>>) {
        match chunk {
            Some(Ok(chunk)) => {
                if self.buf.is_empty() {
                    self.buf = BytesMut::from(chunk.chunk());
                } else {
                    self.buf.extend_from_slice(&chunk);
                }
            }
            Some(Err(e)) => {
                self.body_ended = true;
                self.failed = Some(e.into());
            }
            None => self.body_ended = true,
        }
    }

    /// Reads the chunks the body already has (no waiting), up to
    /// [`READ_AHEAD_BYTES`] buffered: a backlog shows as more than one.
    fn read_ready_chunks(&mut self) {
        while !self.body_ended && self.buf.len() + self.pool.pending_bytes() < READ_AHEAD_BYTES {
            match self.body.next().now_or_never() {
                Some(chunk) => self.take_chunk(chunk),
                None => break,
            }
        }
    }

    /// The length of the complete lines at the start of `buf` (up to its last newline).
    fn complete_len(&mut self) -> usize {
        match memchr::memrchr(b'\n', &self.buf[self.scanned..]) {
            Some(pos) => self.scanned + pos + 1,
            None => {
                self.scanned = self.buf.len();
                0
            }
        }
    }

    /// The first complete line of `buf` (with its newline), if there is one.
    fn split_line(&mut self) -> Option<BytesMut> {
        let pos = memchr::memchr(b'\n', &self.buf[self.scanned..])? + self.scanned;
        self.scanned = 0;
        Some(self.buf.split_to(pos + 1))
    }

    /// Hands every complete line of `buf` to the pool's gathered batch.
    fn hand_lines_to_pool(&mut self) {
        let end = self.complete_len();
        if end == 0 {
            return;
        }
        let lines = self.buf.split_to(end);
        self.scanned = self.buf.len();
        let mut start = 0;
        for newline in memchr::memchr_iter(b'\n', &lines) {
            let trimmed = lines[start..newline].trim_ascii();
            start = newline + 1;
            if !trimmed.is_empty() {
                self.pool.push(self.lines, trimmed);
                self.lines += 1;
            }
        }
    }

    /// The end of the stream, once every complete line is out: the body's error, or
    /// its last line if it had no newline. A line cut short (unexpected EOF) ends the
    /// watch quietly, as client-go's stream watcher does.
    fn end_of_body(&mut self) -> Option<Result<WatchEvent<K>, ListWatchError>> {
        self.done = true;
        if let Some(e) = self.failed.take() {
            if e.is_probable_eof() {
                tracing::debug!(error = %e, "watch connection ended; ending the watch");
                return None;
            }
            return Some(Err(e));
        }
        let rest = std::mem::take(&mut self.buf);
        let trimmed = rest.trim_ascii();
        if trimmed.is_empty() {
            return None;
        }
        // A complete last line without its newline still counts.
        match self.decode_here(trimmed) {
            Ok(ev) => Some(Ok(ev)),
            Err(ListWatchError::Decode { source, .. }) if source.is_eof() => {
                tracing::debug!("watch body ended inside an event; ending the watch");
                None
            }
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests;
