//! The list scanner's tests: items and head whatever the chunk boundaries, bounded
//! memory, structure errors.

use super::*;

/// Scans `body` cut into chunks at `cuts`; the items and the head, or the error.
fn scan(body: &[u8], cuts: &[usize]) -> Result<(Vec<String>, String), ListWatchError> {
    let mut scanner = ListScanner::default();
    let mut items = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
        scanner.feed(&body[from..cut], &mut |index, bytes| {
            assert_eq!(index, items.len());
            items.push(String::from_utf8(bytes.to_vec()).unwrap());
            Ok(())
        })?;
        from = cut;
    }
    let head = scanner.finish()?;
    Ok((items, String::from_utf8(head).unwrap()))
}

/// Items with escapes, nested brackets inside strings, multi-byte UTF-8, an escaped
/// backslash before a closing quote, and strings longer than the search's word-wide
/// start (`SHORT_RUN` bytes) with escapes and brackets past it.
const TRICKY: &str = concat!(
    r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"a]}"},"#,
    r#""items":[{"metadata":{"name":"a\"]}"},"data":{"k":"é€😀 \\"}} , "#,
    r#"{"metadata":{"name":"b"},"data":{"x\\\"y":"[{\"}"}},"#,
    "\n  {\"n\":[1,[2,{}]],\"s\":\"\\u00e9\\n\"},",
    r#"{"long":"0123456789abcdefghijklmnopqrstuvwxyz-0123456789 \"quoted]}\" é€ and \\ then [{","#,
    r#""0123456789abcdefghijklmnopqrstuvwxyz key \\":"0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEF\\"}"#,
    "\n]}\n"
);

fn expected_items() -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(TRICKY).unwrap();
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn expected_head() -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(TRICKY).unwrap();
    v.as_object_mut().unwrap().remove("items");
    v
}

