//! Controller throughput: no-op reconciles per second over 10 000 keys.
//!
//! Each sample builds a synced informer over 10 000 ConfigMaps (from a
//! `FakeSource`) and runs a controller on it with N workers. The reconcile counts
//! and answers `requeue_after(0)` until the sample's quota (iterations × 10 000)
//! is reached, so every reconcile goes through the full worker path: queue `get`,
//! reconcile, `forget` + `add_after`, `done`. Timed from the first reconcile to
//! the last (the informer sync and the controller's cache-sync wait are excluded).
//! Throughput is counted in reconciles.
//!
//! `workers/N` runs the controller as built by default, so each reconcile first asks
//! whether its key waits for a write of the controller (none does: no write is
//! recorded); `workers_read_your_writes_off/N` is the same with
//! `read_your_writes(false)`. With `BENCH_CPU=1` in the environment, a sample counts
//! the CPU time every thread of the process ran from the controller's start to the
//! last reconcile (from `/proc/self/task/*/schedstat`), steadier than wall-clock time
//! on a loaded machine.
//!
//! Run: `CARGO_TARGET_DIR=/work/target cargo bench -p reflector-core --bench controller -- --sample-size 10`

#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use reflector_core::controller::{Action, Controller, Request};
use reflector_core::informer::SharedIndexInformer;
use reflector_core::listwatch::FakeSource;
use tokio::runtime::Runtime;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const KEYS: usize = 10_000;

#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

struct Ctx {
    quota: usize,
    count: AtomicUsize,
    first: Mutex<Option<Instant>>,
    last: Mutex<Option<Instant>>,
    done: Notify,
}

async fn reconcile(_req: Request<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Never> {
    let n = ctx.count.fetch_add(1, Ordering::Relaxed) + 1;
    if n == 1 {
        *ctx.first.lock().unwrap() = Some(Instant::now());
    }
    if n == ctx.quota {
        *ctx.last.lock().unwrap() = Some(Instant::now());
        ctx.done.notify_one();
    }
    if n < ctx.quota.saturating_sub(KEYS) + 1 {
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

/// One sample of `iters` × `KEYS` reconciles on `workers` workers, waiting for the
/// controller's writes or not; answers wall-clock time, or CPU time with `cpu`.
fn run(rt: &Runtime, iters: u64, workers: usize, read_your_writes: bool, cpu: bool) -> Duration {
    rt.block_on(async {
        let source = FakeSource::<ConfigMap>::new();
        for i in 0..KEYS {
            source.add(ConfigMap {
                metadata: ObjectMeta {
                    namespace: Some(format!("ns-{}", i % 100)),
                    name: Some(format!("cm-{i}")),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            });
        }
        let informer = SharedIndexInformer::new(source);
        let informer_cancel = CancellationToken::new();
        let informer_task = tokio::spawn({
            let (i, c) = (informer.clone(), informer_cancel.clone());
            async move { i.run(c).await }
        });
        informer.wait_synced().await.unwrap();

        let quota = usize::try_from(iters)
            .unwrap_or(usize::MAX)
            .saturating_mul(KEYS);
        let ctx = Arc::new(Ctx {
            quota,
            count: AtomicUsize::new(0),
            first: Mutex::new(None),
            last: Mutex::new(None),
            done: Notify::new(),
        });
        let cancel = CancellationToken::new();
        let cpu_before = process_cpu();
        let controller = tokio::spawn(
            Controller::new(informer)
                .concurrency(workers)
                .read_your_writes(read_your_writes)
                .start_informers(false)
                .graceful_shutdown_on(cancel.clone().cancelled_owned())
                .run(reconcile, Arc::clone(&ctx)),
        );
        ctx.done.notified().await;
        let cpu_spent = process_cpu().saturating_sub(cpu_before);
        cancel.cancel();
        controller.await.unwrap().unwrap();
        informer_cancel.cancel();
        informer_task.await.unwrap();
        let first = ctx.first.lock().unwrap().unwrap();
        let last = ctx.last.lock().unwrap().unwrap();
        if cpu { cpu_spent } else { last - first }
    })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("controller_noop_reconcile_10k_keys");
    group.throughput(Throughput::Elements(KEYS as u64));
    group.measurement_time(Duration::from_secs(5));
    let cpu = std::env::var_os("BENCH_CPU").is_some();
    for (name, read_your_writes) in [("workers", true), ("workers_read_your_writes_off", false)] {
        for workers in [1, 4] {
            group.bench_with_input(BenchmarkId::new(name, workers), &workers, |b, &w| {
                b.iter_custom(|iters| run(&rt, iters, w, read_your_writes, cpu));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
