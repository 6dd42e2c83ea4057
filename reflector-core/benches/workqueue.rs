//! Work-queue throughput: add + get + done per second.
//!
//! Each iteration adds 100 000 keys from one producer task while N worker
//! tasks get and mark them done, then shuts the queue down and waits for the
//! workers to drain it. Two key sets: 100 000 distinct keys (every add is
//! processed) and 1 000 hot keys added 100 times each (adds of a key already
//! queued are deduplicated). Throughput is counted in adds.
//!
//! Run: `CARGO_TARGET_DIR=/work/target cargo bench -p reflector-core --bench workqueue -- --sample-size 10`

#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reflector_core::object::ObjectKey;
use reflector_core::workqueue::WorkQueue;
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

const ADDS: usize = 100_000;

fn keys(distinct: usize) -> Vec<ObjectKey> {
    let pool: Vec<ObjectKey> = (0..distinct)
        .map(|i| ObjectKey::new(Some(&format!("ns-{}", i % 100)), &format!("object-{i}")))
        .collect();
    (0..ADDS).map(|i| pool[i % distinct].clone()).collect()
}

/// One run: returns the wall time from the first add until every worker has
/// seen the queue shut down and drained, and how many items were processed.
fn run(rt: &Runtime, keys: &[ObjectKey], workers: usize) -> (Duration, usize) {
    rt.block_on(async {
        let queue: WorkQueue<ObjectKey> = WorkQueue::new();
        let mut set = JoinSet::new();
        for _ in 0..workers {
            let queue = queue.clone();
            set.spawn(async move {
                let mut processed = 0usize;
                while let Some(key) = queue.get().await {
                    black_box(&key);
                    queue.done(&key);
                    processed += 1;
                }
                processed
            });
        }
        let start = Instant::now();
        for chunk in keys.chunks(1024) {
            for key in chunk {
                queue.add(key.clone());
            }
            tokio::task::yield_now().await;
        }
        queue.shutdown();
        let mut processed = 0;
        while let Some(res) = set.join_next().await {
            processed += res.unwrap_or(0);
        }
        (start.elapsed(), processed)
    })
}

fn bench_queue(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut group = c.benchmark_group("workqueue_add_get_done");
    group.throughput(Throughput::Elements(ADDS as u64));
    for (label, distinct) in [("distinct_100k", 100_000), ("hot_1k", 1_000)] {
        let keys = keys(distinct);
        for workers in [1usize, 8] {
            group.bench_with_input(
                BenchmarkId::new(label, format!("{workers}_workers")),
                &workers,
                |b, &workers| {
                    b.iter_custom(|iters| {
                        let mut total = Duration::ZERO;
                        for _ in 0..iters {
                            let (elapsed, processed) = run(&rt, &keys, workers);
                            assert!(processed >= distinct.min(ADDS));
                            total += elapsed;
                        }
                        total
                    });
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench_queue);
criterion_main!(benches);
