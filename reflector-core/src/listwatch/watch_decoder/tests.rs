//! Tests of the watch decoder: framing, classification, and batches decoded on the pool.

use super::*;
use crate::listwatch::scripted_decode::{self, LetGo, wait_until};
use k8s_openapi::api::core::v1::ConfigMap;

/// (Was the rustdoc example while `WatchDecoder` was public.)
#[test]
fn decodes_a_line_and_flags_another_kind() {
    let d = WatchDecoder::<ConfigMap>::new("v1", "ConfigMap");
    let ev = d.decode_line(br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}"#).unwrap();
    assert!(matches!(ev, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("a")));
    let wrong = d.decode_line(
        br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}}"#,
    );
    assert!(wrong.unwrap_err().is_unexpected_kind());
}

const ADDED_A: &str = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"5"}}}"#;

fn decoder() -> WatchDecoder<ConfigMap> {
    WatchDecoder::new("v1", "ConfigMap")
}

async fn collect(chunks: Vec<&'static str>) -> Vec<Result<WatchEvent<ConfigMap>, ListWatchError>> {
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
    assert!(matches!(&got[0], Ok(WatchEvent::Error(s)) if s.code == 410 && s.reason == "Expired"));
}

const ADDED_MF: &str = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"6","managedFields":[{"manager":"kubectl","fieldsV1":{"f:data":{}}}]},"data":{"k":"v"}}}"#;

fn lean_decoder() -> WatchDecoder<ConfigMap> {
    decoder().field_filter(&FieldFilter::managed_fields())
}

