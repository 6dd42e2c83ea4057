//! A child process: builds one cache against the parent's server, reports JSON lines on
//! stdout, and takes the parent's cues (`churn RV NAME`, `relist RV NAME`) on stdin.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self as kr, ObjectRef};
use kube::runtime::{WatchStreamExt, watcher};
use reflector::ReflectorOptions;
use reflector::fifo::QueueMode;
use reflector::informer::{
    InformerFactory, InformerOptions, InformerScope, SharedIndexInformer, strip_managed_fields,
};
use reflector::listwatch::ApiListerWatcher;
use reflector::object::Object;
use reflector_testkit::bench_objects::NAMESPACE;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cpu::{cpu, cpu_secs};
use crate::mem::{self, HeapPeak};
use crate::scenario::{self, Cache, Phase, SHARDS, Scenario};

/// How long any wait may take before the child gives up.
const TIMEOUT: Duration = Duration::from_secs(600);

/// Runs scenario `name` against `url`; `paged`: the floor lists in pages of 500.
pub fn run(name: &str, url: &str, objects: usize, paged: bool) -> Result<(), String> {
    let scenario = scenario::find(name).ok_or(format!("unknown scenario {name}"))?;
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // The scenario's future runs on the main thread (`block_on`), or with
    // `COMPARE_IN_TASK` set in a spawned task on a worker thread, as a controller's
    // would. It matters to what glibc charges the floor: the main thread allocates from
    // the main arena, grown 128 KiB at a time, a worker from an arena of its own, grown
    // a page at a time (BENCHMARKS.md, "System and user time").
    let result = if std::env::var_os("COMPARE_IN_TASK").is_some() {
        let url = url.to_owned();
        rt.block_on(async move {
            tokio::spawn(async move { body(scenario, &url, objects, paged).await })
                .await
                .map_err(|e| e.to_string())?
        })
    } else {
        rt.block_on(body(scenario, url, objects, paged))
    };
    rt.shutdown_background();
    result
}

/// A cache built by a scenario, kept alive until the child exits.
#[allow(clippy::large_enum_variant, reason = "one value per process")]
enum Built {
    /// Objects kept by the floor (and the churn floor's watch task, if any).
    Floor {
        items: Vec<Arc<ConfigMap>>,
        count: usize,
        max_rv: Arc<AtomicU64>,
        _watch: Option<JoinHandle<()>>,
    },
    /// kube-runtime's store and the task driving its reflector stream.
    Kube {
        store: kr::Store<ConfigMap>,
        _task: JoinHandle<()>,
    },
    /// kube-runtime's store of metadata-only objects (`metadata_watcher`).
    KubeMeta {
        store: kr::Store<PartialObjectMeta<ConfigMap>>,
        _task: JoinHandle<()>,
    },
    /// Our metadata-only informer (`InformerFactory::metadata`) and its factory.
    OursMeta {
        informer: SharedIndexInformer<PartialObjectMeta<ConfigMap>>,
        phases: Value,
        _factory: InformerFactory,
    },
    /// Our informer and what runs it.
    Ours {
        informer: SharedIndexInformer<ConfigMap>,
        /// When the cache filled: see [`fill_phases`].
        phases: Value,
        _cancel: CancellationToken,
        _factory: Option<InformerFactory>,
        _task: Option<JoinHandle<()>>,
    },
}

