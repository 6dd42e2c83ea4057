//! Decode costs of a 500-item ConfigMap list page and of one watch line, objects
//! shaped like `bench/configmap-sample.json` (3 labels, 2 annotations, one
//! `managedFields` entry, `data` with `rev`, a 420-char `config.yaml` and a 160-char
//! `settings.json`; ~1.4 KiB each), generated here deterministically:
//!
//! - `serde_json`: `serde_json::from_slice::<ObjectList<ConfigMap>>`, the floor kube uses;
//! - `filter_managed_fields`: the same bytes through [`FieldFilter::managed_fields`],
//!   `managedFields` skipped while decoding;
//! - `filter_empty`: through an empty filter (plain serde_json path, for reference);
//! - `serde_json_then_strip`: the floor, then `managedFields` dropped from each item.
//!
//! And `decode_items_100k`: the 100k real-shape items of the compare bench (the
//! testkit's `bench_objects`, as the testkit serializes them), each decoded into a
//! `ConfigMap` through the factory's filter (`managedFields` skipped) one item at a time,
//! as the streamed list decodes them, with each serde-compatible decoder that can take
//! the filter's adapter (it wraps any `serde::Deserializer`): `serde_json` (today),
//! `sonic_rs` and `simd_json` (which parses in place: each item is copied first, as a
//! streamed list would have to). All three are checked to decode the same objects.
//!
//! `cargo bench -p reflector-core --bench decode -- --sample-size 10`

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectList, WatchEvent};
use serde::de::DeserializeOwned;
use serde::de::DeserializeSeed;
use serde_field_filter::FieldFilter;
use serde_field_filter::from_slice as from_slice_filtered;

/// Items in a list page (kube's and client-go's default page size).
const PAGE: usize = 500;

/// Deterministic pseudo-random base64url text (a 64-bit LCG).
fn text(seed: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(ALPHABET[(state >> 58) as usize])
        })
        .collect()
}

/// ConfigMap `i` as the API server sends it.
fn config_map_json(i: usize) -> String {
    let seed = i as u64;
    format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"cm-{i:06}","namespace":"bench","uid":"6f1c2a3e-0000-4000-8000-{i:012}","resourceVersion":"{rv}","creationTimestamp":"2025-06-01T12:00:00Z","labels":{{"app.kubernetes.io/name":"bench","app.kubernetes.io/instance":"bench-{i}","tier":"backend"}},"annotations":{{"bench.example.com/owner":"team-{team}","bench.example.com/checksum":"sha256:{sum}"}},"managedFields":[{{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2025-06-01T12:00:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:data":{{".":{{}},"f:config.yaml":{{}},"f:rev":{{}},"f:settings.json":{{}}}},"f:metadata":{{"f:labels":{{".":{{}},"f:app.kubernetes.io/instance":{{}},"f:app.kubernetes.io/name":{{}},"f:tier":{{}}}}}}}}}}]}},"data":{{"rev":"{rv}","config.yaml":"{yaml}","settings.json":"{json}"}}}}"#,
        rv = 100 + i,
        team = i % 10,
        sum = text(seed * 3, 40),
        yaml = text(seed * 3 + 1, 420),
        json = text(seed * 3 + 2, 160),
    )
}

fn list_page() -> Vec<u8> {
    let items: Vec<String> = (0..PAGE).map(config_map_json).collect();
    format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"100000","continue":"next"}},"items":[{}]}}"#,
        items.join(",")
    )
    .into_bytes()
}

/// Benchmarks decoding `input` as `T` with serde_json (`serde_json`) and through each
/// named filter.
fn plain_and_filtered<T: DeserializeOwned>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    input: &[u8],
    filters: &[(&str, &FieldFilter)],
) {
    g.bench_function("serde_json", |b| {
        b.iter(|| black_box(serde_json::from_slice::<T>(black_box(input)).unwrap()));
    });
    for (name, filter) in filters {
        g.bench_function(*name, |b| {
            b.iter(|| black_box(from_slice_filtered::<T>(black_box(input), filter).unwrap()));
        });
    }
}

