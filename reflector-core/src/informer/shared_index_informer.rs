//! [`SharedIndexInformer`]: one watch, one cache, many handlers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::fifo::{Fifo, QueueMode, TransformFunc};
use crate::lister::Lister;
use crate::listwatch::{BoxListerWatcher, ListerWatcher};
use crate::object::Object;
use crate::reflector::{Reflector, ReflectorOptions, ReflectorStats};
use crate::store::{Indexer, Indexers, Writer};

use super::registration::Upstream;
use super::shared_processor::SharedProcessor;
use super::{InformerError, InformerOptions, InformerScope};

mod batches;
mod handlers;
mod waits;

/// The smallest resync period a handler may ask for, as client-go's
/// `minimumResyncPeriod` (1 s).
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// Most FIFO items applied and handed to the listeners at once. Large enough that
/// the per-batch costs (a lock, a message and a wake-up per listener) fade, small
/// enough that the reflector is not kept waiting on the FIFO lock for long.
const POP_BATCH: usize = 128;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Guarded by `Inner::state`.
struct InformerState<K: Object> {
    started: bool,
    stopped: bool,
    /// The reflector's resync period: the smallest handler period asked for before
    /// start (client-go's `resyncCheckPeriod`).
    resync_check_period: Duration,
    fifo: Option<Arc<Fifo<K>>>,
    reflector: Option<Arc<Reflector<K, BoxListerWatcher<K>>>>,
    /// The cache's one writer, until `run` takes it: the informer's task is then
    /// the only thing that writes the cache and moves its resource version.
    writer: Option<Writer<K>>,
}

struct Inner<K: Object> {
    id: u64,
    name: String,
    lister_watcher: BoxListerWatcher<K>,
    /// A reader of the cache; its writer is in `state` until `run` takes it.
    indexer: Indexer<K>,
    processor: SharedProcessor<K>,
    default_event_handler_resync_period: Duration,
    /// Runs once on every object before it is cached.
    transform: Option<TransformFunc<K>>,
    /// The queue between the reflector and the cache.
    queue: QueueMode,
    /// Options for the reflector made at start; name, resync period and
    /// `should_resync` are the informer's.
    reflector_options: ReflectorOptions,
    /// Woken (`notify_waiters`) when the informer syncs or stops, and when a
    /// handler handled its last initial add. Waiters register before they check.
    progress: Arc<Notify>,
    /// Handler calls that panicked, over every listener.
    handler_panics: Arc<AtomicU64>,
    /// The label selector of `lister_watcher`, when the factory built it.
    label_selector: Option<String>,
    /// Lifecycle; never held across an await.
    state: Mutex<InformerState<K>>,
    /// Held while a popped item is applied to the cache and distributed, and while a
    /// late handler receives its synthetic adds, so neither interleaves with the
    /// other (client-go's `blockDeltas`). Taken after the FIFO's lock.
    block_deltas: Mutex<()>,
}

/// One list-watch, one indexed cache, and any number of event handlers, as
/// client-go's `SharedIndexInformer`.
///
/// Contract (as client-go's): the cache is *eventually consistent* with the API
/// server — for each object, handlers see its changes in order and the cache ends up
/// at its latest state, but intermediate states may be skipped. Every handler gets
/// every notification (a resync only to handlers due for one); each handler has its
/// own unbounded buffer and task, so a slow handler never delays another. A handler
/// added after start first receives an add for every cached object (with
/// `is_in_initial_list = true`).
///
/// Cloning gives another handle to the same informer.
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::core::v1::Pod;
/// use reflector::informer::{Change, InformerOptions, SharedIndexInformer};
/// use reflector::listwatch::ApiListerWatcher;
/// use reflector::store::Indexers;
/// use tokio_util::sync::CancellationToken;
/// # async fn f(client: kube::Client) {
/// let informer = SharedIndexInformer::with_options(
///     ApiListerWatcher::new(kube::Api::<Pod>::all(client)),
///     InformerOptions::default().indexers(Indexers::new().with("by_node", |p: &Pod| {
///         p.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
///     })),
/// );
/// informer
///     .add_event_fn(|ev: Change<Pod>| println!("{:?}", ev.object().metadata.name))
///     .unwrap();
/// let cancel = CancellationToken::new();
/// let run = tokio::spawn({ let i = informer.clone(); let c = cancel.clone(); async move { i.run(c).await } });
/// informer.wait_synced().await.unwrap();
/// let on_node_a = informer.lister().by_index("by_node", "node-a").unwrap();
/// # }
/// ```
pub struct SharedIndexInformer<K: Object> {
    inner: Arc<Inner<K>>,
}