fn rv_of(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

impl Built {
    fn len(&self) -> usize {
        match self {
            Built::Floor { items, count, .. } => items.len().max(*count),
            Built::Kube { store, .. } => store.len(),
            Built::KubeMeta { store, .. } => store.len(),
            Built::Ours { informer, .. } => informer.indexer().len(),
            Built::OursMeta { informer, .. } => informer.indexer().len(),
        }
    }

    /// The resourceVersion the cache shows for object `name` (the churn floor: the
    /// largest resourceVersion decoded from the watch).
    fn rv_of(&self, name: &str) -> u64 {
        match self {
            Built::Floor { max_rv, .. } => max_rv.load(Ordering::Relaxed),
            Built::Kube { store, .. } => store
                .get(&ObjectRef::new(name).within(NAMESPACE))
                .map_or(0, |cm| rv_of(&cm.metadata)),
            Built::KubeMeta { store, .. } => store
                .get(&ObjectRef::new(name).within(NAMESPACE))
                .map_or(0, |o| rv_of(&o.metadata)),
            Built::Ours { informer, .. } => informer
                .lister()
                .get(Some(NAMESPACE), name)
                .map_or(0, |cm| rv_of(&cm.metadata)),
            Built::OursMeta { informer, .. } => informer
                .lister()
                .get(Some(NAMESPACE), name)
                .map_or(0, |o| rv_of(&o.metadata)),
        }
    }
}

/// Lists everything, in one request (`paged`: in pages of 500); returns the kept
/// items, the count and the list's RV.
///
/// # Cancel safety
/// Not relevant: run to completion by the child.
async fn list_all(
    api: &Api<ConfigMap>,
    keep: bool,
    paged: bool,
) -> Result<(Vec<Arc<ConfigMap>>, usize, String), String> {
    let mut items = Vec::new();
    let mut count = 0;
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default();
        if paged {
            lp = lp.limit(500);
        }
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.map_err(|e| format!("list: {e}"))?;
        count += page.items.len();
        if keep {
            items.extend(page.items.into_iter().map(Arc::new));
        }
        match page.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => {
                return Ok((
                    items,
                    count,
                    page.metadata.resource_version.unwrap_or_default(),
                ));
            }
        }
    }
}

/// Polls every millisecond until `done` holds.
///
/// # Cancel safety
/// Cancel safe: it only polls.
async fn poll_until(mut done: impl FnMut() -> bool) -> Result<(), String> {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > TIMEOUT {
            return Err("timed out".to_owned());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(())
}

/// Waits until `informer` has synced (its `wait_synced`, as a user would), noting
/// when its cache got its first object (the list is through and handed to the FIFO)
/// and when it held them all, with the live heap at the first moment (the whole
/// decoded list plus the FIFO), sampled every millisecond meanwhile.
///
/// # Cancel safety
/// Cancel safe: it only observes.
async fn fill_phases<K: Object>(informer: &SharedIndexInformer<K>) -> Result<Value, String> {
    let start = Instant::now();
    let mut first: Option<(f64, u64)> = None;
    let mut heap_max = 0;
    let synced = tokio::time::timeout(TIMEOUT, informer.wait_synced());
    tokio::pin!(synced);
    let full = loop {
        heap_max = heap_max.max(mem::heap());
        if first.is_none() && !informer.indexer().is_empty() {
            first = Some((start.elapsed().as_secs_f64(), mem::heap()));
        }
        tokio::select! {
            done = &mut synced => {
                done.map_err(|_| "timed out".to_owned())?.map_err(|e| e.to_string())?;
                break Some(start.elapsed().as_secs_f64());
            }
            () = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
    };
    let (t_first, heap_first) = first.unwrap_or_default();
    Ok(json!({
        "t_first_item": t_first,
        "t_synced": full.unwrap_or_default(),
        "heap_at_first_item": heap_first,
        "heap_max_polled": heap_max,
    }))
}

/// kube-runtime's `reflector(writer, watcher(api, config))`, driven by a task, once its
/// store is ready; `strip_managed_fields`: each object's `managedFields` cleared by
/// `.modify(..)` between the watcher and the store.
///
/// # Cancel safety
/// Not relevant: run to completion by the child.
async fn kube_runtime_store<K>(
    api: Api<K>,
    config: watcher::Config,
    strip_managed_fields: bool,
) -> Result<(kr::Store<K>, JoinHandle<()>), String>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + k8s_openapi::serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = kr::store::<K>();
    let events = watcher(api, config);
    let task = if strip_managed_fields {
        let events = events.modify(|obj: &mut K| obj.managed_fields_mut().clear());
        drive(kr::reflector(writer, events))
    } else {
        drive(kr::reflector(writer, events))
    };
    tokio::time::timeout(TIMEOUT, store.wait_until_ready())
        .await
        .map_err(|_| "kube-runtime: timed out".to_owned())?
        .map_err(|e| format!("kube-runtime: {e}"))?;
    Ok((store, task))
}

/// A task that polls `stream` to its end.
fn drive(stream: impl futures::Stream + Send + 'static) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while stream.next().await.is_some() {}
    })
}

