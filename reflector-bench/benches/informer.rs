//! Informer benchmarks (in process, no HTTP):
//!
//! - `informer_pipeline/handlers/{1,4,16}`: 100k ADDED watch events from a scripted
//!   lister-watcher through reflector → queue → indexer → every handler's
//!   buffer and task; time until every handler has seen every event.
//!   `informer_pipeline/updates_handlers/{1,4,16}`: the same with 100k MODIFIED
//!   events over 100k listed and cached objects. In the same run, kube-runtime's
//!   reflector over the same events (`kube_runtime_added`, `kube_runtime_updates`),
//!   the least any keyed cache does on one task (`floor_keyed_cache_added`,
//!   `floor_keyed_cache_updates`: `Arc`, key, map insert, the replaced object
//!   dropped) and the least any cache does (`floor_arc_and_keep`).
//! - `indexer_reads/{get,by_index}/{0,4,16}_readers`: one reader's throughput while
//!   N other reader threads and one writer thread hammer the same indexer (the shape
//!   of client-go's BenchmarkSharedIndexInformer).
//!
//! `cargo bench -p reflector-bench --bench informer -- --sample-size 10`; add
//! `--features bench-mimalloc` to run every scenario (the peer's too) on mimalloc.
//! With `BENCH_CPU=1` in the environment, an `informer_pipeline` sample counts the CPU
//! time every thread of the process ran over the timed span (from
//! `/proc/self/task/*/schedstat`) in place of wall-clock time: steadier on a loaded
//! machine, and criterion's throughput then reads events per CPU-second.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// mimalloc for the allocator A/B (`--features bench-mimalloc`): every scenario of
/// the run, kube-runtime's included, allocates with it.
#[cfg(feature = "bench-mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kube::api::{ListParams, ObjectList, TypeMeta, WatchEvent, WatchParams};
use reflector_core::fifo::QueueMode;
use reflector_core::informer::{EventHandler, InformerOptions, SharedIndexInformer};
use reflector_core::listwatch::{ListWatchError, ListerWatcher};
use reflector_core::store::{Indexers, Writer};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const EVENTS: usize = 100_000;

/// What an `informer_pipeline` sample counts: wall-clock time, or (`BENCH_CPU=1`) the
/// CPU time of every thread of the process.
#[derive(Clone, Copy)]
enum Clock {
    Wall,
    Cpu,
}

/// A point on a [`Clock`].
#[derive(Clone, Copy)]
enum Mark {
    Wall(Instant),
    Cpu(Duration),
}

impl Clock {
    fn from_env() -> Self {
        if std::env::var_os("BENCH_CPU").is_some() {
            Clock::Cpu
        } else {
            Clock::Wall
        }
    }

    fn now(self) -> Mark {
        match self {
            Clock::Wall => Mark::Wall(Instant::now()),
            Clock::Cpu => Mark::Cpu(process_cpu()),
        }
    }
}

impl Mark {
    /// The time on its clock since this mark.
    fn elapsed(self) -> Duration {
        match self {
            Mark::Wall(start) => start.elapsed(),
            Mark::Cpu(start) => process_cpu().saturating_sub(start),
        }
    }
}

/// The CPU time every live thread of the process has run so far (Linux). The runtime's
/// worker threads live through the whole run; a blocking-pool thread that ended within
/// a span would be missed, and the pipeline spawns none.
fn process_cpu() -> Duration {
    let tasks = std::fs::read_dir("/proc/self/task").expect("Linux /proc");
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

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

/// Lists `listed`, then — once `go` has a permit — streams the prepared events once.
struct OneShot {
    listed: Mutex<Option<Vec<ConfigMap>>>,
    events: Mutex<Option<Vec<WatchEvent<ConfigMap>>>>,
    go: Arc<Notify>,
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
            items: self.listed.lock().unwrap().take().unwrap_or_default(),
        })
    }

    async fn watch(
        &self,
        _: &WatchParams,
        _: &str,
    ) -> Result<BoxStream<'static, Result<WatchEvent<ConfigMap>, ListWatchError>>, ListWatchError>
    {
        self.go.notified().await;
        let events = self.events.lock().unwrap().take().unwrap_or_default();
        Ok(futures::stream::iter(events.into_iter().map(Ok))
            .chain(futures::stream::pending())
            .boxed())
    }
}

/// Handlers still short of a count; the last one to reach it wakes the benchmark.
struct Phase {
    remaining: AtomicUsize,
    reached: Notify,
}

