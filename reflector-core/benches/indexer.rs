//! Indexer costs: updates with two indices over 100k objects, and `by_index`
//! latency, which should depend on the result size (1k) and not on the store size.
//!
//! `CARGO_TARGET_DIR=/work/target cargo bench -p reflector-core --bench indexer -- --sample-size 10`

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use reflector_core::store::{Indexers, NAMESPACE_INDEX, Writer, namespace_index_func};

/// Objects per value of the `group` label.
const PER_GROUP: usize = 1_000;
/// Namespaces the objects are spread over.
const NAMESPACES: usize = 10;
/// Size of each object's payload, so an object is about 1 KiB.
const PAYLOAD: usize = 900;

/// Object `i`, in group `(i / PER_GROUP + shift) % groups`.
fn config_map(i: usize, groups: usize, shift: usize) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(format!("ns-{}", i % NAMESPACES));
    cm.metadata.name = Some(format!("cm-{i}"));
    let group = (i / PER_GROUP + shift) % groups;
    cm.metadata.labels = Some(BTreeMap::from([("group".to_owned(), format!("g-{group}"))]));
    cm.data = Some(BTreeMap::from([(
        "payload".to_owned(),
        "x".repeat(PAYLOAD),
    )]));
    Arc::new(cm)
}

/// `n` objects, `PER_GROUP` per group; `shift` moves every object to another group.
fn config_maps(n: usize, shift: usize) -> Vec<Arc<ConfigMap>> {
    let groups = n / PER_GROUP;
    (0..n).map(|i| config_map(i, groups, shift)).collect()
}

/// The `group` label index.
fn group_index(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("group"))
        .cloned()
        .into_iter()
        .collect()
}

/// An indexer (namespace + group indices) holding `objs`; the namespace index is
/// `namespace_index_func` registered by hand, or the built-in one if `builtin`.
fn filled_with(objs: &[Arc<ConfigMap>], builtin: bool) -> Writer<ConfigMap> {
    let indexers = if builtin {
        Indexers::new().with_namespace_index()
    } else {
        Indexers::new().with(NAMESPACE_INDEX, namespace_index_func::<ConfigMap>)
    };
    let mut indexer = Writer::new(indexers.with("group", group_index));
    indexer
        .replace(objs.to_vec(), "1")
        .expect("bench objects have names");
    indexer
}

/// [`filled_with`] the hand-registered namespace index.
fn filled(objs: &[Arc<ConfigMap>]) -> Writer<ConfigMap> {
    filled_with(objs, false)
}

fn updates(c: &mut Criterion) {
    const N: usize = 100_000;
    let v0 = config_maps(N, 0);
    let v1 = config_maps(N, 1);
    let mut group = c.benchmark_group("indexer_update_100k_2_indices");

    let mut indexer = filled(&v0);
    let mut i = 0;
    group.bench_function("same_values", |b| {
        b.iter(|| {
            i = (i + 1) % N;
            indexer.update(Arc::clone(&v0[i])).expect("named");
        });
    });

    // The same with the built-in namespace index (what the informer registers).
    let mut indexer = filled_with(&v0, true);
    let mut i = 0;
    group.bench_function("same_values_builtin_namespace_index", |b| {
        b.iter(|| {
            i = (i + 1) % N;
            indexer.update(Arc::clone(&v0[i])).expect("named");
        });
    });

    let mut indexer = filled(&v0);
    let mut count = 0usize;
    group.bench_function("label_changed", |b| {
        b.iter(|| {
            // Each pass over the objects flips every one to the other version, so
            // every update moves the object to another group.
            let (idx, pass) = (count % N, count / N);
            count += 1;
            let obj = if pass % 2 == 0 { &v1[idx] } else { &v0[idx] };
            indexer.update(Arc::clone(obj)).expect("named");
        });
    });
    group.finish();
}

fn by_index(c: &mut Criterion) {
    let mut group = c.benchmark_group("by_index_1k_per_value");
    for n in [100_000usize, 10_000] {
        let indexer = filled(&config_maps(n, 0));
        let value = format!("g-{}", n / PER_GROUP / 2);
        assert_eq!(
            indexer.by_index("group", &value).expect("known").len(),
            PER_GROUP
        );
        group.bench_function(format!("{}k_objects", n / 1000), |b| {
            b.iter(|| black_box(indexer.by_index("group", black_box(&value)).expect("known")));
        });
    }
    group.finish();
}

/// Every indexer benchmark, configured from the command line (as
/// `criterion_group!` would, but documented).
fn benches() {
    let mut c = Criterion::default().configure_from_args();
    updates(&mut c);
    by_index(&mut c);
}

criterion_main!(benches);
