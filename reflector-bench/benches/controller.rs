//! Controller throughput (in process, no HTTP): `controller_throughput/{on,off}`.
//! 10k ConfigMaps listed by a scripted lister-watcher into a controller's primary
//! informer; each reconcile counts and asks to be requeued at once until its key
//! was reconciled `ROUNDS` times (100k reconciles in all), on 2 workers; time from
//! the first reconcile to the last. `on` is the default (`read_your_writes(true)`:
//! each reconcile first asks whether its key waits for a write of the controller,
//! none does), `off` is `read_your_writes(false)`.
//!
//! `cargo bench -p reflector-bench --bench controller -- --sample-size 10`; with
//! `BENCH_CPU=1` in the environment, each run counts the CPU time of every thread of
//! the process (from `/proc/self/task/*/schedstat`) over the whole run instead of the
//! wall-clock time from the first reconcile to the last: steadier on a loaded
//! machine.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

#[cfg(feature = "bench-mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kube::api::{ListParams, ObjectList, TypeMeta, WatchEvent, WatchParams};
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::informer::SharedIndexInformer;
use reflector_core::listwatch::{ListWatchError, ListerWatcher};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 10_000;
/// Reconciles per key.
const ROUNDS: usize = 10;

fn config_map(i: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i:05}")),
            namespace: Some(format!("ns-{}", i % 10)),
            uid: Some(format!("uid-{i}")),
            resource_version: Some((i + 2).to_string()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// Lists the objects once, then a watch that never sends.
struct ListOnly(Mutex<Option<Vec<ConfigMap>>>);

impl ListerWatcher<ConfigMap> for ListOnly {
    async fn list(&self, _: &ListParams) -> Result<ObjectList<ConfigMap>, ListWatchError> {
        Ok(ObjectList {
            types: TypeMeta {
                api_version: "v1".into(),
                kind: "ConfigMapList".into(),
            },
            metadata: ListMeta {
                resource_version: Some((OBJECTS + 2).to_string()),
                ..ListMeta::default()
            },
            items: self.0.lock().unwrap().take().unwrap_or_default(),
        })
    }

    async fn watch(
        &self,
        _: &WatchParams,
        _: &str,
    ) -> Result<BoxStream<'static, Result<WatchEvent<ConfigMap>, ListWatchError>>, ListWatchError>
    {
        Ok(futures::stream::pending().boxed())
    }
}

/// What the reconciles of one run share.
struct Count {
    reconciles: AtomicUsize,
    first: OnceLock<Instant>,
    last: OnceLock<Instant>,
    done: Notify,
}

/// Every key is always queued once (each reconcile requeues its own key) until
/// `OBJECTS * (ROUNDS - 1)` reconciles ran; then each key is reconciled once more
/// and done: `OBJECTS * ROUNDS` in all, with no per-key bookkeeping.
async fn reconcile(_: Request<ConfigMap>, count: Arc<Count>) -> Result<Action, Infallible> {
    count.first.get_or_init(Instant::now);
    let n = count.reconciles.fetch_add(1, Ordering::Relaxed) + 1;
    if n == OBJECTS * ROUNDS {
        count.last.get_or_init(Instant::now);
        count.done.notify_one();
    }
    if n <= OBJECTS * (ROUNDS - 1) {
        Ok(Action::requeue_after(Duration::ZERO))
    } else {
        Ok(Action::done())
    }
}

/// The CPU time every thread of the process has run so far (Linux).
fn process_cpu() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task").expect("Linux /proc");
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// One run: the time from the first reconcile to the `OBJECTS * ROUNDS`th (with
/// `cpu`: the process's CPU time over the whole run, sync included).
fn run_once(
    rt: &tokio::runtime::Runtime,
    objects: &[ConfigMap],
    read_your_writes: bool,
    cpu: bool,
) -> Duration {
    let cpu_before = process_cpu();
    let informer = SharedIndexInformer::new(ListOnly(Mutex::new(Some(objects.to_vec()))));
    let count = Arc::new(Count {
        reconciles: AtomicUsize::new(0),
        first: OnceLock::new(),
        last: OnceLock::new(),
        done: Notify::new(),
    });
    rt.block_on(async {
        let stop = CancellationToken::new();
        let run = tokio::spawn(
            Controller::new(informer)
                .concurrency(2)
                .read_your_writes(read_your_writes)
                .graceful_shutdown_on(stop.clone().cancelled_owned())
                .run(reconcile, Arc::clone(&count)),
        );
        count.done.notified().await;
        stop.cancel();
        run.await.unwrap().unwrap();
    });
    if cpu {
        // The runtime's threads stay, so none that ran is missed.
        return process_cpu().saturating_sub(cpu_before);
    }
    count
        .last
        .get()
        .unwrap()
        .duration_since(*count.first.get().unwrap())
}

fn throughput(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let objects: Vec<ConfigMap> = (0..OBJECTS).map(config_map).collect();
    let cpu = std::env::var_os("BENCH_CPU").is_some();
    let mut group = c.benchmark_group("controller_throughput");
    group.throughput(Throughput::Elements((OBJECTS * ROUNDS) as u64));
    group.sample_size(10);
    for (name, on) in [("on", true), ("off", false)] {
        group.bench_with_input(BenchmarkId::from_parameter(name), &on, |b, &on| {
            b.iter_custom(|iters| (0..iters).map(|_| run_once(&rt, &objects, on, cpu)).sum());
        });
    }
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
