//! The scenarios: which cache a child builds and what it does after the initial sync.

/// The cache a child builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    /// `Api::list` kept in a `Vec<Arc<ConfigMap>>`: one request without a limit (the
    /// one page a real server answers an informer's first list with), or pages of 500
    /// with `--paged`.
    Floor,
    /// As `Floor`, decoded and dropped.
    FloorNoStore,
    /// As `Floor`, then a raw `Api::watch` decoding events into nothing.
    FloorWatch,
    /// kube-runtime's `reflector(writer, watcher(api, page_size 500))`.
    KubeRuntime,
    /// kube-runtime's `reflector(writer, watcher(api, Config::default().streaming_lists()))`.
    KubeRuntimeStreaming,
    /// As [`Cache::KubeRuntime`], each object's `managedFields` cleared before the store
    /// (`watcher(..).modify(|cm| cm.managed_fields_mut().clear())`), as kube-runtime's
    /// users commonly do: decoded, then dropped.
    KubeRuntimeStripManagedFields,
    /// Our `SharedIndexInformer` over `ApiListerWatcher`, no transform.
    Ours,
    /// `InformerFactory::new(client).informer::<ConfigMap>()` with the factory
    /// defaults but the queue ([`PINNED_QUEUE`]).
    OursFactory,
    /// The factory with `.queue(QueueMode::InOrder)`: client-go 1.36's in-order
    /// queue (every informer's default) in place of the per-key queue, the rest as
    /// [`Cache::OursFactory`]. With the factory's defaults: what a user gets.
    OursFactoryInOrder,
    /// The factory with `ReflectorOptions::default().use_watch_list(true)`: the initial
    /// state streamed by a watch-list request.
    OursWatchList,
    /// The factory with `keep_managed_fields()`: every field decoded and cached.
    OursKeepManagedFields,
    /// Our plain informer built with `.transform(strip_managed_fields())`.
    OursStrip,
    /// kube-runtime's `reflector(writer, watcher(Api<PartialObjectMeta<ConfigMap>>, page_size 500))`.
    KubeRuntimeMetadata,
    /// `InformerFactory::new(client).informer::<PartialObjectMeta<ConfigMap>>()`.
    OursMetadata,
    /// The factory's informer scoped to shard `a` of a three-shard ring
    /// (`InformerScope::labels(ring.selector())`): the cache one replica of a sharded
    /// controller holds. Selecting it labels every stored object with its rendezvous
    /// winner among `a`, `b`, `c`, as the sharder would ([`SHARDS`]).
    OursFactoryShard,
    /// A later informer's sync in one process: the factory's default informer
    /// ([`Cache::OursFactoryInOrder`]) synced first and kept (watching), then a second
    /// factory on the same client builds the same informer, which is what is timed.
    OursSecondInformer,
    /// As [`Cache::OursSecondInformer`], with the first factory shut down and its cache
    /// freed before the second starts: what the process kept from the first sync (its
    /// threads, the allocator's heaps) without the first cache itself.
    OursSecondInformerFirstDropped,
}

impl Cache {
    /// Whether a first informer is synced (untimed) before this cache is built.
    pub fn is_second(self) -> bool {
        matches!(
            self,
            Cache::OursSecondInformer | Cache::OursSecondInformerFirstDropped
        )
    }
}

/// The queue of every `ours*` cache but [`Cache::OursFactoryInOrder`]: the per-key
/// queue, the informers' default when their figures in BENCHMARKS.md were taken, so each
/// scenario keeps measuring what its figures measured; `ours-factory-in-order` is
/// today's default.
pub const PINNED_QUEUE: reflector::fifo::QueueMode = reflector::fifo::QueueMode::PerKey;

/// The ring the sharded scenario's objects are labelled for: its assignment label,
/// its shards, and the shard the child caches.
pub const SHARDS: (&str, [&str; 3], &str) = ("shard.reflector.rs/cms", ["a", "b", "c"], "a");

/// What happens after the initial sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing: report the sync figures and exit.
    Sync,
    /// Watch churn: MODIFIED events until the cache shows the last resourceVersion.
    Churn,
    /// Forced relist: peak memory while relisting.
    Relist,
}

