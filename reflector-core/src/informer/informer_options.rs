//! [`InformerOptions`]: one factory informer's scope and settings.

use std::sync::Arc;
use std::time::Duration;

use serde_field_filter::{FieldFilter, FieldFilterError};

use crate::fifo::TransformFunc;
use crate::object::Object;
use crate::reflector::ReflectorOptions;
use crate::store::Indexers;

use super::InformerScope;

/// Which objects one informer of an [`InformerFactory`](super::InformerFactory)
/// holds, and how that one informer is tuned: what a factory takes in
/// [`scoped`](super::InformerFactory::scoped), as kube-runtime's `watcher::Config`
/// holds both the selectors and the tuning of one watch.
///
/// Every setting left unset is the factory's: its
/// [`reflector_options`](super::InformerFactory::reflector_options),
/// [`default_resync`](super::InformerFactory::default_resync) and skipped fields. So
/// one informer gets its own page size or resync period without a second factory.
///
/// Defaults: every object in every namespace ([`InformerScope::default`]), the
/// factory's reflector options, resync and skipped fields, no transform, only the
/// namespace index (as [`InformerBuilder`](super::InformerBuilder)).
///
/// The settings shape the informer when the factory makes it. The factory keeps one
/// informer per kind and scope, so asking again for the same kind and scope returns
/// that informer whatever the settings (and logs a warning if they are not the
/// defaults): tune an informer where it is first asked for.
///
/// # Example
/// ```no_run
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::Pod;
/// use reflector::ReflectorOptions;
/// use reflector::informer::{InformerFactory, InformerOptions, InformerScope};
/// # fn f(client: kube::Client) {
/// let factory = InformerFactory::new(client).default_resync(Duration::from_secs(600));
/// // The factory's defaults, except for this informer's page size and resync.
/// let pods = factory.scoped::<Pod>(
///     InformerOptions::default()
///         .scope(InformerScope::default().namespace("prod"))
///         .reflector_options(ReflectorOptions::default().page_size(100))
///         .resync(Duration::from_secs(30)),
/// );
/// let same = factory.scoped::<Pod>(&InformerScope::default().namespace("prod"));
/// # let _ = (pods, same);
/// # }
/// ```
#[must_use]
pub struct InformerOptions<K: Object> {
    pub(crate) scope: InformerScope,
    pub(super) reflector_options: Option<ReflectorOptions>,
    pub(super) resync: Option<Duration>,
    pub(super) keep_managed_fields: bool,
    pub(super) skip: FieldFilter,
    pub(super) transform: Option<TransformFunc<K>>,
    pub(super) indexers: Option<Indexers<K>>,
}

impl<K: Object> Default for InformerOptions<K> {
    fn default() -> Self {
        InformerOptions {
            scope: InformerScope::default(),
            reflector_options: None,
            resync: None,
            keep_managed_fields: false,
            skip: FieldFilter::new(),
            transform: None,
            indexers: None,
        }
    }
}

impl<K: Object> Clone for InformerOptions<K> {
    fn clone(&self) -> Self {
        InformerOptions {
            scope: self.scope.clone(),
            reflector_options: self.reflector_options.clone(),
            resync: self.resync,
            keep_managed_fields: self.keep_managed_fields,
            skip: self.skip.clone(),
            transform: self.transform.clone(),
            indexers: self.indexers.clone(),
        }
    }
}

impl<K: Object> std::fmt::Debug for InformerOptions<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerOptions")
            .field("scope", &self.scope)
            .field("reflector_options", &self.reflector_options)
            .field("resync", &self.resync)
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
impl<K: Object> From<InformerScope> for InformerOptions<K> {
    fn from(scope: InformerScope) -> Self {
        InformerOptions::default().scope(scope)
    }
}

/// The factory's settings within `scope`.
impl<K: Object> From<&InformerScope> for InformerOptions<K> {
    fn from(scope: &InformerScope) -> Self {
        InformerOptions::default().scope(scope.clone())
    }
}

impl<K: Object> InformerOptions<K> {
    /// Which objects the informer lists and watches (default: every object in every
    /// namespace). The factory keeps one informer per kind and scope.
    pub fn scope(mut self, scope: InformerScope) -> Self {
        self.scope = scope;
        self
    }

    /// This informer's reflector options: page size, backoff, watch timeout,
    /// watch-list streaming, ... (default: the factory's
    /// [`reflector_options`](super::InformerFactory::reflector_options)).
    pub fn reflector_options(mut self, options: ReflectorOptions) -> Self {
        self.reflector_options = Some(options);
        self
    }

    /// The resync period of handlers added to this informer without one (default:
    /// the factory's [`default_resync`](super::InformerFactory::default_resync)).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Keep `metadata.managedFields` in this informer's objects (default: skipped
    /// while decoding unless the factory
    /// [keeps them](super::InformerFactory::keep_managed_fields)).
    pub fn keep_managed_fields(mut self) -> Self {
        self.keep_managed_fields = true;
        self
    }

    /// Also skip `paths` while decoding this informer's objects, besides the
    /// factory's [`skip_fields`](super::InformerFactory::skip_fields).
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

    /// Runs `transform` once on every object before it is cached, as
    /// [`InformerBuilder::transform`](super::InformerBuilder::transform) (default:
    /// none).
    pub fn transform(
        mut self,
        transform: impl Fn(Arc<K>) -> Arc<K> + Send + Sync + 'static,
    ) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// The cache's indexes, as
    /// [`InformerBuilder::indexers`](super::InformerBuilder::indexers) (default: only
    /// the namespace index).
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = Some(indexers);
        self
    }

    /// Whether every setting but the scope is the factory's.
    pub(super) fn inherits_all(&self) -> bool {
        self.reflector_options.is_none()
            && self.resync.is_none()
            && !self.keep_managed_fields
            && self.skip.is_empty()
            && self.transform.is_none()
            && self.indexers.is_none()
    }
}
