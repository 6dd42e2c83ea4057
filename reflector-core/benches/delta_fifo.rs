//! The per-key queue's throughput (client-go's DeltaFIFO): add+pop of distinct keys,
//! the update-dedup path, and a relist `replace` that tombstones 10% of the known
//! keys.
//!
//! Run: `cargo bench -p reflector-core --bench delta_fifo`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use reflector_core::fifo::{Fifo, QueueMode};
use reflector_core::store::{Indexers, Writer};

/// A ConfigMap named `name` in `bench` carrying about 1 KiB of data.
fn config_map(name: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some("bench".to_owned());
    cm.data = Some(BTreeMap::from([("payload".to_owned(), "x".repeat(1024))]));
    Arc::new(cm)
}

fn objects(prefix: &str, n: usize) -> Vec<Arc<ConfigMap>> {
    (0..n)
        .map(|i| config_map(&format!("{prefix}-{i}")))
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
}

async fn drain(fifo: &Fifo<ConfigMap>) -> usize {
    let mut deltas = 0;
    while !fifo.is_empty() {
        deltas += fifo
            .pop(|entry, _| entry.deltas().map_or(0, |d| d.len()))
            .await
            .expect("fifo open");
    }
    deltas
}

/// A per-key queue, as the bench has always measured.
fn per_key() -> Fifo<ConfigMap> {
    Fifo::new(QueueMode::PerKey)
}

/// Benchmarks `name` in the `delta_fifo` group, `n` elements an iteration: `run` on
/// a fresh FIFO each time (dropping it is not measured).
fn on_fresh_fifo(c: &mut Criterion, name: &str, n: usize, run: impl Fn(&Fifo<ConfigMap>)) {
    let mut group = c.benchmark_group("delta_fifo");
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(name, |b| {
        b.iter_batched(
            per_key,
            |fifo| {
                run(&fifo);
                fifo
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn add_pop(c: &mut Criterion) {
    const N: usize = 100_000;
    let rt = runtime();
    let objs = objects("add", N);
    on_fresh_fifo(c, "add_pop_100k_distinct", N, |fifo| {
        for obj in &objs {
            fifo.add(Arc::clone(obj)).expect("add");
        }
        black_box(rt.block_on(drain(fifo)));
    });
}

fn update_dedup(c: &mut Criterion) {
    const N: usize = 100_000;
    const KEYS: usize = 1_000;
    let rt = runtime();
    let objs = objects("upd", KEYS);
    on_fresh_fifo(c, "update_100k_over_1k_keys_then_drain", N, |fifo| {
        for i in 0..N {
            fifo.update(Arc::clone(&objs[i % KEYS])).expect("update");
        }
        let deltas = rt.block_on(drain(fifo));
        assert_eq!(deltas, N);
    });
}

fn replace_with_deletions(c: &mut Criterion) {
    const N: usize = 100_000;
    // The informer knows N objects; the relist returns 90% of them plus 10% new
    // ones, so 10% of the known keys get a tombstone.
    let known_objs = objects("obj", N);
    let keep = N * 9 / 10;
    let mut list: Vec<_> = known_objs[..keep].to_vec();
    list.extend(objects("new", N - keep));
    // The informer's cache, as an informer's FIFO consults it.
    let mut known = Writer::<ConfigMap>::new(Indexers::new());
    known.replace(known_objs, "1").expect("fill the cache");
    let mut group = c.benchmark_group("delta_fifo");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("replace_100k_with_10pct_known_missing", |b| {
        b.iter_batched(
            || {
                let fifo = per_key().cache(known.reader());
                (fifo, list.clone())
            },
            |(fifo, list)| {
                fifo.replace(list, "1").expect("replace");
                assert_eq!(fifo.len(), N + N / 10);
                fifo
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// The group `criterion_main!` runs (criterion's macro makes an undocumented `pub fn`).
#[allow(missing_docs)]
mod group {
    use super::{add_pop, replace_with_deletions, update_dedup};
    criterion::criterion_group!(benches, add_pop, update_dedup, replace_with_deletions);
}
criterion_main!(group::benches);