/// Builds the cache and waits until it holds the initial list.
///
/// # Cancel safety
/// Not relevant: run to completion by the child.
async fn build(cache: Cache, client: kube::Client, paged: bool) -> Result<Built, String> {
    let api: Api<ConfigMap> = Api::all(client.clone());
    let paged_config = || watcher::Config::default().page_size(500);
    match cache {
        Cache::Floor | Cache::FloorNoStore => {
            let (items, count, _) = list_all(&api, cache == Cache::Floor, paged).await?;
            Ok(Built::Floor {
                items,
                count,
                max_rv: Arc::default(),
                _watch: None,
            })
        }
        Cache::FloorWatch => {
            let (items, count, rv) = list_all(&api, true, paged).await?;
            let max_rv = Arc::new(AtomicU64::new(0));
            let stream = api
                .watch(&WatchParams::default(), &rv)
                .await
                .map_err(|e| format!("watch: {e}"))?;
            let seen = max_rv.clone();
            let watch = tokio::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                while let Some(event) = stream.next().await {
                    if let Ok(WatchEvent::Added(cm) | WatchEvent::Modified(cm)) = event {
                        seen.fetch_max(rv_of(&cm.metadata), Ordering::Relaxed);
                    }
                }
            });
            Ok(Built::Floor {
                items,
                count,
                max_rv,
                _watch: Some(watch),
            })
        }
        Cache::KubeRuntime | Cache::KubeRuntimeStreaming | Cache::KubeRuntimeStripManagedFields => {
            let config = if cache == Cache::KubeRuntimeStreaming {
                watcher::Config::default().streaming_lists()
            } else {
                paged_config()
            };
            let strip = cache == Cache::KubeRuntimeStripManagedFields;
            let (store, task) = kube_runtime_store(api, config, strip).await?;
            Ok(Built::Kube { store, _task: task })
        }
        Cache::Ours | Cache::OursStrip => {
            // Decoding every field, as these scenarios always measured (an informer
            // skips `managedFields` while decoding by default).
            let mut options = InformerOptions::default()
                .queue(scenario::PINNED_QUEUE)
                .keep_managed_fields();
            if cache == Cache::OursStrip {
                options = options.transform(strip_managed_fields());
            }
            let informer = SharedIndexInformer::with_options(ApiListerWatcher::new(api), options);
            let cancel = CancellationToken::new();
            let task = tokio::spawn({
                let informer = informer.clone();
                let cancel = cancel.clone();
                async move { informer.run(cancel).await }
            });
            let phases = fill_phases(&informer).await?;
            Ok(Built::Ours {
                informer,
                phases,
                _cancel: cancel,
                _factory: None,
                _task: Some(task),
            })
        }
        Cache::KubeRuntimeMetadata => {
            let api = Api::<PartialObjectMeta<ConfigMap>>::all(client);
            let (store, task) = kube_runtime_store(api, paged_config(), false).await?;
            Ok(Built::KubeMeta { store, _task: task })
        }
        Cache::OursMetadata => {
            let factory = InformerFactory::new(client).queue(scenario::PINNED_QUEUE);
            let informer = factory.informer::<PartialObjectMeta<ConfigMap>>();
            factory.start();
            let phases = fill_phases(&informer).await?;
            Ok(Built::OursMeta {
                informer,
                phases,
                _factory: factory,
            })
        }
        Cache::OursFactory
        | Cache::OursFactoryInOrder
        | Cache::OursWatchList
        | Cache::OursKeepManagedFields
        | Cache::OursFactoryShard
        | Cache::OursSecondInformer
        | Cache::OursSecondInformerFirstDropped => {
            let mut factory = InformerFactory::new(client).queue(scenario::PINNED_QUEUE);
            if cache == Cache::OursWatchList {
                factory =
                    factory.reflector_options(ReflectorOptions::default().use_watch_list(true));
            }
            if cache == Cache::OursKeepManagedFields {
                factory = factory.keep_managed_fields();
            }
            if cache == Cache::OursFactoryInOrder || cache.is_second() {
                factory = factory.queue(QueueMode::InOrder);
            }
            let informer = if cache == Cache::OursFactoryShard {
                let (label, _, mine) = SHARDS;
                factory.scoped::<ConfigMap>(
                    &InformerScope::default().labels(format!("{label}={mine}")),
                )
            } else {
                factory.informer::<ConfigMap>()
            };
            factory.start();
            let phases = fill_phases(&informer).await?;
            Ok(Built::Ours {
                informer,
                phases,
                _cancel: CancellationToken::new(),
                _factory: Some(factory),
                _task: None,
            })
        }
    }
}

