//! [`EventFilter`]: which changes of a watched informer reach a controller's queue
//! (controller-runtime's predicates).

use std::fmt;
use std::sync::Arc;

use crate::object::Object;

type ObjectTest<K> = Arc<dyn Fn(&K) -> bool + Send + Sync>;
type UpdateTest<K> = Arc<dyn Fn(&K, &K) -> bool + Send + Sync>;

/// Which changes of an informer a controller reconciles, as controller-runtime's
/// predicates: a test of each added object and of each update (old and new state).
/// **Deletions always pass**, tombstones included, so a controller never misses the
/// end of an object. Without a filter (the default), every change is reconciled, as
/// client-go's handlers are called.
///
/// The built-in filters test updates only and let every add through (the initial
/// list's, a relist's, a watch's):
///
/// | filter | an update passes when | controller-runtime |
/// |---|---|---|
/// | [`generation_changed`](Self::generation_changed) | `metadata.generation` differs: a spec change, not a status-only write | `GenerationChangedPredicate` |
/// | [`labels_changed`](Self::labels_changed) | the labels differ | `LabelChangedPredicate` |
/// | [`annotations_changed`](Self::annotations_changed) | the annotations differ | `AnnotationChangedPredicate` |
/// | [`resource_version_changed`](Self::resource_version_changed) | the resourceVersion differs: not a resync | `ResourceVersionChangedPredicate` |
///
/// [`updates`](Self::updates) tests updates with any closure, [`matching`](Self::matching)
/// tests the object of adds and updates; [`and`](Self::and) and [`or`](Self::or)
/// combine filters.
///
/// A key queued for another reason (a requeue, another source's event, a new
/// leadership term's catch-up) is reconciled whatever the filter says.
///
/// A filter is called on the runtime's threads as the informer delivers each
/// change (as the mappers of [`Controller::watches`](super::Controller::watches)
/// and kube-runtime's predicates are): keep it quick, and never block in it.
///
/// # Example
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use reflector::controller::EventFilter;
///
/// // Spec changes, or a change of the `tier` label; a status-only write is not one.
/// let filter = EventFilter::<Deployment>::generation_changed().or(EventFilter::updates(
///     |old: &Deployment, new: &Deployment| {
///         let tier = |d: &Deployment| d.metadata.labels.as_ref().and_then(|l| l.get("tier")).cloned();
///         tier(old) != tier(new)
///     },
/// ));
/// let mut old = Deployment::default();
/// old.metadata.generation = Some(1);
/// let mut status_only = old.clone();
/// status_only.status = Some(Default::default());
/// assert!(!filter.passes_update(&old, &status_only));
/// let mut scaled = old.clone();
/// scaled.metadata.generation = Some(2);
/// assert!(filter.passes_update(&old, &scaled));
/// assert!(filter.passes_add(&old));
/// ```
pub struct EventFilter<K> {
    /// Whether an added object passes.
    add: ObjectTest<K>,
    /// Whether an update passes.
    update: UpdateTest<K>,
}

impl<K> Clone for EventFilter<K> {
    fn clone(&self) -> Self {
        EventFilter {
            add: Arc::clone(&self.add),
            update: Arc::clone(&self.update),
        }
    }
}

impl<K> fmt::Debug for EventFilter<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventFilter").finish_non_exhaustive()
    }
}

impl<K: Object> EventFilter<K> {
    /// Updates pass when `changed(old, new)`; every add passes.
    pub fn updates(changed: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        EventFilter {
            add: Arc::new(|_| true),
            update: Arc::new(changed),
        }
    }

    /// Adds and updates pass when their (new) object matches `matches`, as
    /// controller-runtime's `NewPredicateFuncs`: e.g. only objects of one class.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::controller::EventFilter;
    /// let managed = EventFilter::matching(|cm: &ConfigMap| {
    ///     cm.metadata.labels.as_ref().is_some_and(|l| l.contains_key("example.com/managed"))
    /// });
    /// assert!(!managed.passes_add(&ConfigMap::default()));
    /// ```
    pub fn matching(matches: impl Fn(&K) -> bool + Send + Sync + 'static) -> Self {
        let matches: ObjectTest<K> = Arc::new(matches);
        let on_update = Arc::clone(&matches);
        EventFilter {
            add: matches,
            update: Arc::new(move |_, new| on_update(new)),
        }
    }

    /// Updates pass when `metadata.generation` changed: a change of the spec, not a
    /// status-only write (the API server bumps the generation of custom resources
    /// with a status subresource, and of most built-in workloads, only for spec
    /// changes). Kinds without a generation (ConfigMaps, Secrets) never change it, so
    /// none of their updates pass.
    #[must_use]
    pub fn generation_changed() -> Self {
        Self::updates(|old, new| old.meta().generation != new.meta().generation)
    }

    /// Updates pass when the labels changed.
    #[must_use]
    pub fn labels_changed() -> Self {
        Self::updates(|old, new| old.meta().labels != new.meta().labels)
    }

    /// Updates pass when the annotations changed.
    #[must_use]
    pub fn annotations_changed() -> Self {
        Self::updates(|old, new| old.meta().annotations != new.meta().annotations)
    }

    /// Updates pass when the resourceVersion changed: every change, but no resync
    /// (nor an object a relist found as cached).
    #[must_use]
    pub fn resource_version_changed() -> Self {
        Self::updates(|old, new| old.meta().resource_version != new.meta().resource_version)
    }

    /// Passes what both filters pass.
    #[must_use]
    pub fn and(self, other: Self) -> Self {
        let (add, other_add) = (self.add, other.add);
        let (update, other_update) = (self.update, other.update);
        EventFilter {
            add: Arc::new(move |o| add(o) && other_add(o)),
            update: Arc::new(move |old, new| update(old, new) && other_update(old, new)),
        }
    }

    /// Passes what either filter passes.
    #[must_use]
    pub fn or(self, other: Self) -> Self {
        let (add, other_add) = (self.add, other.add);
        let (update, other_update) = (self.update, other.update);
        EventFilter {
            add: Arc::new(move |o| add(o) || other_add(o)),
            update: Arc::new(move |old, new| update(old, new) || other_update(old, new)),
        }
    }

    /// Whether an added object passes.
    #[must_use]
    pub fn passes_add(&self, obj: &K) -> bool {
        (self.add)(obj)
    }

    /// Whether an update from `old` to `new` passes.
    #[must_use]
    pub fn passes_update(&self, old: &K, new: &K) -> bool {
        (self.update)(old, new)
    }
}