impl Phase {
    fn new(handlers: usize) -> Arc<Self> {
        Arc::new(Phase {
            remaining: AtomicUsize::new(handlers),
            reached: Notify::new(),
        })
    }

    fn count(&self, seen: &AtomicUsize) {
        if seen.fetch_add(1, Ordering::Relaxed) + 1 == EVENTS
            && self.remaining.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.reached.notify_one();
        }
    }
}

/// Counts adds (the listed objects, or the ADDED events) and updates.
struct Counter {
    adds: AtomicUsize,
    updates: AtomicUsize,
    added: Arc<Phase>,
    updated: Arc<Phase>,
}

impl EventHandler<ConfigMap> for Counter {
    fn on_add(&self, _: &Arc<ConfigMap>, _: bool) {
        self.added.count(&self.adds);
    }

    fn on_update(&self, _: &Arc<ConfigMap>, _: &Arc<ConfigMap>) {
        self.updated.count(&self.updates);
    }
}

/// What the timed watch carries.
#[derive(Clone, Copy)]
enum Scenario {
    /// 100k ADDED events into an empty cache: the cache, the FIFO and the heap grow
    /// from nothing while the clock runs.
    AddedIntoEmpty,
    /// 100k MODIFIED events (each object once, new resource version) over 100k
    /// listed and cached objects: a synced informer's steady state.
    ModifiedOverCached,
}

impl Scenario {
    /// What the lister-watcher lists before the clock starts, and the timed events.
    fn listed_and_events(
        self,
        objects: &[ConfigMap],
    ) -> (Vec<ConfigMap>, Vec<WatchEvent<ConfigMap>>) {
        match self {
            Scenario::AddedIntoEmpty => (
                Vec::new(),
                objects.iter().cloned().map(WatchEvent::Added).collect(),
            ),
            Scenario::ModifiedOverCached => (
                objects.to_vec(),
                modified(objects).map(WatchEvent::Modified).collect(),
            ),
        }
    }
}

/// Each object once more, with a resource version newer than any listed.
fn modified(objects: &[ConfigMap]) -> impl Iterator<Item = ConfigMap> + '_ {
    objects.iter().enumerate().map(|(i, o)| {
        let mut o = o.clone();
        o.metadata.resource_version = Some((EVENTS + 2 + i).to_string());
        o
    })
}

/// Runs one informer through `scenario` with `handlers` counting handlers; returns
/// the time from the first watch event to every handler having seen the last.
fn run_once(
    rt: &tokio::runtime::Runtime,
    objects: &[ConfigMap],
    scenario: Scenario,
    handlers: usize,
    queue: QueueMode,
    clock: Clock,
) -> Duration {
    let (listed, events) = scenario.listed_and_events(objects);
    let listed_any = !listed.is_empty();
    let go = Arc::new(Notify::new());
    let lw = OneShot {
        listed: Mutex::new(Some(listed)),
        events: Mutex::new(Some(events)),
        go: go.clone(),
    };
    let informer = SharedIndexInformer::with_options(lw, InformerOptions::default().queue(queue));
    let (added, updated) = (Phase::new(handlers), Phase::new(handlers));
    for _ in 0..handlers {
        informer
            .add_event_handler(Counter {
                adds: AtomicUsize::new(0),
                updates: AtomicUsize::new(0),
                added: added.clone(),
                updated: updated.clone(),
            })
            .unwrap();
    }
    let done = match scenario {
        Scenario::AddedIntoEmpty => Arc::clone(&added),
        Scenario::ModifiedOverCached => updated,
    };
    rt.block_on(async {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (i, c) = (informer.clone(), cancel.clone());
            async move { i.run(c).await }
        });
        if listed_any {
            added.reached.notified().await;
        }
        let start = clock.now();
        go.notify_one();
        done.reached.notified().await;
        let elapsed = start.elapsed();
        cancel.cancel();
        task.await.unwrap();
        elapsed
    })
}