fn normalized(items: &[String]) -> Vec<String> {
    items
        .iter()
        .map(|s| {
            serde_json::from_str::<serde_json::Value>(s)
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn one_chunk_yields_every_item_and_the_head() {
    let (items, head) = scan(TRICKY.as_bytes(), &[]).unwrap();
    assert_eq!(normalized(&items), expected_items());
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&head).unwrap(),
        expected_head()
    );
}

/// Every split of the body into two chunks, and into single bytes: the same items
/// (byte for byte) and head, whatever the boundaries cut (escapes, multi-byte
/// characters, brackets in strings, keys).
#[test]
fn every_chunk_boundary_yields_the_same_items() {
    let body = TRICKY.as_bytes();
    let (whole, head) = scan(body, &[]).unwrap();
    for cut in 0..=body.len() {
        let (items, h) = scan(body, &[cut]).unwrap();
        assert_eq!(items, whole, "cut at {cut}");
        assert_eq!(h, head, "cut at {cut}");
    }
    let bytes: Vec<usize> = (1..body.len()).collect();
    assert_eq!(scan(body, &bytes).unwrap(), (whole, head));
}

/// Any member order: `items` first, the head after it, scalars in the head.
#[test]
fn items_before_metadata_and_scalar_members() {
    let body =
        br#"{"items":[{"a":1},{"b":[]}],"n":12,"ok":true,"metadata":{"resourceVersion":"3"}}"#;
    for cut in 0..=body.len() {
        let (items, head) = scan(body, &[cut]).unwrap();
        assert_eq!(items, [r#"{"a":1}"#, r#"{"b":[]}"#], "cut at {cut}");
        assert_eq!(
            head,
            r#"{"n":12,"ok":true,"metadata":{"resourceVersion":"3"}}"#
        );
    }
}

#[test]
fn empty_null_and_absent_items() {
    assert_eq!(scan(b"{\"items\":[]}", &[]).unwrap().0.len(), 0);
    assert_eq!(scan(b" { } ", &[]).unwrap(), (vec![], "{}".to_owned()));
    // `null` (or anything else) is kept in the head, for its decoder to judge.
    assert_eq!(
        scan(br#"{"items":null}"#, &[]).unwrap().1,
        r#"{"items":null}"#
    );
}

/// A list of 100 equal items of ~1 KiB: one item, and the whole body.
fn hundred_items() -> (String, String) {
    let item = format!(r#"{{"data":{{"v":"{}"}}}}"#, "x".repeat(1000));
    let items = vec![item.as_str(); 100].join(",");
    let body = format!(r#"{{"metadata":{{}},"items":[{items}]}}"#);
    (item, body)
}

/// The scanner keeps only the unfinished element, not what it handed out.
#[test]
fn holds_only_the_unfinished_item() {
    let (item, body) = hundred_items();
    let mut scanner = ListScanner::default();
    let mut n = 0;
    for chunk in body.as_bytes().chunks(700) {
        scanner
            .feed(chunk, &mut |_, bytes| {
                assert_eq!(bytes, item.as_bytes());
                n += 1;
                Ok(())
            })
            .unwrap();
        assert!(
            scanner.buf.len() <= item.len() + 700,
            "{}",
            scanner.buf.len()
        );
    }
    assert_eq!(n, 100);
    scanner.finish().unwrap();
}

#[test]
fn a_body_cut_mid_item_names_the_item() {
    let body = TRICKY.as_bytes();
    let at = TRICKY.find(r#"{"metadata":{"name":"b""#).unwrap() + 5;
    let err = scan(&body[..at], &[]).unwrap_err();
    assert!(
        err.to_string().contains("cannot decode list")
            && format!("{err:?}").contains("inside item 1"),
        "{err:?}"
    );
    for end in 0..body.len() - 2 {
        assert!(
            matches!(
                scan(&body[..end], &[]),
                Err(ListWatchError::Decode { what: "list", .. })
            ),
            "cut at {end}"
        );
    }
}

#[test]
fn structure_errors_are_decode_errors() {
    for bad in [
        &b"[1,2]"[..],
        br#"{"items":[{} {}]}"#,
        br#"{"items":[{},]}"#,
        br#"{"items":[{}]} x"#,
        br#"{"a" 1}"#,
        br#"{"a":1,}"#,
        br#"{,}"#,
    ] {
        let err = scan(bad, &[]).unwrap_err();
        assert!(
            matches!(err, ListWatchError::Decode { what: "list", .. }),
            "{}: {err:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

/// Items that end in the chunk read are handed out from it; only the one that goes on
/// past it is copied.
#[test]
fn items_that_end_in_a_chunk_are_handed_out_from_it_uncopied() {
    let (item, body) = hundred_items();
    // The first chunk ends inside the last item.
    let (first, second) = body.as_bytes().split_at(body.len() - item.len() / 2);
    let mut scanner = ListScanner::default();
    let mut n = 0;
    let in_first = first.as_ptr_range();
    scanner
        .feed(first, &mut |_, bytes| {
            assert_eq!(bytes, item.as_bytes());
            assert!(in_first.contains(&bytes.as_ptr()), "item {n} was copied");
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 99);
    // Only the unfinished item was copied, not the chunk.
    assert!(
        scanner.buf.capacity() < 2 * item.len(),
        "{}",
        scanner.buf.capacity()
    );
    scanner
        .feed(second, &mut |_, bytes| {
            assert_eq!(bytes, item.as_bytes());
            n += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 100);
    assert!(
        scanner.buf.capacity() < 2 * item.len(),
        "{}",
        scanner.buf.capacity()
    );
    scanner.finish().unwrap();
}

/// The string search finds the first `"` or `\` wherever it is: in the words read
/// eight bytes at a time, in their remainder, or past them (`memchr`), behind bytes
/// one off either (`!`, `[`, `]`, `#`), a zero byte and multi-byte UTF-8, which a
/// word-wide compare must not take for a match.
#[test]
fn the_string_search_finds_the_first_quote_or_backslash_at_any_offset() {
    let fillers: [&[u8]; 3] = [b"!#[]]![#", "\0é€😀".as_bytes(), b"\0\x01abcdefg"];
    for filler in fillers {
        for len in 0..(SHORT_RUN + 24) {
            let prefix: Vec<u8> = filler.iter().copied().cycle().take(len).collect();
            assert_eq!(quote_or_backslash(&prefix), None, "{prefix:?}");
            for target in [b'"', b'\\'] {
                for tail in [&b""[..], b"\"", b"\\", b"x\"y\\"] {
                    let mut hay = prefix.clone();
                    hay.push(target);
                    hay.extend_from_slice(tail);
                    assert_eq!(quote_or_backslash(&hay), Some(len), "{hay:?}");
                }
            }
        }
    }
}