fn list(c: &mut Criterion) {
    let page = list_page();
    let lean = FieldFilter::managed_fields().within("items[*]").unwrap();
    let empty = FieldFilter::new();
    // The filtered decode is the plain one minus managedFields.
    let mut check: ObjectList<ConfigMap> = serde_json::from_slice(&page).unwrap();
    for cm in &mut check.items {
        cm.metadata.managed_fields = None;
    }
    let got: ObjectList<ConfigMap> = from_slice_filtered(&page, &lean).unwrap();
    assert_eq!(got.items, check.items);

    let mut g = c.benchmark_group("decode_list_page_500");
    g.throughput(Throughput::Elements(PAGE as u64));
    plain_and_filtered::<ObjectList<ConfigMap>>(
        &mut g,
        &page,
        &[("filter_managed_fields", &lean), ("filter_empty", &empty)],
    );
    g.bench_function("serde_json_then_strip", |b| {
        b.iter(|| {
            let mut list: ObjectList<ConfigMap> = serde_json::from_slice(black_box(&page)).unwrap();
            for cm in &mut list.items {
                cm.metadata.managed_fields = None;
            }
            black_box(list)
        });
    });
    g.finish();
}

fn watch(c: &mut Criterion) {
    let line = format!(r#"{{"type":"MODIFIED","object":{}}}"#, config_map_json(7)).into_bytes();
    let lean = FieldFilter::managed_fields().within("object").unwrap();
    let mut g = c.benchmark_group("decode_watch_line");
    g.throughput(Throughput::Elements(1));
    plain_and_filtered::<WatchEvent<ConfigMap>>(&mut g, &line, &[("filter_managed_fields", &lean)]);
    g.finish();
}

/// Decodes one item through a filter.
type ItemDecode = fn(&[u8], &FieldFilter) -> ConfigMap;

/// Decodes one item with serde_json through `filter` (what the streamed list does).
fn item_serde_json(bytes: &[u8], filter: &FieldFilter) -> ConfigMap {
    from_slice_filtered(bytes, filter).unwrap()
}

/// Decodes one item with sonic-rs through `filter`.
fn item_sonic_rs(bytes: &[u8], filter: &FieldFilter) -> ConfigMap {
    let mut de = sonic_rs::Deserializer::from_slice(bytes);
    let cm = filter.seed::<ConfigMap>().deserialize(&mut de).unwrap();
    de.end().unwrap();
    cm
}

/// Decodes one item with simd-json through `filter`, from a copy (it parses in place).
fn item_simd_json(bytes: &[u8], filter: &FieldFilter) -> ConfigMap {
    let mut copy = bytes.to_vec();
    let mut de = simd_json::Deserializer::from_slice(&mut copy).unwrap();
    filter.seed::<ConfigMap>().deserialize(&mut de).unwrap()
}

/// The 100k real-shape items, one decoder against another.
fn items(c: &mut Criterion) {
    const ITEMS: usize = 100_000;
    let items: Vec<Vec<u8>> = reflector_testkit::bench_objects::config_maps(ITEMS)
        .iter()
        .map(|cm| serde_json::to_vec(cm).unwrap())
        .collect();
    let bytes: usize = items.iter().map(Vec::len).sum();
    let filter = FieldFilter::managed_fields();
    for item in &items {
        let want = item_serde_json(item, &filter);
        assert!(want.metadata.managed_fields.is_none());
        assert_eq!(item_sonic_rs(item, &filter), want);
        assert_eq!(item_simd_json(item, &filter), want);
    }
    eprintln!("decode_items_100k: {ITEMS} items, {bytes} bytes");
    let decoders: [(&str, ItemDecode); 3] = [
        ("serde_json", item_serde_json),
        ("sonic_rs", item_sonic_rs),
        ("simd_json", item_simd_json),
    ];
    let mut g = c.benchmark_group("decode_items_100k");
    g.throughput(Throughput::Elements(ITEMS as u64));
    g.sample_size(10);
    for (name, decode) in decoders {
        g.bench_function(name, |b| {
            b.iter(|| {
                for item in &items {
                    black_box(decode(black_box(item), &filter));
                }
            });
        });
    }
    g.finish();
}

/// Every decode benchmark, configured from the command line (as `criterion_group!`
/// would, but documented).
fn benches() {
    let mut c = Criterion::default().configure_from_args();
    list(&mut c);
    watch(&mut c);
    items(&mut c);
}

criterion_main!(benches);
