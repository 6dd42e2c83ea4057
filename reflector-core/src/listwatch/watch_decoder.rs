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
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use serde_field_filter::FieldFilter;

use super::list_stream::decode_filtered;
use super::{ListWatchError, WatchEvent, WatchStream};

/// Decodes watch lines for one resource type.
#[derive(Debug)]
pub struct WatchDecoder<K> {
    api_version: String,
    kind: String,
    /// `"apiVersion":"<api_version>"` and `"kind":"<kind>"` as the API server writes
    /// them: finding both in a line confirms its kind without parsing it again.
    kind_needles: Arc<[Vec<u8>; 2]>,
    /// The filter for a whole event (`object.` + the object paths); `None`: plain
    /// serde_json.
    filter: Option<Arc<FieldFilter>>,
    _k: PhantomData<fn() -> K>,
}

impl<K> Clone for WatchDecoder<K> {
    fn clone(&self) -> Self {
        WatchDecoder {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            kind_needles: Arc::clone(&self.kind_needles),
            filter: self.filter.clone(),
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
            serde_json::to_vec(&serde_json::json!({ key: value }))
                .map(|mut v| {
                    // `{"key":"value"}` → `"key":"value"`
                    v.pop();
                    v.remove(0);
                    v
                })
                .unwrap_or_default()
        };
        WatchDecoder {
            kind_needles: Arc::new([needle("apiVersion", &api_version), needle("kind", &kind)]),
            api_version,
            kind,
            filter: None,
            _k: PhantomData,
        }
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
            Ok(ev) => match self.kind_mismatch(line) {
                Some(mismatch) => Err(mismatch),
                None => Ok(ev),
            },
            Err(source) => Err(self.classify_failure(line, source)),
        }
    }

    /// `Some(UnexpectedKind)` when the event's object is of another kind or
    /// apiVersion. Usually two substring searches; the line is parsed again only when
    /// they do not both match.
    fn kind_mismatch(&self, line: &[u8]) -> Option<ListWatchError> {
        let [api_version, kind] = &*self.kind_needles;
        if memchr::memmem::find(line, kind).is_some()
            && memchr::memmem::find(line, api_version).is_some()
        {
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

impl<K: DeserializeOwned + Send + 'static> WatchDecoder<K> {
    /// Frames `body` into lines and decodes each: the stream a
    /// [`ListerWatcher::watch`](super::ListerWatcher::watch) returns. A transport
    /// error or a malformed line is yielded once and ends the stream.
    pub fn decode_body<S, E>(self, body: S) -> WatchStream<K>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<ListWatchError>,
    {
        let state = LineState {
            body: Box::pin(body),
            buf: BytesMut::new(),
            scanned: 0,
            done: false,
            decoder: self,
        };
        futures::stream::unfold(state, |mut st| async move {
            let item = st.next_item().await?;
            Some((item, st))
        })
        .boxed()
    }
}

struct LineState<S, K> {
    body: std::pin::Pin<Box<S>>,
    buf: BytesMut,
    /// How many leading bytes of `buf` are known to hold no newline, so a line that
    /// spans many chunks is scanned once, not once per chunk.
    scanned: usize,
    done: bool,
    decoder: WatchDecoder<K>,
}

impl<S, E, K> LineState<S, K>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: Into<ListWatchError>,
    K: DeserializeOwned,
{
    /// The next event, error, or `None` at the end. After an error that ends the
    /// watch, returns `None` forever.
    async fn next_item(&mut self) -> Option<Result<WatchEvent<K>, ListWatchError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(pos) =
                memchr::memchr(b'\n', &self.buf[self.scanned..]).map(|p| p + self.scanned)
            {
                self.scanned = 0;
                let line = self.buf.split_to(pos + 1);
                let trimmed = trim_ascii(&line[..pos]);
                if trimmed.is_empty() {
                    continue;
                }
                let res = self.decoder.decode_line(trimmed);
                if matches!(&res, Err(e) if !e.is_unexpected_kind()) {
                    self.done = true;
                }
                return Some(res);
            }
            match self.body.next().await {
                Some(Ok(chunk)) => {
                    self.scanned = self.buf.len();
                    if self.buf.is_empty() {
                        self.buf = BytesMut::from(chunk.chunk());
                    } else {
                        self.buf.extend_from_slice(&chunk);
                    }
                }
                Some(Err(e)) => {
                    self.done = true;
                    let e: ListWatchError = e.into();
                    if e.is_probable_eof() {
                        tracing::debug!(error = %e, "watch connection ended; ending the watch");
                        return None;
                    }
                    return Some(Err(e));
                }
                None => {
                    self.done = true;
                    let rest = std::mem::take(&mut self.buf);
                    let trimmed = trim_ascii(&rest);
                    if trimmed.is_empty() {
                        return None;
                    }
                    // A complete last line without its newline still counts; a line cut
                    // short (unexpected EOF) ends the watch quietly, as client-go does.
                    return match self.decoder.decode_line(trimmed) {
                        Ok(ev) => Some(Ok(ev)),
                        Err(ListWatchError::Decode { source, .. }) if source.is_eof() => {
                            tracing::debug!("watch body ended inside an event; ending the watch");
                            None
                        }
                        Err(e) => Some(Err(e)),
                    };
                }
            }
        }
    }
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    /// (Was the rustdoc example while `WatchDecoder` was public.)
    #[test]
    fn decodes_a_line_and_flags_another_kind() {
        let d = WatchDecoder::<ConfigMap>::new("v1", "ConfigMap");
        let ev = d.decode_line(br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}"#).unwrap();
        assert!(matches!(ev, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("a")));
        let wrong = d.decode_line(br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}}"#);
        assert!(wrong.unwrap_err().is_unexpected_kind());
    }

    const ADDED_A: &str = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"5"}}}"#;

    fn decoder() -> WatchDecoder<ConfigMap> {
        WatchDecoder::new("v1", "ConfigMap")
    }

    async fn collect(
        chunks: Vec<&'static str>,
    ) -> Vec<Result<WatchEvent<ConfigMap>, ListWatchError>> {
        let body = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, ListWatchError>(Bytes::from_static(c.as_bytes()))),
        );
        decoder().decode_body(body).collect().await
    }

    #[tokio::test]
    async fn frames_lines_split_across_chunks() {
        let line = format!("{ADDED_A}\n");
        let (a, b) = line.split_at(40);
        let a: &'static str = Box::leak(a.to_owned().into_boxed_str());
        let b: &'static str = Box::leak(b.to_owned().into_boxed_str());
        let got = collect(vec![a, b, "\n", a, b]).await;
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|r| matches!(r, Ok(WatchEvent::Added(_)))));
    }

    /// A type whose derived `Deserialize` ignores `apiVersion` and `kind`, as
    /// kube-derive's custom resource roots do.
    #[derive(serde::Deserialize, Clone, Debug)]
    struct Loose {
        #[allow(dead_code)]
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    }

    #[test]
    fn wrong_kind_is_caught_for_types_that_accept_any_kind() {
        let d = WatchDecoder::<Loose>::new("example.com/v1", "Widget");
        let line = |api_version: &str, kind: &str| {
            format!(
                r#"{{"type":"ADDED","object":{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"name":"a"}}}}}}"#
            )
        };
        assert!(matches!(
            d.decode_line(line("example.com/v1", "Widget").as_bytes()),
            Ok(WatchEvent::Added(_))
        ));
        for (api_version, kind) in [("example.com/v1", "Gadget"), ("example.com/v2", "Widget")] {
            let err = d
                .decode_line(line(api_version, kind).as_bytes())
                .expect_err("another kind must not be accepted");
            assert!(err.is_unexpected_kind(), "{err}");
        }
        // Spacing other than the API server's compact form still decodes correctly.
        let spaced = r#"{"type":"MODIFIED","object":{"apiVersion": "example.com/v1", "kind": "Widget","metadata":{"name":"a"}}}"#;
        assert!(matches!(
            d.decode_line(spaced.as_bytes()),
            Ok(WatchEvent::Modified(_))
        ));
        // A bookmark of the expected kind and an ERROR event (a Status) are not rejected.
        let bookmark = r#"{"type":"BOOKMARK","object":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"resourceVersion":"7"}}}"#;
        assert!(matches!(
            d.decode_line(bookmark.as_bytes()),
            Ok(WatchEvent::Bookmark(_))
        ));
        let error = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410,"reason":"Expired"}}"#;
        assert!(matches!(
            d.decode_line(error.as_bytes()),
            Ok(WatchEvent::Error(_))
        ));
    }

    #[tokio::test]
    async fn wrong_kind_is_skippable_and_the_stream_goes_on() {
        let pod =
            r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}"#;
        let s: &'static str = Box::leak(format!("{pod}\n{ADDED_A}\n").into_boxed_str());
        let got = collect(vec![s]).await;
        assert_eq!(got.len(), 2);
        assert!(matches!(&got[0], Err(e) if e.is_unexpected_kind()));
        assert!(matches!(&got[1], Ok(WatchEvent::Added(_))));
    }

    #[tokio::test]
    async fn malformed_line_ends_the_stream_with_a_decode_error() {
        let s: &'static str = Box::leak(format!("{{not json\n{ADDED_A}\n").into_boxed_str());
        let got = collect(vec![s]).await;
        assert_eq!(got.len(), 1);
        assert!(matches!(&got[0], Err(ListWatchError::Decode { .. })));
    }

    #[tokio::test]
    async fn non_event_json_line_ends_the_stream() {
        let s: &'static str = Box::leak(format!("{{\"hello\":1}}\n{ADDED_A}\n").into_boxed_str());
        let got = collect(vec![s]).await;
        assert_eq!(got.len(), 1);
        assert!(matches!(&got[0], Err(ListWatchError::Decode { .. })));
    }

    #[tokio::test]
    async fn truncated_last_line_ends_quietly() {
        let s: &'static str = Box::leak(format!("{ADDED_A}\n{}", &ADDED_A[..30]).into_boxed_str());
        let got = collect(vec![s]).await;
        assert_eq!(got.len(), 1);
        assert!(matches!(&got[0], Ok(WatchEvent::Added(_))));
    }

    #[tokio::test]
    async fn error_event_decodes_to_status() {
        let s = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\",\"code\":410}}\n";
        let got = collect(vec![s]).await;
        assert!(
            matches!(&got[0], Ok(WatchEvent::Error(s)) if s.code == 410 && s.reason == "Expired")
        );
    }

    const ADDED_MF: &str = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"6","managedFields":[{"manager":"kubectl","fieldsV1":{"f:data":{}}}]},"data":{"k":"v"}}}"#;

    fn lean_decoder() -> WatchDecoder<ConfigMap> {
        decoder().field_filter(&FieldFilter::managed_fields())
    }

    async fn collect_lean(
        chunks: Vec<String>,
    ) -> Vec<Result<WatchEvent<ConfigMap>, ListWatchError>> {
        let body = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, ListWatchError>(Bytes::from(c))),
        );
        lean_decoder().decode_body(body).collect().await
    }

    #[test]
    fn filtered_decoder_drops_managed_fields_and_keeps_the_rest() {
        let ev = lean_decoder().decode_line(ADDED_MF.as_bytes()).unwrap();
        let WatchEvent::Added(cm) = ev else {
            panic!("expected ADDED")
        };
        assert!(cm.metadata.managed_fields.is_none());
        assert_eq!(cm.metadata.resource_version.as_deref(), Some("6"));
        assert_eq!(cm.data.unwrap()["k"], "v");
        let plain = decoder().decode_line(ADDED_MF.as_bytes()).unwrap();
        assert!(matches!(plain, WatchEvent::Added(cm) if cm.metadata.managed_fields.is_some()));
    }

    #[tokio::test]
    async fn filtered_decoder_classifies_wrong_kind_malformed_and_error_events() {
        let pod = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","managedFields":[]}}}"#;
        let status = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}"#;
        let got = collect_lean(vec![format!("{pod}\n{ADDED_MF}\n{status}\n{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"managedFields\":[1,]}}}}}}\n{ADDED_MF}\n")]).await;
        assert_eq!(got.len(), 4);
        assert!(matches!(&got[0], Err(e) if e.is_unexpected_kind()));
        assert!(
            matches!(&got[1], Ok(WatchEvent::Added(cm)) if cm.metadata.managed_fields.is_none())
        );
        assert!(matches!(&got[2], Ok(WatchEvent::Error(s)) if s.code == 410));
        assert!(matches!(&got[3], Err(ListWatchError::Decode { .. })));
    }

    #[tokio::test]
    async fn filtered_decoder_truncated_last_line_inside_skipped_field_ends_quietly() {
        let cut = ADDED_MF.find("kubectl").unwrap();
        let got = collect_lean(vec![format!("{ADDED_MF}\n{}", &ADDED_MF[..cut])]).await;
        assert_eq!(got.len(), 1);
        assert!(matches!(&got[0], Ok(WatchEvent::Added(_))));
    }

    #[tokio::test]
    async fn transport_error_is_yielded_once_then_the_stream_ends() {
        let body = futures::stream::iter(vec![
            Ok(Bytes::from_static(b"{\"type\":")),
            Err(ListWatchError::Decode {
                what: "test",
                source: serde_json::from_str::<u8>("x").unwrap_err(),
            }),
            Ok(Bytes::from_static(b"\n")),
        ]);
        let got: Vec<_> = decoder().decode_body(body).collect().await;
        assert_eq!(got.len(), 1);
        assert!(got[0].is_err());
    }
}
