use std::cell::Cell;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use serde::de::DeserializeSeed;
use serde_json::{Value, json};

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny};

use super::*;
use kube::api::{ObjectList, WatchEvent};

const SAMPLE: &[u8] = include_bytes!("../tests/fixtures/configmap-sample.json");

fn filter(paths: &[&str]) -> FieldFilter {
    FieldFilter::parse(paths).unwrap()
}

fn filtered_value(json: &str, f: &FieldFilter) -> Value {
    from_slice(json.as_bytes(), f).unwrap()
}

#[test]
fn configmap_through_filter_equals_plain_decode_without_managed_fields() {
    let mut plain: ConfigMap = serde_json::from_slice(SAMPLE).unwrap();
    assert!(
        plain.metadata.managed_fields.is_some(),
        "fixture has managedFields"
    );
    plain.metadata.managed_fields = None;
    let lean: ConfigMap = from_slice(SAMPLE, &FieldFilter::managed_fields()).unwrap();
    assert_eq!(lean, plain);
    assert_eq!(lean.data.as_ref().map(BTreeMap::len), Some(3));
    assert_eq!(lean.metadata.labels.as_ref().map(BTreeMap::len), Some(3));
}

#[test]
fn skips_nested_metadata_field_and_keeps_siblings() {
    let got = filtered_value(
        r#"{"metadata":{"name":"a","managedFields":[{"manager":"m","fieldsV1":{"f:x":{}}}],"uid":"u"},"x":1}"#,
        &FieldFilter::managed_fields(),
    );
    assert_eq!(got, json!({"metadata":{"name":"a","uid":"u"},"x":1}));
}

#[test]
fn wildcard_removes_condition_messages_but_keeps_other_condition_fields() {
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
        "status":{"phase":"Running","conditions":[
          {"type":"Ready","status":"True","message":"long text","reason":"R"},
          {"type":"Initialized","status":"True","message":"more"}]}}"#;
    let f = filter(&["status.conditions[*].message"]);
    let got: Pod = from_slice(pod.as_bytes(), &f).unwrap();
    let status = got.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    let conds = status.conditions.unwrap();
    assert_eq!(conds.len(), 2);
    assert!(conds.iter().all(|c| c.message.is_none()));
    assert_eq!(conds[0].type_, "Ready");
    assert_eq!(conds[0].status, "True");
    assert_eq!(conds[0].reason.as_deref(), Some("R"));
    assert_eq!(conds[1].type_, "Initialized");
}

