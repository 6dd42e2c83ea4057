//! The informers a controller watches, with the handlers that turn their events into
//! keys of the controller's queue (controller-runtime's `source.Kind` plus an event
//! handler).

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::informer::{EventHandler, InformerError, Registration, SharedIndexInformer};
use crate::metrics::ReflectorCollector;
use crate::object::{
    MaybeTombstone, Object, ObjectKey, deletion_handling_key, meta_namespace_key, short_type_name,
};
use crate::workqueue::{Priority, WorkQueue};

use super::consistency::Cache;
use super::event_filter::EventFilter;
use super::key_gate::KeyGate;
use super::kind_key::KindKey;

/// Maps a watched object to the keys of the primaries to reconcile.
pub(crate) type Mapper<O> = Arc<dyn Fn(&O) -> Vec<ObjectKey> + Send + Sync>;

/// How a source's events become keys.
pub(crate) enum KeyMapping<O> {
    /// The object's own key (the primary resource, controller-runtime's `For`).
    Own,
    /// Keys computed from the object (`Owns`, `Watches`).
    Mapped(Mapper<O>),
}

impl<O> Clone for KeyMapping<O> {
    fn clone(&self) -> Self {
        match self {
            KeyMapping::Own => KeyMapping::Own,
            KeyMapping::Mapped(m) => KeyMapping::Mapped(Arc::clone(m)),
        }
    }
}

/// Enqueues the keys an informer's events map to.
struct EnqueueHandler<O> {
    queue: WorkQueue<ObjectKey>,
    mapping: KeyMapping<O>,
    /// Which adds and updates count; deletes always do.
    filter: Option<EventFilter<O>>,
    /// The term's gate: the primary's own keys pass through it.
    gate: Option<Arc<dyn KeyGate>>,
}

impl<O: Object> EnqueueHandler<O> {
    fn enqueue(&self, obj: &O, priority: Priority) {
        match &self.mapping {
            KeyMapping::Own => match meta_namespace_key(obj) {
                Ok(key) => {
                    if self
                        .gate
                        .as_ref()
                        .is_none_or(|g| g.admit_upsert(&key, obj.meta()))
                    {
                        self.queue.add_with_priority(key, priority);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "object without a key not enqueued"),
            },
            KeyMapping::Mapped(map) => {
                for key in map(obj) {
                    self.queue.add_with_priority(key, priority);
                }
            }
        }
    }
}

/// The priority of a change's keys, as controller-runtime's
/// `WithLowPriorityWhenUnchanged`: [`Priority::LOW`] for an object of the initial
/// list and for an update that changed no resourceVersion (a resync, an object a
/// relist found unchanged), [`Priority::DEFAULT`] for a live change.
fn priority(unchanged: bool) -> Priority {
    if unchanged {
        Priority::LOW
    } else {
        Priority::DEFAULT
    }
}

impl<O: Object> EventHandler<O> for EnqueueHandler<O> {
    fn on_add(&self, obj: &Arc<O>, is_in_initial_list: bool) {
        if self.filter.as_ref().is_some_and(|f| !f.passes_add(obj)) {
            return;
        }
        self.enqueue(obj, priority(is_in_initial_list));
    }

    fn on_update(&self, old: &Arc<O>, new: &Arc<O>) {
        if self
            .filter
            .as_ref()
            .is_some_and(|f| !f.passes_update(old, new))
        {
            return;
        }
        let priority = priority(old.meta().resource_version == new.meta().resource_version);
        // As controller-runtime's mapping handlers: both states count, so a child
        // that changed owner reconciles the old owner and the new one.
        if let KeyMapping::Mapped(_) = self.mapping {
            self.enqueue(old, priority);
        }
        self.enqueue(new, priority);
    }

    fn on_delete(&self, obj: &MaybeTombstone<O>) {
        match &self.mapping {
            KeyMapping::Own => match deletion_handling_key(obj) {
                Ok(key) => {
                    let meta = obj.object().meta();
                    if self
                        .gate
                        .as_ref()
                        .is_none_or(|g| g.admit_delete(&key, meta))
                    {
                        self.queue.add(key);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "deleted object without a key not enqueued"),
            },
            KeyMapping::Mapped(_) => self.enqueue(obj.object(), Priority::DEFAULT),
        }
    }
}

/// A handler registered on an informer, removed when dropped.
pub(crate) struct ActiveRegistration {
    registration: Registration,
    remove: Box<dyn Fn(&Registration) + Send + Sync>,
}

impl ActiveRegistration {
    pub(crate) fn has_synced(&self) -> bool {
        self.registration.has_synced()
    }