/// As [`run_once`] for kube-runtime's reflector: the listed objects arrive as
/// `Init`/`InitApply`/`InitDone` before the clock starts, then the timed events as
/// `Apply`, until the consumer of `applied_objects()` has seen the last.
fn run_kube_runtime(
    rt: &tokio::runtime::Runtime,
    objects: &[ConfigMap],
    scenario: Scenario,
    clock: Clock,
) -> Duration {
    use kube::runtime::WatchStreamExt;
    use kube::runtime::{reflector as kr, watcher};

    let (listed, timed): (Vec<watcher::Event<ConfigMap>>, Vec<_>) = match scenario {
        Scenario::AddedIntoEmpty => (
            Vec::new(),
            objects.iter().cloned().map(watcher::Event::Apply).collect(),
        ),
        Scenario::ModifiedOverCached => (
            std::iter::once(watcher::Event::Init)
                .chain(objects.iter().cloned().map(watcher::Event::InitApply))
                .chain(std::iter::once(watcher::Event::InitDone))
                .collect(),
            modified(objects).map(watcher::Event::Apply).collect(),
        ),
    };
    let initial = if listed.is_empty() { 0 } else { EVENTS };
    let go = Arc::new(Notify::new());
    let (store, writer) = kr::store::<ConfigMap>();
    let gate = {
        let go = go.clone();
        futures::stream::once(async move { go.notified().await }).filter_map(|()| async { None })
    };
    let stream = futures::stream::iter(listed.into_iter().map(Ok))
        .chain(gate)
        .chain(futures::stream::iter(timed.into_iter().map(Ok)))
        .chain(futures::stream::pending());
    let (added, updated) = (Phase::new(1), Phase::new(1));
    let elapsed = rt.block_on(async {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (added, updated, cancel) = (added.clone(), updated.clone(), cancel.clone());
            async move {
                let (adds, updates) = (AtomicUsize::new(0), AtomicUsize::new(0));
                let mut seen = 0;
                let consume = kr::reflector(writer, stream)
                    .applied_objects()
                    .for_each(|obj| {
                        assert!(std::hint::black_box(obj).is_ok());
                        seen += 1;
                        if initial == 0 || seen <= initial {
                            added.count(&adds);
                        } else {
                            updated.count(&updates);
                        }
                        async {}
                    });
                tokio::select! {
                    () = consume => {}
                    () = cancel.cancelled() => {}
                }
            }
        });
        if initial > 0 {
            added.reached.notified().await;
        }
        let start = clock.now();
        go.notify_one();
        match scenario {
            Scenario::AddedIntoEmpty => added.reached.notified().await,
            Scenario::ModifiedOverCached => updated.reached.notified().await,
        }
        let elapsed = start.elapsed();
        cancel.cancel();
        task.await.unwrap();
        elapsed
    });
    assert_eq!(store.state().len(), EVENTS);
    elapsed
}

/// The least any keyed cache does per event, on one task of the same runtime: the
/// object out of the watch event into an `Arc`, its `namespace/name` key built, the
/// `Arc` put in a map under it (the cache's map type, keyed by the cache's key type)
/// and handed on once (a handler's share); with `ModifiedOverCached` the replaced
/// object is dropped there and then. No queue, no lock, no second task: every stage
/// of an informer beyond these is overhead over this floor, and a pipeline that
/// spreads the work over both cores (the replaced objects' frees, say) can beat it.
fn run_keyed_floor(
    rt: &tokio::runtime::Runtime,
    objects: &[ConfigMap],
    scenario: Scenario,
    clock: Clock,
) -> Duration {
    use reflector_core::object::{ObjectKey, meta_namespace_key};
    use std::collections::HashMap;

    // The cache's own key function; every bench object has a name.
    let key_of = |obj: &ConfigMap| meta_namespace_key(obj).expect("named");
    let (listed, events) = scenario.listed_and_events(objects);
    let (elapsed, cache, handed) = rt.block_on(async {
        // The listed objects cached by a task, as an informer's consumer caches them.
        let mut cache = tokio::spawn(async move {
            let mut cache: HashMap<ObjectKey, Arc<ConfigMap>> = HashMap::new();
            for obj in listed {
                cache.insert(key_of(&obj), Arc::new(obj));
            }
            cache
        })
        .await
        .unwrap();
        let start = clock.now();
        let (cache, handed) = tokio::spawn(async move {
            let mut stream = futures::stream::iter(events.into_iter().map(Ok::<_, ()>)).boxed();
            let mut handed = Vec::with_capacity(EVENTS);
            while let Some(Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj))) =
                stream.next().await
            {
                let obj = Arc::new(obj);
                drop(cache.insert(key_of(&obj), Arc::clone(&obj)));
                handed.push(obj);
            }
            (cache, handed)
        })
        .await
        .unwrap();
        (start.elapsed(), cache, handed)
    });
    assert_eq!((cache.len(), handed.len()), (EVENTS, EVENTS));
    elapsed
}