impl<K: Object> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        SharedIndexInformer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K: Object> std::fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl<K: Object> SharedIndexInformer<K> {
    /// An informer over `lister_watcher` with the defaults (see [`InformerOptions`]).
    #[must_use]
    pub fn new(lister_watcher: impl ListerWatcher<K>) -> Self {
        Self::with_options(lister_watcher, InformerOptions::default())
    }

    /// An informer over `lister_watcher` as `options` say (unset settings are the
    /// defaults; the scope is a factory's, ignored here with a warning: the
    /// lister-watcher lists what it lists). Settings that must be fixed before the
    /// informer runs are made here, so none can fail because it has started.
    #[must_use]
    pub fn with_options(
        lister_watcher: impl ListerWatcher<K>,
        options: InformerOptions<K>,
    ) -> Self {
        if options.scope != InformerScope::default() {
            tracing::warn!(
                scope = ?options.scope,
                "an informer over a lister-watcher lists what it lists: the scope is a factory's"
            );
        }
        Self::build(lister_watcher, options, None)
    }

    /// An informer over `lister_watcher`, whose label selector is `label_selector`
    /// when known (the factory's), as the resolved `options` say.
    pub(super) fn build(
        lister_watcher: impl ListerWatcher<K>,
        options: InformerOptions<K>,
        label_selector: Option<String>,
    ) -> Self {
        let lister_watcher =
            BoxListerWatcher::new(lister_watcher.skip_fields(&options.field_filter()));
        let mut indexers = options.indexers.unwrap_or_default();
        if !indexers.contains(crate::store::NAMESPACE_INDEX) {
            indexers = indexers.with_namespace_index();
        }
        let resync = options.resync.unwrap_or_default();
        let writer = Writer::new(indexers);
        SharedIndexInformer {
            inner: Arc::new(Inner {
                id: next_id(),
                name: crate::object::short_type_name::<K>().to_owned(),
                lister_watcher,
                indexer: writer.reader(),
                processor: SharedProcessor::new(),
                default_event_handler_resync_period: resync,
                transform: options.transform,
                queue: options.queue.unwrap_or_default(),
                reflector_options: options.reflector_options.unwrap_or_default(),
                progress: Arc::new(Notify::new()),
                handler_panics: Arc::new(AtomicU64::new(0)),
                label_selector,
                state: Mutex::new(InformerState {
                    started: false,
                    stopped: false,
                    resync_check_period: resync,
                    fifo: None,
                    reflector: None,
                    writer: Some(writer),
                }),
                block_deltas: Mutex::new(()),
            }),
        }
    }

    fn lock_state(&self) -> std::sync::MutexGuard<'_, InformerState<K>> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A handle that does not keep the informer alive.
    pub(crate) fn downgrade(&self) -> WeakInformer<K> {
        WeakInformer(Arc::downgrade(&self.inner))
    }

    /// The label selector this informer lists and watches with, when known: set
    /// for informers made by an [`InformerFactory`](super::InformerFactory), `None`
    /// for one built from a lister-watcher by hand. Read by a sharded controller.
    #[cfg_attr(not(feature = "sharding"), allow(dead_code))]
    pub(crate) fn label_selector(&self) -> Option<&str> {
        self.inner.label_selector.as_deref()
    }

    /// The collection URL this informer lists and watches
    /// (`/api/v1/namespaces/a/configmaps`), when it does so through an
    /// [`ApiListerWatcher`](crate::listwatch::ApiListerWatcher); `None` for any other
    /// lister-watcher. Read by a controller to record its writes against this cache.
    pub(crate) fn api_url(&self) -> Option<&str> {
        self.inner.lister_watcher.api_url()
    }

    /// A read-only handle on the cache (the informer's task is its only writer).
    #[must_use]
    pub fn indexer(&self) -> &Indexer<K> {
        &self.inner.indexer
    }