    /// # Cancel safety
    /// Cancel-safe: it only observes.
    pub(crate) async fn wait_synced(&self) -> Result<(), InformerError> {
        self.registration.wait_synced().await
    }
}

impl Drop for ActiveRegistration {
    fn drop(&mut self) {
        (self.remove)(&self.registration);
    }
}

/// One informer a controller watches, its element type erased.
pub(crate) trait WatchSource: Send + Sync {
    /// The watched type's short name (`ConfigMap`); `<controller>/<Kind>` names the
    /// informer in logs and metrics.
    fn kind(&self) -> &'static str;
    /// Registers the enqueueing handler; the primary passes its own keys through
    /// the term's `gate`, if it has one.
    fn register(
        &self,
        queue: &WorkQueue<ObjectKey>,
        gate: Option<&Arc<dyn KeyGate>>,
    ) -> Result<ActiveRegistration, InformerError>;
    /// Whether this source holds the controller's owned children (`owns`).
    fn is_owned(&self) -> bool;
    /// The informer's label selector, when known (see
    /// [`SharedIndexInformer::label_selector`]).
    #[cfg(feature = "sharding")]
    fn label_selector(&self) -> Option<String>;
    /// Claims the informer's run and returns it, or `None` if someone already
    /// started it (the claim is taken before this returns, so two starters never
    /// both believe they own the run).
    fn start(&self, cancel: CancellationToken) -> Option<BoxFuture<'static, ()>>;
    fn export_stats(&self, collector: &ReflectorCollector, label: &str);

    /// The informer's cache, as writes of its kind are recorded against it.
    fn cache(&self) -> Cache;
}

pub(crate) struct InformerSource<O: Object> {
    informer: SharedIndexInformer<O>,
    mapping: KeyMapping<O>,
    owned: bool,
    filter: Option<EventFilter<O>>,
}

impl<O: Object> InformerSource<O> {
    /// A source of `informer`'s events that pass `filter`, mapped to keys by
    /// `mapping`; `owned` for the children of `owns`.
    pub(crate) fn new(
        informer: SharedIndexInformer<O>,
        mapping: KeyMapping<O>,
        owned: bool,
        filter: Option<EventFilter<O>>,
    ) -> Self {
        InformerSource {
            informer,
            mapping,
            owned,
            filter,
        }
    }
}

impl<O: Object> WatchSource for InformerSource<O> {
    fn kind(&self) -> &'static str {
        short_type_name::<O>()
    }

    fn register(
        &self,
        queue: &WorkQueue<ObjectKey>,
        gate: Option<&Arc<dyn KeyGate>>,
    ) -> Result<ActiveRegistration, InformerError> {
        let registration = self
            .informer
            .add_nonblocking_event_handler(EnqueueHandler {
                queue: queue.clone(),
                mapping: self.mapping.clone(),
                filter: self.filter.clone(),
                gate: gate.cloned(),
            })?;
        let informer = self.informer.clone();
        Ok(ActiveRegistration {
            registration,
            remove: Box::new(move |r| informer.remove_event_handler(r)),
        })
    }

    fn is_owned(&self) -> bool {
        self.owned
    }

    #[cfg(feature = "sharding")]
    fn label_selector(&self) -> Option<String> {
        self.informer.label_selector().map(str::to_owned)
    }

    fn start(&self, cancel: CancellationToken) -> Option<BoxFuture<'static, ()>> {
        self.informer.start(cancel)
    }

    fn export_stats(&self, collector: &ReflectorCollector, label: &str) {
        collector.add(label, &self.informer);
    }

    fn cache(&self) -> Cache {
        Cache {
            kind: KindKey::cache::<O>(self.informer.api_url()),
            version: Arc::clone(self.informer.indexer().version()),
        }
    }
}
