//! [`InformerOptions`]: everything one informer is configured with, in one place.

use std::sync::Arc;
use std::time::Duration;

use serde_field_filter::{FieldFilter, FieldFilterError};

use crate::fifo::{QueueMode, TransformFunc};
use crate::reflector::ReflectorOptions;
use crate::store::Indexers;

use super::InformerScope;

/// Everything one informer is configured with, the one way to configure it:
/// [`SharedIndexInformer::with_options`](super::SharedIndexInformer::with_options)
/// over a lister-watcher of your own, and
/// [`InformerFactory::scoped`](super::InformerFactory::scoped) (with the scope: which
/// objects, one informer per kind and scope), as kube-runtime's `watcher::Config`
/// holds both the selectors and the tuning of one watch.
///
/// Every setting left unset is the default — for a factory's informer, the
/// factory's: its [`default_resync`](super::InformerFactory::default_resync),
/// [`reflector_options`](super::InformerFactory::reflector_options),
/// [`queue`](super::InformerFactory::queue),
/// [`keep_managed_fields`](super::InformerFactory::keep_managed_fields) and
/// [`skip_fields`](super::InformerFactory::skip_fields) set these same settings for
/// every informer it makes. So one informer gets its own page size, resync or queue
/// without a second factory.
///
/// Defaults: every object in every namespace ([`InformerScope::default`]), no
/// handler resync (as `NewSharedIndexInformer(lw, obj, 0, indexers)`),
/// [`ReflectorOptions::default`], the in-order queue ([`QueueMode::InOrder`]),
/// `metadata.managedFields` skipped while decoding (client-go's informers keep it;
/// controllers almost never read it, and it is about half a cached object's memory),
/// no transform, only the namespace index.
///
/// A factory keeps one informer per kind and scope, so asking again for the same
/// kind and scope returns that informer whatever the settings (and logs a warning
/// if they are not the defaults): tune an informer where it is first asked for. The
/// scope is a factory's: a lister-watcher of your own lists what it lists.
///
/// # Example
/// ```no_run
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::Pod;
/// use reflector::ReflectorOptions;
/// use reflector::fifo::QueueMode;
/// use reflector::informer::{InformerFactory, InformerOptions, InformerScope, SharedIndexInformer};
/// use reflector::listwatch::ApiListerWatcher;
/// use reflector::store::Indexers;
/// # fn f(client: kube::Client) {
/// let tuned = || {
///     InformerOptions::default()
///         .reflector_options(ReflectorOptions::default().page_size(100))
///         .resync(Duration::from_secs(30))
///         .queue(QueueMode::PerKey)
///         .indexers(Indexers::new().with("by_node", |p: &Pod| {
///             p.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
///         }))
/// };
/// // Over a lister-watcher of your own...
/// let lw = ApiListerWatcher::new(kube::Api::<Pod>::all(client.clone()));
/// let pods = SharedIndexInformer::with_options(lw, tuned());
/// // ...or a factory's, the factory's defaults filling what is left unset.
/// let factory = InformerFactory::new(client).default_resync(Duration::from_secs(600));
/// let prod = factory.scoped::<Pod>(tuned().scope(InformerScope::default().namespace("prod")));
/// let same = factory.scoped::<Pod>(&InformerScope::default().namespace("prod"));
/// # let _ = (pods, prod, same);
/// # }
/// ```
#[must_use]
pub struct InformerOptions<K> {
    pub(crate) scope: InformerScope,
    pub(super) reflector_options: Option<ReflectorOptions>,
    pub(super) resync: Option<Duration>,
    pub(super) queue: Option<QueueMode>,
    pub(super) keep_managed_fields: bool,
    pub(super) skip: FieldFilter,
    pub(super) transform: Option<TransformFunc<K>>,
    pub(super) indexers: Option<Indexers<K>>,
}

impl<K> Default for InformerOptions<K> {
    fn default() -> Self {
        InformerOptions {
            scope: InformerScope::default(),
            reflector_options: None,
            resync: None,
            queue: None,
            keep_managed_fields: false,
            skip: FieldFilter::new(),
            transform: None,
            indexers: None,
        }
    }
}

impl<K> Clone for InformerOptions<K> {
    fn clone(&self) -> Self {
        InformerOptions {
            scope: self.scope.clone(),
            reflector_options: self.reflector_options.clone(),
            resync: self.resync,
            queue: self.queue,
            keep_managed_fields: self.keep_managed_fields,
            skip: self.skip.clone(),
            transform: self.transform.clone(),
            indexers: self.indexers.clone(),
        }
    }
}