/// One scenario: a name, a cache and a phase.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Name on the command line and in the tables.
    pub name: &'static str,
    /// The cache built.
    pub cache: Cache,
    /// What follows the sync.
    pub phase: Phase,
}

/// Every child scenario, in table order.
pub const ALL: &[Scenario] = &[
    s("floor", Cache::Floor, Phase::Sync),
    s("floor-nostore", Cache::FloorNoStore, Phase::Sync),
    s("kube-runtime", Cache::KubeRuntime, Phase::Sync),
    s(
        "kube-runtime-strip-managed-fields",
        Cache::KubeRuntimeStripManagedFields,
        Phase::Sync,
    ),
    s("ours", Cache::Ours, Phase::Sync),
    s("ours-factory", Cache::OursFactory, Phase::Sync),
    s(
        "ours-factory-in-order",
        Cache::OursFactoryInOrder,
        Phase::Sync,
    ),
    s(
        "kube-runtime-streaming",
        Cache::KubeRuntimeStreaming,
        Phase::Sync,
    ),
    s("ours-watch-list", Cache::OursWatchList, Phase::Sync),
    s(
        "ours-keep-managed-fields",
        Cache::OursKeepManagedFields,
        Phase::Sync,
    ),
    s("ours-strip-transform", Cache::OursStrip, Phase::Sync),
    s(
        "kube-runtime-metadata",
        Cache::KubeRuntimeMetadata,
        Phase::Sync,
    ),
    s("ours-metadata", Cache::OursMetadata, Phase::Sync),
    s("ours-factory-shard", Cache::OursFactoryShard, Phase::Sync),
    s(
        "ours-second-informer",
        Cache::OursSecondInformer,
        Phase::Sync,
    ),
    s(
        "ours-second-informer-first-dropped",
        Cache::OursSecondInformerFirstDropped,
        Phase::Sync,
    ),
    s("churn-floor", Cache::FloorWatch, Phase::Churn),
    s("churn-kube-runtime", Cache::KubeRuntime, Phase::Churn),
    s("churn-ours", Cache::Ours, Phase::Churn),
    s("churn-ours-factory", Cache::OursFactory, Phase::Churn),
    s(
        "churn-ours-factory-in-order",
        Cache::OursFactoryInOrder,
        Phase::Churn,
    ),
    s(
        "churn-kube-runtime-streaming",
        Cache::KubeRuntimeStreaming,
        Phase::Churn,
    ),
    s("churn-ours-watch-list", Cache::OursWatchList, Phase::Churn),
    s(
        "churn-ours-keep-managed-fields",
        Cache::OursKeepManagedFields,
        Phase::Churn,
    ),
    s("relist-kube-runtime", Cache::KubeRuntime, Phase::Relist),
    s("relist-ours", Cache::Ours, Phase::Relist),
    s("relist-ours-factory", Cache::OursFactory, Phase::Relist),
    s(
        "relist-ours-factory-in-order",
        Cache::OursFactoryInOrder,
        Phase::Relist,
    ),
];

/// Name of the in-process index query comparison.
pub const INDEX: &str = "index";

const fn s(name: &'static str, cache: Cache, phase: Phase) -> Scenario {
    Scenario { name, cache, phase }
}

/// The scenario called `name`.
pub fn find(name: &str) -> Option<Scenario> {
    ALL.iter().copied().find(|s| s.name == name)
}

/// The scenarios `names` select (all of them when `names` is empty), and whether the
/// index query comparison ([`INDEX`]) runs; an unknown name is an error naming the known
/// ones.
pub fn select(names: &[String]) -> Result<(Vec<Scenario>, bool), String> {
    if names.is_empty() {
        return Ok((ALL.to_vec(), true));
    }
    let mut selected = Vec::new();
    for name in names.iter().filter(|name| *name != INDEX) {
        selected.push(find(name).ok_or_else(|| {
            format!(
                "unknown scenario {name}; known: {}, {INDEX}",
                ALL.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
            )
        })?);
    }
    Ok((selected, names.iter().any(|name| name == INDEX)))
}