async fn collect_lean(chunks: Vec<String>) -> Vec<Result<WatchEvent<ConfigMap>, ListWatchError>> {
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
    assert!(matches!(&got[1], Ok(WatchEvent::Added(cm)) if cm.metadata.managed_fields.is_none()));
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

/// A watch line: ADDED ConfigMap `c<i>`.
fn added(i: usize) -> String {
    format!(
        r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c{i}","resourceVersion":"{i}"}}}}}}"#
    )
}

/// `n` lines ADDED `c0`, `c1`, …, with line `i` replaced by `odd(i)` where it says.
fn lines(n: usize, odd: impl Fn(usize) -> Option<String>) -> String {
    (0..n)
        .map(|i| odd(i).unwrap_or_else(|| added(i)) + "\n")
        .collect()
}

/// `body` in chunks of `size` bytes, all there at once (a backlog).
fn in_chunks(body: &str, size: usize) -> impl Stream<Item = Result<Bytes, ListWatchError>> + use<> {
    let chunks: Vec<_> = body
        .as_bytes()
        .chunks(size)
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    futures::stream::iter(chunks)
}

/// The index in an event's object's name (`c17` is 17).
fn number(item: &Result<WatchEvent<ConfigMap>, ListWatchError>) -> usize {
    let Ok(WatchEvent::Added(cm)) = item else {
        panic!("expected ADDED, got {item:?}")
    };
    cm.metadata.name.as_deref().unwrap()[1..].parse().unwrap()
}

/// The watch decoder, scripted: `held` lines wait until let go.
type Scripted = scripted_decode::Scripted<WatchDecoder<ConfigMap>>;

fn scripted(
    held: impl IntoIterator<Item = usize>,
) -> (Arc<Scripted>, LetGo<WatchDecoder<ConfigMap>>) {
    scripted_decode::Scripted::new(decoder(), held)
}

/// Every item `decoder` yields from `body`.
async fn collect_with(
    body: impl Stream<Item = Result<Bytes, ListWatchError>> + Send + 'static,
    decoder: &Arc<Scripted>,
) -> Vec<Result<WatchEvent<ConfigMap>, ListWatchError>> {
    decode_lines(body, Arc::clone(decoder)).collect().await
}

/// Streams `lines` (one line each, a backlog) through `decoder`, which holds lines
/// 0 and 500: lines 0–499 go to the pool as one batch, 500–999 as a second (each
/// ~55 KiB, under a batch's bytes). Line 500 is let go first, so the second batch is
/// done while the first is not, and nothing comes out meanwhile (the second batch's
/// last decode is line `second_ends_at`). Then line 0 is let go and the rest sent:
/// every item the stream yields, in order.
async fn second_batch_done_first(
    lines: &[String],
    second_ends_at: usize,
    decoder: &Arc<Scripted>,
) -> Vec<Result<WatchEvent<ConfigMap>, ListWatchError>> {
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, ListWatchError>>();
    let mut stream = decode_lines(rx, Arc::clone(decoder));
    let handed_out = Arc::strong_count(decoder);
    for part in [&lines[..500], &lines[500..1000]] {
        tx.unbounded_send(Ok(Bytes::from(part.concat()))).unwrap();
        assert!(stream.next().now_or_never().is_none(), "line 0 is held");
    }
    // Each batch in flight holds the decoder; both are held at their first line.
    assert_eq!(Arc::strong_count(decoder), handed_out + 2, "two batches");
    decoder.let_go(500);
    decoder.wait_for("the second batch is decoded", |s| {
        s.position(second_ends_at).is_some()
    });
    wait_until("the second batch's task has ended", || {
        Arc::strong_count(decoder) == handed_out + 1
    });
    for _ in 0..1000 {
        assert!(
            stream.next().now_or_never().is_none(),
            "nothing comes out before line 0"
        );
    }
    assert!(
        decoder.read(|s| s.position(0)).is_none(),
        "the first batch is not done"
    );
    decoder.let_go(0);
    tx.unbounded_send(Ok(Bytes::from(lines[1000..].concat())))
        .unwrap();
    drop(tx);
    stream.collect().await
}

/// `n` lines as [`lines`] makes them, one string each.
fn line_list(n: usize, odd: impl Fn(usize) -> Option<String>) -> Vec<String> {
    (0..n)
        .map(|i| lines(1, |_| Some(odd(i).unwrap_or_else(|| added(i)))))
        .collect()
}

/// A backlog of lines decodes on the pool in batches; a later batch is done before
/// the first, and the events still come out in line order.
#[tokio::test]
async fn order_is_kept_across_batches_that_finish_out_of_order() {
    let (decoder, _let_go) = scripted([0, 500]);
    let got = second_batch_done_first(&line_list(2000, |_| None), 999, &decoder).await;
    let numbers: Vec<usize> = got.iter().map(number).collect();
    assert_eq!(numbers, (0..2000).collect::<Vec<_>>());
    decoder.read(|s| {
        assert!(s.position(999) < s.position(0), "reordered");
        assert_eq!(s.pooled, 2000, "all on the pool");
    });
}

/// A malformed line in a batch decoded beside others (and done first) is yielded
/// once, after every event before it, and nothing after it comes out.
#[tokio::test]
async fn a_malformed_line_in_a_parallel_batch_is_the_last_item() {
    let (decoder, _let_go) = scripted([0, 500]);
    let lines = line_list(2000, |i| (i == 900).then(|| "{not json".to_owned()));
    let got = second_batch_done_first(&lines, 900, &decoder).await;
    assert_eq!(got.len(), 901);
    let numbers: Vec<usize> = got[..900].iter().map(number).collect();
    assert_eq!(numbers, (0..900).collect::<Vec<_>>());
    assert!(
        matches!(&got[900], Err(ListWatchError::Decode { .. })),
        "{:?}",
        got[900]
    );
    decoder.read(|s| {
        assert!(s.position(900) < s.position(0), "reordered");
        assert!(
            s.position(901).is_none(),
            "its batch stops after the malformed line"
        );
    });
}

/// Lines of another kind inside parallel batches are yielded in place, as errors
/// the reflector skips, and the stream goes on.
#[tokio::test]
async fn unexpected_kinds_in_a_parallel_batch_are_yielded_in_place() {
    let pod = |i: usize| {
        format!(
            r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p{i}"}}}}}}"#
        )
    };
    let odd = |i: usize| [300, 900, 1500].contains(&i);
    let (decoder, _let_go) = scripted([0, 500]);
    let lines = line_list(2000, |i| odd(i).then(|| pod(i)));
    let got = second_batch_done_first(&lines, 999, &decoder).await;
    assert_eq!(got.len(), 2000);
    for (i, item) in got.iter().enumerate() {
        if odd(i) {
            assert!(
                matches!(item, Err(e) if e.is_unexpected_kind()),
                "{i}: {item:?}"
            );
        } else {
            assert_eq!(number(item), i);
        }
    }
    assert!(
        decoder.read(|s| s.position(999) < s.position(0)),
        "reordered"
    );
}

/// A body that ends inside a line, after a backlog decoded on the pool, ends quietly
/// after the complete events; one broken off by the transport yields its error after
/// them.
#[tokio::test]
async fn a_body_cut_mid_line_after_a_backlog_ends_after_the_complete_events() {
    let whole = lines(2000, |_| None);
    let body = format!("{whole}{}", &added(2000)[..60]);
    let (decoder, _let_go) = scripted([]);
    let got = collect_with(in_chunks(&body, 4096), &decoder).await;
    let numbers: Vec<usize> = got.iter().map(number).collect();
    assert_eq!(numbers, (0..2000).collect::<Vec<_>>());
    assert!(decoder.read(|s| s.pooled) > 0, "a backlog goes to the pool");

    let broken =
        in_chunks(&body, 4096).chain(futures::stream::iter([Err(ListWatchError::Decode {
            what: "test",
            source: serde_json::from_str::<u8>("x").unwrap_err(),
        })]));
    let got = collect_with(broken, &scripted([]).0).await;
    assert_eq!(got.len(), 2001);
    let numbers: Vec<usize> = got[..2000].iter().map(number).collect();
    assert_eq!(numbers, (0..2000).collect::<Vec<_>>());
    assert!(
        matches!(&got[2000], Err(ListWatchError::Decode { what: "test", .. })),
        "{:?}",
        got[2000]
    );
}

/// An event arriving alone is decoded at once on the polling task: it waits for no
/// batch to fill and no hand-off to the pool.
#[tokio::test]
async fn a_lone_event_decodes_at_once_on_the_polling_task() {
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, ListWatchError>>();
    let (decoder, _let_go) = scripted([]);
    let mut stream = decode_lines(rx, Arc::clone(&decoder));
    tx.unbounded_send(Ok(Bytes::from(added(0) + "\n"))).unwrap();
    let first = stream.next().now_or_never().expect("no waiting").unwrap();
    assert_eq!(number(&first), 0);
    tx.unbounded_send(Ok(Bytes::from(lines(3, |i| Some(added(i + 1))))))
        .unwrap();
    for i in 1..4 {
        let item = stream.next().now_or_never().expect("no waiting").unwrap();
        assert_eq!(number(&item), i);
    }
    assert!(stream.next().now_or_never().is_none(), "waits for the body");
    assert_eq!(decoder.read(|s| s.pooled), 0);
}

/// Dropping the stream while a batch decodes stops the pool's thread after the line
/// it is on: it decodes nothing more and lets go of the decoder.
#[tokio::test]
async fn dropping_the_stream_stops_the_pool_work() {
    let (decoder, _let_go) = scripted([0]);
    let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, ListWatchError>>();
    tx.unbounded_send(Ok(Bytes::from(lines(400, |_| None))))
        .unwrap();
    let mut stream = decode_lines(rx, Arc::clone(&decoder));
    assert!(
        stream.next().now_or_never().is_none(),
        "the batch is held at line 0"
    );
    decoder.wait_for("the pool's thread is on line 0", |s| s.begun == 1);
    drop(stream);
    // The test's, the guard's and the pool thread's.
    assert_eq!(Arc::strong_count(&decoder), 3, "the pool's thread holds it");
    decoder.let_go(0);
    decoder.wait_for("line 0 is decoded", |s| s.done == [0]);
    wait_until("the pool's thread has ended", || {
        Arc::strong_count(&decoder) == 2
    });
    decoder.read(|s| {
        assert_eq!(s.begun, 1, "no line after the drop");
        assert_eq!(s.pooled, 1);
    });
}