/// The process's counters that a sync moves besides time and CPU: page faults (every
/// thread, ended ones too: `/proc/self/stat`) and context switches (the live threads'
/// sum: `/proc/self/task/*/status`).
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    minor_faults: u64,
    major_faults: u64,
    voluntary_switches: u64,
    involuntary_switches: u64,
}

impl Counters {
    fn now() -> Self {
        let mut c = Counters::default();
        if let Ok(stat) = std::fs::read_to_string("/proc/self/stat")
            && let Some((_, rest)) = stat.rsplit_once(')')
        {
            // `minflt` and `majflt` are fields 10 and 12: the 7th and 9th after `)`.
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let field = |i: usize| fields.get(i).and_then(|f| f.parse().ok()).unwrap_or(0);
            c.minor_faults = field(7);
            c.major_faults = field(9);
        }
        for task in std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
        {
            let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
                continue;
            };
            for line in status.lines() {
                let value = |prefix: &str| {
                    line.strip_prefix(prefix)
                        .and_then(|v| v.trim().parse::<u64>().ok())
                };
                if let Some(v) = value("voluntary_ctxt_switches:") {
                    c.voluntary_switches += v;
                } else if let Some(v) = value("nonvoluntary_ctxt_switches:") {
                    c.involuntary_switches += v;
                }
            }
        }
        c
    }

    /// What moved since `self`, as JSON.
    fn since(self) -> Value {
        let now = Counters::now();
        json!({
            "minor_faults": now.minor_faults.saturating_sub(self.minor_faults),
            "major_faults": now.major_faults.saturating_sub(self.major_faults),
            "voluntary_switches": now.voluntary_switches.saturating_sub(self.voluntary_switches),
            "involuntary_switches": now.involuntary_switches.saturating_sub(self.involuntary_switches),
        })
    }
}

/// Builds and syncs the first informer of a [`Cache::is_second`] scenario, untimed by
/// the caller: its figures, and the cache if it is to be kept.
///
/// # Cancel safety
/// Not relevant: run to completion by the child.
async fn first_informer(
    cache: Cache,
    client: kube::Client,
    paged: bool,
) -> Result<(Value, Option<Built>), String> {
    let counters = Counters::now();
    let (start, cpu0) = (Instant::now(), cpu_secs());
    let built = build(Cache::OursFactoryInOrder, client, paged).await?;
    let mut figures = json!({
        "secs": start.elapsed().as_secs_f64(),
        "cpu": cpu_secs() - cpu0,
        "len": built.len(),
        "counters": counters.since(),
    });
    if cache != Cache::OursSecondInformerFirstDropped {
        return Ok((figures, Some(built)));
    }
    if let Built::Ours {
        _factory: Some(factory),
        ..
    } = &built
    {
        factory.shutdown().await;
    }
    let heap = mem::heap();
    drop(built);
    // Let the runtime's tasks that held the first cache end before the second starts.
    tokio::time::sleep(Duration::from_millis(300)).await;
    figures["heap_freed"] = json!(heap.saturating_sub(mem::heap()));
    Ok((figures, None))
}