    /// A lister over the cache.
    #[must_use]
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.inner.indexer.clone())
    }

    /// Whether the informer has started.
    #[must_use]
    pub fn has_started(&self) -> bool {
        self.lock_state().started
    }

    /// Whether the informer has stopped (its `run` returned).
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        self.lock_state().stopped
    }

    /// True once the initial list has been applied to the cache and distributed.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.lock_state()
            .fifo
            .as_ref()
            .is_some_and(|f| f.has_synced())
    }

    /// The resource version the cache has reached, as client-go's
    /// `LastStoreSyncResourceVersion`: every list, watch event and bookmark the
    /// reflector handed over through it is applied, so bookmarks advance it on an
    /// idle watch. `None` before the first list. Exported as the
    /// `store_resource_version` gauge; see also
    /// [`wait_for_resource_version`](Self::wait_for_resource_version).
    ///
    /// In both queue modes the version moves with every batch applied, to the
    /// version through which everything handed over is applied (see
    /// [`QueueMode`]), never ahead of what the cache holds.
    #[doc(alias = "LastStoreSyncResourceVersion")]
    #[must_use]
    pub fn store_resource_version(&self) -> Option<String> {
        self.inner.indexer.resource_version()
    }

    /// The resource version of the last list or watch event the informer's reflector
    /// handled (it may be ahead of the cache, which applies events in order after
    /// it: see [`store_resource_version`](Self::store_resource_version)); `None`
    /// before the first list.
    #[doc(alias = "LastSyncResourceVersion")]
    #[must_use]
    pub fn reflector_resource_version(&self) -> Option<String> {
        self.lock_state()
            .reflector
            .as_ref()
            .and_then(|r| r.resource_version())
    }

    /// The reflector's counters (all zero before start), the informer's count of
    /// handler calls that panicked, and the resource version its cache reached.
    #[must_use]
    pub fn reflector_stats(&self) -> ReflectorStats {
        let mut stats = self
            .lock_state()
            .reflector
            .as_ref()
            .map(|r| r.stats())
            .unwrap_or_default();
        stats.handler_panics = self.inner.handler_panics.load(Ordering::Relaxed);
        stats.store_resource_version = self.inner.indexer.version().numeric().unwrap_or(0);
        stats.queued_items = self.queued_items() as u64;
        stats
    }

    /// How many items wait in the informer's queue, not yet applied to the cache
    /// (changes in order, keys per key; zero before start),
    /// exported as client-go's `informer_queued_items`.
    #[must_use]
    pub fn queued_items(&self) -> usize {
        self.lock_state().fifo.as_ref().map_or(0, |f| f.len())
    }

    /// Adds indexers, before or after start; cached objects are indexed at once.
    ///
    /// # Errors
    /// [`InformerError::Store`] on a name conflict (nothing is added then).
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), InformerError> {
        self.inner
            .indexer
            .add_indexers(indexers)
            .map_err(InformerError::Store)
    }

    /// Lists, watches and notifies until `cancel` fires, then stops every handler's
    /// task and returns. An informer runs once; a second `run` returns at once.
    ///
    /// # Cancel safety
    /// Cancelling the token is the clean way to stop: `run` returns after every task
    /// it started has ended. Dropping the future also stops every task, without
    /// waiting for them.
    pub async fn run(&self, cancel: CancellationToken) {
        if !self.claim_run() {
            tracing::warn!(informer = %self.inner.name, "informer has already been started");
            return;
        }
        self.run_claimed(cancel).await;
    }

    /// Claims the informer's one run (it then reports [`has_started`](Self::has_started))
    /// and returns the future that runs it, or `None` if it already started or stopped.
    /// The claim is taken before this returns, so whoever spawns the future owns the
    /// run even if another starter looks before the task is first polled.
    pub(crate) fn start(&self, cancel: CancellationToken) -> Option<BoxFuture<'static, ()>> {
        if !self.claim_run() {
            return None;
        }
        let this = self.clone();
        Some(Box::pin(async move { this.run_claimed(cancel).await }))
    }

    /// Marks the informer started; false if it already was (or stopped).
    fn claim_run(&self) -> bool {
        let mut st = self.lock_state();
        if st.started || st.stopped {
            return false;
        }
        st.started = true;
        true
    }

    /// `run` once [`claim_run`](Self::claim_run) succeeded.
    ///
    /// # Cancel safety
    /// As [`run`](Self::run).
    async fn run_claimed(&self, cancel: CancellationToken) {
        let (queue, reflector, mut writer, popped_key_is_cache_key) = {
            let mut st = self.lock_state();
            let Some(writer) = st.writer.take() else {
                return;
            };
            let mut fifo = Fifo::new(self.inner.queue)
                .cache(self.inner.indexer.clone())
                .emit_replaced(true);
            if let Some(t) = self.inner.transform.clone() {
                fifo = fifo.shared_transform(t);
            }
            let queue = Arc::new(fifo);
            // Without a transform the queue's key (same key function as the cache's)
            // is the object's cache key; a transform may change the key, which is then
            // computed from the transformed object, as client-go's processDeltas does.
            let popped_key_is_cache_key = self.inner.transform.is_none();
            let mut opts = self
                .inner
                .reflector_options
                .clone()
                .name(self.inner.name.clone())
                .resync_period(st.resync_check_period);
            // Weak: the reflector is kept in this informer's state, so a strong
            // handle here would keep the informer, its cache and its handlers alive
            // forever after the last user handle is dropped.
            let inner = Arc::downgrade(&self.inner);
            opts = opts.should_resync(move || {
                inner
                    .upgrade()
                    .is_some_and(|inner| inner.processor.should_resync())
            });
            let reflector = Arc::new(Reflector::with_queue(
                self.inner.lister_watcher.clone(),
                Arc::clone(&queue),
                opts,
            ));
            st.fifo = Some(Arc::clone(&queue));
            st.reflector = Some(Arc::clone(&reflector));
            (queue, reflector, writer, popped_key_is_cache_key)
        };
        let guard = StopGuard { informer: self };
        self.inner.processor.run();

        // The consumer shares the reflector's task: the two take turns whenever the
        // watch stream waits, so a watch faster than the consumer cannot pile
        // objects up in the FIFO. Run as two tasks, a churn of 100k events over 10k
        // objects held up to 10k pending objects (+110–215 MB of heap for full
        // ConfigMaps) for 5% more events/s. A first list still overlaps: its pages
        // are decoded in the list read-ahead's task while this one applies the
        // pages already streamed into the FIFO.
        let process = self.apply_queue(&queue, &mut writer, popped_key_is_cache_key);
        let close_on_cancel = async {
            cancel.cancelled().await;
            queue.close();
        };
        // Wakes the sync waiters once; the FIFO says when (an empty first list
        // syncs without any pop).
        let announce_sync = async {
            tokio::select! {
                () = queue.wait_synced() => self.inner.progress.notify_waiters(),
                () = cancel.cancelled() => {}
            }
        };
        tokio::join!(
            reflector.run(cancel.clone()),
            process,
            close_on_cancel,
            announce_sync
        );

        let tasks = self.inner.processor.stop();
        for task in tasks {
            if let Err(e) = task.await
                && e.is_panic()
            {
                tracing::error!("a listener task panicked");
            }
        }
        drop(guard);
    }
}

