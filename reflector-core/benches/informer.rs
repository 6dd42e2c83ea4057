//! Informer benchmarks (in process, no HTTP):
//!
//! - `informer_pipeline/{1,4,16}_handlers`: 100k ADDED watch events from a scripted
//!   lister-watcher through reflector → DeltaFIFO → indexer → every handler's
//!   buffer and task; time until every handler has seen every event.
//! - `indexer_reads/{get,by_index}/{0,4,16}_readers`: one reader's throughput while
//!   N other reader threads and one writer thread hammer the same indexer (the shape
//!   of client-go's BenchmarkSharedIndexInformer).
//!
//! `cargo bench -p reflector-core --bench informer -- --sample-size 10`
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kube::api::{ListParams, ObjectList, TypeMeta, WatchEvent, WatchParams};
use reflector_core::informer::{EventHandler, SharedIndexInformer};
use reflector_core::listwatch::{ListWatchError, ListerWatcher, WatchStream};
use reflector_core::store::{Indexer, Indexers, Store};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const EVENTS: usize = 100_000;

fn config_map(i: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i:06}")),
            namespace: Some(format!("ns-{}", i % 10)),
            resource_version: Some((i + 2).to_string()),
            labels: Some(BTreeMap::from([(
                "group".to_owned(),
                (i % 100).to_string(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("payload".to_owned(), "x".repeat(900))])),
        ..ConfigMap::default()
    }
}

/// Lists nothing, then streams the prepared events once.
struct OneShot {
    events: Mutex<Option<Vec<WatchEvent<ConfigMap>>>>,
}

impl ListerWatcher<ConfigMap> for OneShot {
    async fn list(&self, _: &ListParams) -> Result<ObjectList<ConfigMap>, ListWatchError> {
        Ok(ObjectList {
            types: TypeMeta {
                api_version: "v1".into(),
                kind: "ConfigMapList".into(),
            },
            metadata: ListMeta {
                resource_version: Some("1".into()),
                ..ListMeta::default()
            },
            items: Vec::new(),
        })
    }

    async fn watch(
        &self,
        _: &WatchParams,
        _: &str,
    ) -> Result<WatchStream<ConfigMap>, ListWatchError> {
        let events = self.events.lock().unwrap().take().unwrap_or_default();
        Ok(futures::stream::iter(events.into_iter().map(Ok))
            .chain(futures::stream::pending())
            .boxed())
    }
}

/// Counts events; the last handler to reach the total wakes the benchmark.
struct Counter {
    seen: AtomicUsize,
    remaining: Arc<AtomicUsize>,
    done: Arc<Notify>,
}

impl EventHandler<ConfigMap> for Counter {
    fn on_add(&self, _: &Arc<ConfigMap>, _: bool) {
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == EVENTS
            && self.remaining.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.done.notify_one();
        }
    }
}

fn pipeline(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let objects: Vec<ConfigMap> = (0..EVENTS).map(config_map).collect();
    let mut group = c.benchmark_group("informer_pipeline");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(10);
    for handlers in [1usize, 4, 16] {
        group.bench_with_input(
            BenchmarkId::new("handlers", handlers),
            &handlers,
            |b, &handlers| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let events: Vec<_> =
                            objects.iter().cloned().map(WatchEvent::Added).collect();
                        let lw = OneShot {
                            events: Mutex::new(Some(events)),
                        };
                        let informer =
                            SharedIndexInformer::new(lw, Duration::ZERO, Indexers::new());
                        let remaining = Arc::new(AtomicUsize::new(handlers));
                        let done = Arc::new(Notify::new());
                        for _ in 0..handlers {
                            informer
                                .add_event_handler(Counter {
                                    seen: AtomicUsize::new(0),
                                    remaining: remaining.clone(),
                                    done: done.clone(),
                                })
                                .unwrap();
                        }
                        total += rt.block_on(async {
                            let cancel = CancellationToken::new();
                            let start = Instant::now();
                            let task = tokio::spawn({
                                let (i, c) = (informer.clone(), cancel.clone());
                                async move { i.run(c).await }
                            });
                            done.notified().await;
                            let elapsed = start.elapsed();
                            cancel.cancel();
                            task.await.unwrap();
                            elapsed
                        });
                    }
                    total
                });
            },
        );
    }
    group.finish();
}

fn reads(c: &mut Criterion) {
    let indexer = Indexer::<ConfigMap>::new(Indexers::new().with("group", |c: &ConfigMap| {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("group").cloned())
            .into_iter()
            .collect()
    }));
    let objects: Vec<Arc<ConfigMap>> = (0..EVENTS).map(|i| Arc::new(config_map(i))).collect();
    indexer.replace(objects.clone(), "1").unwrap();
    let keys: Vec<_> = objects
        .iter()
        .map(|o| reflector_core::object::meta_namespace_key(o.as_ref()).unwrap())
        .collect();

    let mut group = c.benchmark_group("indexer_reads");
    group.sample_size(10);
    for readers in [0usize, 4, 16] {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        // One writer keeps updating objects (the informer's side).
        {
            let (ix, objs, stop) = (indexer.clone(), objects.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    ix.update(Arc::clone(&objs[i % objs.len()])).unwrap();
                    i += 7;
                }
            }));
        }
        for r in 0..readers {
            let (ix, keys, stop) = (indexer.clone(), keys.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut i = r;
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(ix.get_by_key(&keys[i % keys.len()]));
                    i += 13;
                }
            }));
        }
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("get", readers), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                std::hint::black_box(indexer.get_by_key(&keys[i % keys.len()]))
            });
        });
        group.bench_function(BenchmarkId::new("by_index_1k", readers), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                std::hint::black_box(indexer.by_index("group", &(i % 100).to_string()).unwrap())
            });
        });
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
    }
    group.finish();
}

criterion_group!(benches, pipeline, reads);
criterion_main!(benches);
