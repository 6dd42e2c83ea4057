//! [`InformerBuilder`]: everything an informer is configured with, set before it
//! exists.

use std::sync::Arc;
use std::time::Duration;

use crate::fifo::TransformFunc;
use crate::listwatch::{BoxListerWatcher, ListerWatcher};
use crate::object::Object;
use crate::reflector::ReflectorOptions;
use crate::store::Indexers;

use super::SharedIndexInformer;
use crate::fifo::QueueMode;

/// Builds a [`SharedIndexInformer`]: what it lists and watches, its default handler
/// resync period, its indexers, a transform and its reflector's options. Settings
/// that must be fixed before the informer runs can only be made here, so no setter
/// can fail because the informer has started.
///
/// Defaults: no handler resync (as `NewSharedIndexInformer(lw, obj, 0, indexers)`),
/// only the namespace index, no transform, [`ReflectorOptions::default`], the
/// in-order queue ([`QueueMode::InOrder`]).
///
/// # Example
/// ```no_run
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::Pod;
/// use reflector::informer::{SharedIndexInformer, strip_managed_fields};
/// use reflector::listwatch::ApiListerWatcher;
/// use reflector::ReflectorOptions;
/// use reflector::store::Indexers;
/// # fn f(client: kube::Client) {
/// let pods = SharedIndexInformer::builder(ApiListerWatcher::new(kube::Api::<Pod>::all(client)))
///     .resync(Duration::from_secs(600))
///     .indexers(Indexers::new().with("by_node", |p: &Pod| {
///         p.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
///     }))
///     .transform(strip_managed_fields())
///     .reflector_options(ReflectorOptions::default().page_size(1000))
///     .build();
/// # let _ = pods;
/// # }
/// ```
#[must_use]
pub struct InformerBuilder<K: Object> {
    pub(super) lister_watcher: BoxListerWatcher<K>,
    pub(super) resync: Duration,
    pub(super) indexers: Indexers<K>,
    pub(super) transform: Option<TransformFunc<K>>,
    pub(super) reflector_options: ReflectorOptions,
    pub(super) queue: QueueMode,
    /// The label selector the lister-watcher applies, when known (set by the
    /// factory, which built it); a sharded controller checks it.
    pub(super) label_selector: Option<String>,
}

impl<K: Object> std::fmt::Debug for InformerBuilder<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerBuilder")
            .field("resync", &self.resync)
            .field("indexers", &self.indexers.names().collect::<Vec<_>>())
            .field("transform", &self.transform.is_some())
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl<K: Object> InformerBuilder<K> {
    pub(super) fn new(lister_watcher: impl ListerWatcher<K>) -> Self {
        InformerBuilder {
            lister_watcher: BoxListerWatcher::new(lister_watcher),
            resync: Duration::ZERO,
            indexers: Indexers::new(),
            transform: None,
            reflector_options: ReflectorOptions::default(),
            queue: QueueMode::default(),
            label_selector: None,
        }
    }

    /// The resync period of handlers added without one (zero, the default: none).
    /// The informer's reflector checks at the smallest period any handler asked for
    /// before start.
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// The cache's indexes (the namespace index is always added). More can be added
    /// later with [`SharedIndexInformer::add_indexers`].
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = indexers;
        self
    }

    /// Runs `transform` once on every object before it is cached (e.g.
    /// [`strip_managed_fields`](super::strip_managed_fields)), as client-go's
    /// `SetTransform`.
    pub fn transform(self, transform: impl Fn(Arc<K>) -> Arc<K> + Send + Sync + 'static) -> Self {
        self.shared_transform(Arc::new(transform))
    }

    /// Runs an already shared `transform` (an [`InformerOptions`](super::InformerOptions)'s).
    pub(super) fn shared_transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Options of the informer's reflector: page size, backoff, watch timeout,
    /// watch-list streaming, internal-error retries, a watch-error handler. The
    /// informer sets the reflector's name, resync period and `should_resync` itself.
    pub fn reflector_options(mut self, options: ReflectorOptions) -> Self {
        self.reflector_options = options;
        self
    }

    /// The queue between the reflector and the cache (default:
    /// [`QueueMode::InOrder`], client-go 1.36's: every change in watch order,
    /// relists and resyncs applied atomically; [`QueueMode::PerKey`] is
    /// client-go's informer queue before 1.36). See [`QueueMode`] for what each
    /// guarantees.
    pub fn queue(mut self, queue: QueueMode) -> Self {
        self.queue = queue;
        self
    }

    /// Records the label selector the lister-watcher was built with, so the
    /// informer can answer [`SharedIndexInformer::label_selector`].
    pub(super) fn known_label_selector(mut self, selector: Option<String>) -> Self {
        self.label_selector = selector;
        self
    }

    /// The informer. Start it with [`SharedIndexInformer::run`], or hand it to an
    /// owner that starts it (a [`Controller`](crate::controller::Controller)).
    pub fn build(self) -> SharedIndexInformer<K> {
        SharedIndexInformer::from_builder(self)
    }
}