fn pipeline(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let objects: Vec<ConfigMap> = (0..EVENTS).map(config_map).collect();
    let clock = Clock::from_env();
    let mut group = c.benchmark_group("informer_pipeline");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(10);
    // Each case with the per-key queue (`handlers`, `updates_handlers`), then with the
    // in-order queue (`in_order_…`), side by side in one run.
    for (name, scenario, queue) in [
        ("handlers", Scenario::AddedIntoEmpty, QueueMode::PerKey),
        (
            "in_order_handlers",
            Scenario::AddedIntoEmpty,
            QueueMode::InOrder,
        ),
        (
            "updates_handlers",
            Scenario::ModifiedOverCached,
            QueueMode::PerKey,
        ),
        (
            "in_order_updates_handlers",
            Scenario::ModifiedOverCached,
            QueueMode::InOrder,
        ),
    ] {
        for handlers in [1usize, 4, 16] {
            group.bench_with_input(BenchmarkId::new(name, handlers), &handlers, |b, &h| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| run_once(&rt, &objects, scenario, h, queue, clock))
                        .sum()
                });
            });
        }
    }
    // Peer: kube-runtime's reflector on the same objects, consumed the way its docs
    // show (`reflector(writer, stream).applied_objects()`), the consumer counting as
    // one handler. It is fed `watcher::Event`s directly (no watcher state machine)
    // and keeps no FIFO, no index and no per-handler buffer. Keyed floors: the least
    // any keyed cache does per event, one task, no queue.
    type Run = fn(&tokio::runtime::Runtime, &[ConfigMap], Scenario, Clock) -> Duration;
    for (name, scenario, run) in [
        (
            "kube_runtime_added",
            Scenario::AddedIntoEmpty,
            run_kube_runtime as Run,
        ),
        (
            "kube_runtime_updates",
            Scenario::ModifiedOverCached,
            run_kube_runtime,
        ),
        (
            "floor_keyed_cache_added",
            Scenario::AddedIntoEmpty,
            run_keyed_floor,
        ),
        (
            "floor_keyed_cache_updates",
            Scenario::ModifiedOverCached,
            run_keyed_floor,
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| run(&rt, &objects, scenario, clock))
                    .sum()
            });
        });
    }
    // Floor: the least any informer does per event, on the same runtime: take the
    // object out of the watch event, put it in an `Arc`, keep it.
    group.bench_function("floor_arc_and_keep", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let events: Vec<_> = objects.iter().cloned().map(WatchEvent::Added).collect();
                let (elapsed, kept) = rt.block_on(async {
                    let start = clock.now();
                    let kept = tokio::spawn(async move {
                        let mut stream =
                            futures::stream::iter(events.into_iter().map(Ok::<_, ()>)).boxed();
                        let mut kept = Vec::new();
                        while let Some(Ok(WatchEvent::Added(obj))) = stream.next().await {
                            kept.push(Arc::new(obj));
                        }
                        kept
                    })
                    .await
                    .unwrap();
                    (start.elapsed(), kept)
                });
                assert_eq!(kept.len(), EVENTS);
                total += elapsed;
            }
            total
        });
    });
    group.finish();
}

fn reads(c: &mut Criterion) {
    let mut writer = Writer::<ConfigMap>::new(Indexers::new().with("group", |c: &ConfigMap| {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("group").cloned())
            .into_iter()
            .collect()
    }));
    let objects: Vec<Arc<ConfigMap>> = (0..EVENTS).map(|i| Arc::new(config_map(i))).collect();
    writer.replace(objects.clone(), "1").unwrap();
    let indexer = writer.reader();
    let keys: Vec<_> = objects
        .iter()
        .map(|o| reflector_core::object::meta_namespace_key(o.as_ref()).unwrap())
        .collect();

    let mut group = c.benchmark_group("indexer_reads");
    group.sample_size(10);
    for readers in [0usize, 4, 16] {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        // The cache's writer keeps updating objects (the informer's side), and is
        // handed back when the round stops.
        let updating = {
            let (mut ix, objs, stop) = (writer, objects.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    ix.update(Arc::clone(&objs[i % objs.len()])).unwrap();
                    i += 7;
                }
                ix
            })
        };
        for r in 0..readers {
            let (ix, keys, stop) = (indexer.clone(), keys.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let mut i = r;
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(ix.get(&keys[i % keys.len()]));
                    i += 13;
                }
            }));
        }
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new("get", readers), |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                std::hint::black_box(indexer.get(&keys[i % keys.len()]))
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
        writer = updating.join().unwrap();
    }
    group.finish();
}

criterion_group!(benches, pipeline, reads);
criterion_main!(benches);