#[cfg(test)]
impl<K: Object> SharedIndexInformer<K> {
    pub(crate) fn lock_state_for_tests(&self) -> (Duration, bool) {
        let st = self.lock_state();
        (st.resync_check_period, st.started)
    }

    pub(crate) fn listener_resync_period(&self, reg: &super::Registration) -> Option<Duration> {
        self.inner.processor.listener_resync_period(reg.listener_id)
    }

    pub(crate) fn handler_count(&self) -> usize {
        self.inner.processor.listener_count()
    }

    /// Applies `batch` to the cache (through its writer, before the informer runs);
    /// returns the notifications it makes.
    pub(crate) fn apply_for_tests(
        &self,
        batch: Vec<crate::fifo::Popped<K>>,
    ) -> Vec<super::notification::Notification<K>> {
        let mut out = Vec::new();
        let mut st = self.lock_state();
        let writer = st.writer.as_mut().expect("the informer has not run");
        writer.write_batch(|cache| {
            super::process::apply_batch(&self.inner.indexer, batch, true, cache, &mut out);
        });
        out
    }
}

/// Stops every listener task and marks the informer stopped when `run` ends, even
/// if its future is dropped.
struct StopGuard<'a, K: Object> {
    informer: &'a SharedIndexInformer<K>,
}

impl<K: Object> Drop for StopGuard<'_, K> {
    fn drop(&mut self) {
        let mut st = self.informer.lock_state();
        st.stopped = true;
        if let Some(fifo) = &st.fifo {
            fifo.close();
        }
        drop(st);
        // Tasks not awaited (the future was dropped) still stop: their tokens fire.
        for task in self.informer.inner.processor.stop() {
            drop(task);
        }
        self.informer.inner.progress.notify_waiters();
    }
}

/// A handle that does not keep its informer alive: what a [`Registration`] (and a
/// readiness check) asks of an informer.
pub(crate) struct WeakInformer<K: Object>(Weak<Inner<K>>);

impl<K: Object> WeakInformer<K> {
    /// The informer, while some strong handle lives.
    pub(crate) fn upgrade(&self) -> Option<SharedIndexInformer<K>> {
        self.0.upgrade().map(|inner| SharedIndexInformer { inner })
    }
}

impl<K: Object> Upstream for WeakInformer<K> {
    fn has_synced(&self) -> bool {
        self.upgrade().is_some_and(|i| i.has_synced())
    }

    fn is_stopped(&self) -> bool {
        self.upgrade().is_none_or(|i| i.is_stopped())
    }
}