impl<K> std::fmt::Debug for InformerOptions<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerOptions")
            .field("scope", &self.scope)
            .field("reflector_options", &self.reflector_options)
            .field("resync", &self.resync)
            .field("queue", &self.queue)
            .field("keep_managed_fields", &self.keep_managed_fields)
            .field("skipped_fields", &self.skip.paths())
            .field("transform", &self.transform.is_some())
            .field(
                "indexers",
                &self
                    .indexers
                    .as_ref()
                    .map(|i| i.names().collect::<Vec<_>>()),
            )
            .finish()
    }
}

/// The factory's settings within `scope`.
impl<K> From<InformerScope> for InformerOptions<K> {
    fn from(scope: InformerScope) -> Self {
        InformerOptions::default().scope(scope)
    }
}

/// The factory's settings within `scope`.
impl<K> From<&InformerScope> for InformerOptions<K> {
    fn from(scope: &InformerScope) -> Self {
        InformerOptions::default().scope(scope.clone())
    }
}

impl<K> InformerOptions<K> {
    /// Which objects a factory's informer lists and watches (default: every object
    /// in every namespace). The factory keeps one informer per kind and scope.
    pub fn scope(mut self, scope: InformerScope) -> Self {
        self.scope = scope;
        self
    }

    /// The reflector's options: page size, backoff, watch timeout, watch-list
    /// streaming, internal-error retries, a watch-error handler (default:
    /// [`ReflectorOptions::default`], client-go's reflector settings). The informer
    /// sets the reflector's name, resync period and `should_resync` itself.
    pub fn reflector_options(mut self, options: ReflectorOptions) -> Self {
        self.reflector_options = Some(options);
        self
    }

    /// The resync period of handlers added without one (default zero: none). The
    /// informer's reflector checks at the smallest period any handler asked for
    /// before start.
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// The queue between the reflector and the cache (default:
    /// [`QueueMode::InOrder`], client-go 1.36's: every change in watch order, relists
    /// and resyncs applied atomically; [`QueueMode::PerKey`] is client-go's informer
    /// queue before 1.36). See [`QueueMode`] for what each guarantees.
    pub fn queue(mut self, queue: QueueMode) -> Self {
        self.queue = Some(queue);
        self
    }

    /// Keep `metadata.managedFields` in the cached objects (default: skipped while
    /// decoding). A path given to [`skip_fields`](Self::skip_fields) is still skipped.
    pub fn keep_managed_fields(mut self) -> Self {
        self.keep_managed_fields = true;
        self
    }

    /// Also skip `paths` (relative to each object: `data`,
    /// `status.conditions[*].message`) while decoding. Cached objects look as if the
    /// fields were absent.
    ///
    /// # Errors
    /// [`FieldFilterError::InvalidPath`] for a path that does not parse; see
    /// [`FieldFilter`] for the syntax.
    pub fn skip_fields<I, S>(mut self, paths: I) -> Result<Self, FieldFilterError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.skip.merge(&FieldFilter::parse(paths)?);
        Ok(self)
    }

    /// The paths skipped while decoding: those asked for, and `managedFields` unless
    /// kept.
    pub(super) fn field_filter(&self) -> FieldFilter {
        let mut filter = self.skip.clone();
        if !self.keep_managed_fields {
            filter.merge(&FieldFilter::managed_fields());
        }
        filter
    }

    /// These options, each kind-independent setting left unset taken from
    /// `defaults` (a factory's); skipped paths of both.
    pub(super) fn or<D>(mut self, defaults: &InformerOptions<D>) -> Self {
        self.reflector_options = self
            .reflector_options
            .or_else(|| defaults.reflector_options.clone());
        self.resync = self.resync.or(defaults.resync);
        self.queue = self.queue.or(defaults.queue);
        self.keep_managed_fields |= defaults.keep_managed_fields;
        self.skip.merge(&defaults.skip);
        self
    }

    /// Runs `transform` once on every object before it is cached (e.g.
    /// [`strip_managed_fields`](super::strip_managed_fields) for a lister-watcher that
    /// cannot skip it while decoding), as client-go's `SetTransform` (default: none).
    pub fn transform(
        mut self,
        transform: impl Fn(Arc<K>) -> Arc<K> + Send + Sync + 'static,
    ) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// The cache's indexes (default: only the namespace index, which is always
    /// added). More can be added later with
    /// [`SharedIndexInformer::add_indexers`](super::SharedIndexInformer::add_indexers).
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = Some(indexers);
        self
    }

    /// Whether every setting but the scope is the default.
    pub(super) fn inherits_all(&self) -> bool {
        self.reflector_options.is_none()
            && self.resync.is_none()
            && self.queue.is_none()
            && !self.keep_managed_fields
            && self.skip.is_empty()
            && self.transform.is_none()
            && self.indexers.is_none()
    }
}