#[test]
fn wildcard_applies_to_nested_arrays() {
    let f = filter(&["a[*][*].x"]);
    let got = filtered_value(r#"{"a":[[{"x":1,"y":2}],[{"x":3},{"y":4}]]}"#, &f);
    assert_eq!(got, json!({"a":[[{"y":2}],[{},{"y":4}]]}));
}

#[test]
fn wildcard_at_the_end_drops_every_element() {
    let got = filtered_value(r#"{"a":[1,[2],{"b":3}],"c":[1]}"#, &filter(&["a[*]"]));
    assert_eq!(got, json!({"a":[],"c":[1]}));
}

#[test]
fn unknown_fields_pass_through_untouched() {
    let src = r#"{"metadata":{"name":"a","extra":{"deep":[1,2,{"managedFields":1}]}},"other":{"metadata":{"managedFields":1}}}"#;
    let got = filtered_value(src, &FieldFilter::managed_fields());
    let want: Value = serde_json::from_str(src).unwrap();
    assert_eq!(got, want);
    let cm: ConfigMap = from_slice(
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","managedFields":[]},"unknown":{"x":[1]}}"#,
        &FieldFilter::managed_fields(),
    )
    .unwrap();
    assert_eq!(cm.metadata.name.as_deref(), Some("a"));
}

#[test]
fn escaped_keys_are_compared_after_unescaping() {
    let got = filtered_value(
        r#"{"met\u0061data":{"man\u0061gedFields":[{"a":1}],"n\u0061me":"x"}}"#,
        &FieldFilter::managed_fields(),
    );
    assert_eq!(got, json!({"metadata":{"name":"x"}}));
    let cm: ConfigMap = from_slice(
        br#"{"metadata":{"man\u0061gedFields":[{"manager":"m"}],"n\u0061me":"x"}}"#,
        &FieldFilter::managed_fields(),
    )
    .unwrap();
    assert!(cm.metadata.managed_fields.is_none());
    assert_eq!(cm.metadata.name.as_deref(), Some("x"));
}

#[test]
fn managed_fields_outside_metadata_is_left_alone() {
    let got = filtered_value(
        r#"{"managedFields":1,"spec":{"managedFields":[2]},"metadata":{"managedFields":[3],"x":{"managedFields":4}}}"#,
        &FieldFilter::managed_fields(),
    );
    assert_eq!(
        got,
        json!({"managedFields":1,"spec":{"managedFields":[2]},"metadata":{"x":{"managedFields":4}}})
    );
}

#[test]
fn data_is_filtered_entirely() {
    let cm: ConfigMap = from_slice(SAMPLE, &filter(&["data"])).unwrap();
    assert!(cm.data.is_none());
    assert_eq!(cm.metadata.name.as_deref(), Some("cm-000000"));
    assert!(cm.metadata.managed_fields.is_some());
}

#[test]
fn quoted_key_path_removes_only_that_key() {
    let cm: ConfigMap = from_slice(
        SAMPLE,
        &filter(&[r#"metadata.labels["app.kubernetes.io/name"]"#]),
    )
    .unwrap();
    let labels = cm.metadata.labels.unwrap();
    assert_eq!(labels.len(), 2);
    assert!(!labels.contains_key("app.kubernetes.io/name"));
    assert!(labels.contains_key("tier"));
}

#[test]
fn invalid_paths_are_typed_errors() {
    let cases: &[(&str, usize)] = &[
        ("", 0),
        (".a", 0),
        ("a.", 2),
        ("a..b", 2),
        ("a[0]", 1),
        ("a[*", 1),
        ("a]b", 1),
        ("a\"b", 1),
        ("a[*]b", 4),
        (r#"a["x"#, 4),
        (r#"a[""]"#, 3),
        (r#"a["x"b"#, 5),
        (r#"a["\n"]"#, 4),
    ];
    for (path, at) in cases {
        match FieldFilter::new().skip(path) {
            Err(FieldFilterError::InvalidPath {
                path: p, at: got, ..
            }) => {
                assert_eq!(&p, path);
                assert_eq!(got, *at, "offset for {path:?}");
            }
            other => panic!("{path:?} should be invalid, got {other:?}"),
        }
    }
    let mut f = FieldFilter::managed_fields();
    assert!(f.add("bad..path").is_err());
    assert_eq!(
        f,
        FieldFilter::managed_fields(),
        "a failed add leaves the filter as it was"
    );
}

#[test]
fn valid_paths_parse() {
    let f = filter(&[
        "data",
        "metadata.managedFields",
        "status.conditions[*].message",
        r#"metadata.labels["a.b/c"]"#,
        r#"x["with \"quote\" and \\"]"#,
        "[*].a",
    ]);
    assert_eq!(f.paths().len(), 6);
    assert!(!f.is_empty());
    assert!(FieldFilter::new().is_empty());
}

#[test]
fn malformed_input_is_a_typed_error_never_a_panic() {
    let f = FieldFilter::managed_fields().skip("data").unwrap();
    let inputs: &[&[u8]] = &[
        b"",
        b"{",
        b"{\"metadata\":{\"managedFields\":[1,}}",
        b"{\"metadata\":{\"managedFields\":[{\"a\":",
        b"{\"metadata\":{\"managedFields\":[]}} trailing",
        b"{\"metadata\":{\"name\":7}}",
        b"{\"metadata\":{\"name\":\"\xff\"}}",
        b"[1,2]",
        b"{\"metadata\":{\"man\\u00gg\":1}}",
    ];
    for input in inputs {
        let res = from_slice::<ConfigMap>(input, &f);
        assert!(
            res.is_err(),
            "{:?} should not decode",
            String::from_utf8_lossy(input)
        );
    }
    let err =
        from_slice::<ConfigMap>(b"{\"metadata\":{\"managedFields\":[{\"a\":", &f).unwrap_err();
    assert!(
        err.is_eof(),
        "a cut-short skipped subtree is an EOF error: {err}"
    );
    let err = from_slice::<ConfigMap>(b"{\"metadata\":{\"managedFields\":[1,}}", &f).unwrap_err();
    assert!(err.is_syntax());
}

#[test]
fn non_ascii_and_invalid_utf8_decode_as_serde_json_does() {
    let f = FieldFilter::managed_fields();
    let text = "{\"metadata\":{\"name\":\"caf\u{e9}\",\"managedFields\":[{\"manager\":\"\u{1f980}\"}]},\"data\":{\"k\":\"\u{fc}ber \\u00e9 \\ud83e\\udd80\"}}";
    let lean: ConfigMap = from_slice(text.as_bytes(), &f).unwrap();
    let mut plain: ConfigMap = serde_json::from_slice(text.as_bytes()).unwrap();
    plain.metadata.managed_fields = None;
    assert_eq!(lean, plain);
    assert_eq!(lean.metadata.name.as_deref(), Some("caf\u{e9}"));
    assert_eq!(
        lean.data.unwrap()["k"],
        "\u{fc}ber \u{e9} \u{1f980}",
        "escapes decode as before"
    );

    // Not UTF-8 in a kept string: serde_json's own error, at the same place.
    let input = b"{\"metadata\":{\"name\":\"ab\xffcd\"}}";
    let ours = from_slice::<ConfigMap>(input, &f).unwrap_err();
    let theirs = serde_json::from_slice::<ConfigMap>(input).unwrap_err();
    assert_eq!(ours.to_string(), theirs.to_string());
    assert_eq!(
        (ours.line(), ours.column()),
        (theirs.line(), theirs.column())
    );
    // In a skipped string: skipped as serde_json skips what it ignores, unchecked.
    let input = b"{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"\xc3\"}]}}";
    let lean: ConfigMap = from_slice(input, &f).unwrap();
    assert_eq!(lean.metadata.name.as_deref(), Some("a"));
}

#[test]
fn list_and_watch_prefixes_filter_each_object() {
    let f = FieldFilter::managed_fields();
    let item = std::str::from_utf8(SAMPLE).unwrap();
    let list = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMapList","metadata":{{"resourceVersion":"9"}},"items":[{item},{item}]}}"#
    );
    let got: ObjectList<ConfigMap> = from_slice(list.as_bytes(), &f.for_list_items()).unwrap();
    assert_eq!(got.metadata.resource_version.as_deref(), Some("9"));
    assert_eq!(got.items.len(), 2);
    assert!(
        got.items
            .iter()
            .all(|cm| cm.metadata.managed_fields.is_none())
    );
    assert_eq!(f.within("items[*]").unwrap(), f.for_list_items());

    let line = format!(r#"{{"type":"MODIFIED","object":{item}}}"#);
    let ev: WatchEvent<ConfigMap> = from_slice(line.as_bytes(), &f.for_watch_object()).unwrap();
    let WatchEvent::Modified(cm) = ev else {
        panic!("expected MODIFIED")
    };
    assert!(cm.metadata.managed_fields.is_none());
    assert!(cm.data.is_some());
    // Object before type: serde buffers the object, still filtered.
    let line = format!(r#"{{"object":{item},"type":"ADDED"}}"#);
    let ev: WatchEvent<ConfigMap> = from_slice(line.as_bytes(), &f.for_watch_object()).unwrap();
    assert!(matches!(ev, WatchEvent::Added(cm) if cm.metadata.managed_fields.is_none()));
    assert_eq!(
        f.within("object").unwrap().paths(),
        ["object.metadata.managedFields"]
    );
}

#[test]
fn seed_and_wrap_entry_points_filter_the_same_way() {
    let f = FieldFilter::managed_fields();
    let mut de = serde_json::Deserializer::from_slice(SAMPLE);
    let a: ConfigMap = f.seed::<ConfigMap>().deserialize(&mut de).unwrap();
    de.end().unwrap();
    let mut de = serde_json::Deserializer::from_slice(SAMPLE);
    let b: ConfigMap = f.deserialize(&mut de).unwrap();
    assert_eq!(a, b);
    assert!(a.metadata.managed_fields.is_none());
    // Works over a reader too (keys arrive as transient strings, not borrowed).
    let mut de = serde_json::Deserializer::from_reader(SAMPLE);
    let c: ConfigMap = f.deserialize(&mut de).unwrap();
    assert_eq!(a, c);
}

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Numbered {
    m: BTreeMap<u32, String>,
}

#[test]
fn numeric_map_keys_still_parse_on_a_filtered_map() {
    let got: Numbered = from_slice(
        br#"{"m":{"1":"a","7":"drop","2":"b"}}"#,
        &filter(&[r#"m["7"]"#]),
    )
    .unwrap();
    assert_eq!(got.m, BTreeMap::from([(1, "a".into()), (2, "b".into())]));
}

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Secret {
    keep: u8,
    secret: Option<String>,
}

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Wrapper(Secret);

#[derive(Debug, serde::Deserialize, PartialEq)]
enum Choice {
    V { keep: u8, secret: Option<String> },
    W(Secret),
}

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Holder {
    o: Option<Wrapper>,
    e: Choice,
    w: Choice,
}

#[test]
fn paths_go_through_options_newtypes_and_enum_variants() {
    let f = filter(&["o.secret", "e.V.secret", "w.W.secret"]);
    let got: Holder = from_slice(
        br#"{"o":{"keep":1,"secret":"s"},"e":{"V":{"keep":2,"secret":"s"}},"w":{"W":{"keep":3,"secret":"s"}}}"#,
        &f,
    )
    .unwrap();
    assert_eq!(
        got,
        Holder {
            o: Some(Wrapper(Secret {
                keep: 1,
                secret: None
            })),
            e: Choice::V {
                keep: 2,
                secret: None
            },
            w: Choice::W(Secret {
                keep: 3,
                secret: None
            }),
        }
    );
}

thread_local! {
    static SPY_VISITS: Cell<usize> = const { Cell::new(0) };
}

/// Records being decoded, then consumes its value.
#[derive(Debug)]
struct Spy;

impl<'de> Deserialize<'de> for Spy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        SPY_VISITS.with(|c| c.set(c.get() + 1));
        IgnoredAny::deserialize(d)?;
        Ok(Spy)
    }
}

#[derive(Debug, serde::Deserialize)]
struct SpyMeta {
    name: String,
    #[serde(rename = "managedFields")]
    managed_fields: Option<Spy>,
}

#[derive(Debug, serde::Deserialize)]
struct SpyObject {
    metadata: SpyMeta,
}

#[test]
fn skipped_subtree_is_never_handed_to_its_type() {
    SPY_VISITS.with(|c| c.set(0));
    let plain: SpyObject = serde_json::from_slice(SAMPLE).unwrap();
    assert!(plain.metadata.managed_fields.is_some());
    assert_eq!(
        SPY_VISITS.with(Cell::get),
        1,
        "plain decode visits managedFields"
    );

    SPY_VISITS.with(|c| c.set(0));
    let lean: SpyObject = from_slice(SAMPLE, &FieldFilter::managed_fields()).unwrap();
    assert_eq!(lean.metadata.name, "cm-000000");
    assert!(lean.metadata.managed_fields.is_none());
    assert_eq!(
        SPY_VISITS.with(Cell::get),
        0,
        "filtered decode never visits it"
    );
}

#[test]
fn merge_is_the_union_of_paths() {
    let mut a = filter(&["data", "status.conditions[*].message"]);
    a.merge(&filter(&[
        "metadata.managedFields",
        "status.conditions[*].reason",
        "data",
    ]));
    let got = filtered_value(
        r#"{"data":1,"metadata":{"managedFields":2,"name":"n"},"status":{"conditions":[{"message":"m","reason":"r","type":"t"}]}}"#,
        &a,
    );
    assert_eq!(
        got,
        json!({"metadata":{"name":"n"},"status":{"conditions":[{"type":"t"}]}})
    );
    assert_eq!(a.paths().len(), 4);
}