fn memory(peak: &HeapPeak) -> Value {
    json!({
        "rss": mem::rss(),
        "hwm": mem::hwm(),
        "heap": mem::heap(),
        "heap_peak": peak.peak(),
    })
}

fn emit(mut line: Value, extra: Value) {
    if let (Some(line), Value::Object(extra)) = (line.as_object_mut(), extra) {
        line.extend(extra);
    }
    println!("{line}");
}

/// Reads the parent's cue `WORD RV NAME` from stdin.
///
/// # Cancel safety
/// Not relevant: awaited to completion by the child.
async fn cue(word: &str) -> Result<(u64, String), String> {
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(w), Some(rv), Some(name)) if w == word => Ok((
            rv.parse().map_err(|e| format!("cue {line:?}: {e}"))?,
            name.to_owned(),
        )),
        _ => Err(format!("expected `{word} RV NAME`, got {line:?}")),
    }
}

/// # Cancel safety
/// Not relevant: the child's whole life.
async fn body(scenario: Scenario, url: &str, objects: usize, paged: bool) -> Result<(), String> {
    let config = kube::Config::new(url.parse().map_err(|e| format!("url {url}: {e}"))?);
    let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
    // A later informer's sync: the first one is synced before the clock runs.
    let (first, _first_kept) = if scenario.cache.is_second() {
        let (figures, kept) = first_informer(scenario.cache, client.clone(), paged).await?;
        (Some(figures), kept)
    } else {
        (None, None)
    };
    let rss0 = mem::rss();
    let heap0 = mem::heap();
    let peak = HeapPeak::start();
    let counters = Counters::now();
    let (start, cpu0) = (Instant::now(), cpu());
    let built = build(scenario.cache, client, paged).await?;
    let (secs, used) = (start.elapsed().as_secs_f64(), cpu().since(cpu0));
    let counters = counters.since();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let len = built.len();
    if len != objects && scenario.cache != Cache::OursFactoryShard {
        eprintln!("compare: {}: cache holds {len} of {objects}", scenario.name);
    }
    let mut synced = json!({
        "phase": "synced",
        "secs": secs,
        "cpu": used.total,
        "cpu_system": used.system,
        "len": len,
        "rss0": rss0,
        "heap0": heap0,
        "counters": counters,
    });
    if let Some(first) = first {
        synced["first"] = first;
    }
    if let Built::Ours { phases, .. } | Built::OursMeta { phases, .. } = &built {
        synced["phases"] = phases.clone();
    }
    match scenario.phase {
        Phase::Sync => emit(synced, memory(&peak)),
        Phase::Churn => {
            emit(synced, memory(&peak));
            // The cache is idle until the parent writes the events: CPU from here
            // on is the churn's.
            let cpu0 = cpu_secs();
            let (rv, name) = cue("churn").await?;
            let start = Instant::now();
            poll_until(|| built.rv_of(&name) >= rv).await?;
            let (secs, cpu) = (start.elapsed().as_secs_f64(), cpu_secs() - cpu0);
            emit(
                json!({"phase": "churn", "secs": secs, "cpu": cpu}),
                memory(&peak),
            );
        }
        Phase::Relist => {
            let steady = memory(&peak);
            let reset = mem::reset_hwm();
            peak.reset();
            emit(synced, steady);
            // The cache is idle until the parent ends the watch: CPU from here on is
            // the relist's.
            let cpu0 = cpu_secs();
            let (rv, name) = cue("relist").await?;
            let start = Instant::now();
            poll_until(|| built.rv_of(&name) >= rv).await?;
            let (secs, cpu) = (start.elapsed().as_secs_f64(), cpu_secs() - cpu0);
            // Let the old objects go before reading the peak and the new steady state.
            tokio::time::sleep(Duration::from_millis(300)).await;
            emit(
                json!({"phase": "relist", "secs": secs, "cpu": cpu, "hwm_reset": reset, "len": built.len()}),
                memory(&peak),
            );
        }
    }
    Ok(())
}
