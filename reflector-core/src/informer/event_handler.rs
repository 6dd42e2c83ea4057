//! Event handlers: what an informer tells its subscribers.

use std::fmt;
use std::sync::Arc;

use crate::object::DeletedObject;

/// Receives an informer's notifications, as client-go's `ResourceEventHandler`.
///
/// Every method defaults to doing nothing. Handlers run on their own listener task,
/// one notification at a time and in order for each object; keep them short and
/// non-blocking (a controller's handler enqueues a key and returns).
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::informer::EventHandler;
///
/// struct Log;
/// impl EventHandler<ConfigMap> for Log {
///     fn on_add(&self, obj: &Arc<ConfigMap>, is_in_initial_list: bool) {
///         println!("added {:?} (initial: {is_in_initial_list})", obj.metadata.name);
///     }
/// }
/// ```
pub trait EventHandler<K>: Send + Sync + 'static {
    /// An object appeared: from the initial list (`is_in_initial_list`), a later
    /// relist, or a watch event.
    fn on_add(&self, _obj: &Arc<K>, _is_in_initial_list: bool) {}

    /// An object changed, or (with a resync period) is re-delivered unchanged: then
    /// `old` and `new` have the same resource version.
    fn on_update(&self, _old: &Arc<K>, _new: &Arc<K>) {}

    /// An object was deleted; a tombstone when the delete was only seen by a relist.
    fn on_delete(&self, _obj: &DeletedObject<K>) {}
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;

/// A handler from closures, as client-go's `ResourceEventHandlerFuncs`; unset
/// callbacks do nothing.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::informer::EventHandlerFns;
/// let h = EventHandlerFns::<ConfigMap>::new()
///     .on_add(|cm, _| println!("add {:?}", cm.metadata.name))
///     .on_delete(|d| println!("delete {:?}", d.object().metadata.name));
/// ```
pub struct EventHandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for EventHandlerFns<K> {
    fn default() -> Self {
        EventHandlerFns {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> fmt::Debug for EventHandlerFns<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventHandlerFns")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> EventHandlerFns<K> {
    /// A handler that does nothing yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Called for each add.
    #[must_use]
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Called for each update.
    #[must_use]
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Called for each delete.
    #[must_use]
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for EventHandlerFns<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}

/// Passes on only the objects a filter accepts, as client-go's
/// `FilteringResourceEventHandler`: an update that starts passing the filter becomes
/// an add, one that stops passing becomes a delete.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::informer::{EventHandlerFns, FilteringHandler};
/// let only_labelled = FilteringHandler::new(
///     |cm: &ConfigMap| cm.metadata.labels.as_ref().is_some_and(|l| l.contains_key("app")),
///     EventHandlerFns::<ConfigMap>::new().on_add(|cm, _| println!("{:?}", cm.metadata.name)),
/// );
/// ```
pub struct FilteringHandler<K, H> {
    filter: Box<dyn Fn(&K) -> bool + Send + Sync>,
    inner: H,
}

impl<K, H: fmt::Debug> fmt::Debug for FilteringHandler<K, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringHandler")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<K, H> FilteringHandler<K, H> {
    /// Wraps `inner`, passing on only objects for which `filter` is true.
    #[must_use]
    pub fn new(filter: impl Fn(&K) -> bool + Send + Sync + 'static, inner: H) -> Self {
        FilteringHandler {
            filter: Box::new(filter),
            inner,
        }
    }
}

impl<K, H> EventHandler<K> for FilteringHandler<K, H>
where
    K: Send + Sync + 'static,
    H: EventHandler<K>,
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.inner.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.inner.on_update(old, new),
            (false, true) => self.inner.on_add(new, false),
            (true, false) => self.inner.on_delete(&DeletedObject::Known(Arc::clone(old))),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        if (self.filter)(obj.object()) {
            self.inner.on_delete(obj);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::sync::Mutex;

    fn cm(name: &str, pass: bool) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.name = Some(name.into());
        if pass {
            c.metadata.labels = Some([("pass".to_owned(), "yes".to_owned())].into());
        }
        Arc::new(c)
    }

    #[test]
    fn filtering_handler_turns_crossings_into_adds_and_deletes() {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let (a, u, d) = (log.clone(), log.clone(), log.clone());
        let h = FilteringHandler::new(
            |c: &ConfigMap| c.metadata.labels.is_some(),
            EventHandlerFns::<ConfigMap>::new()
                .on_add(move |c, _| {
                    a.lock()
                        .unwrap()
                        .push(format!("add {}", c.metadata.name.clone().unwrap()))
                })
                .on_update(move |_, n| {
                    u.lock()
                        .unwrap()
                        .push(format!("update {}", n.metadata.name.clone().unwrap()))
                })
                .on_delete(move |o| {
                    d.lock().unwrap().push(format!(
                        "delete {}",
                        o.object().metadata.name.clone().unwrap()
                    ))
                }),
        );
        h.on_add(&cm("out", false), true);
        h.on_add(&cm("in", true), true);
        h.on_update(&cm("a", false), &cm("a", true));
        h.on_update(&cm("b", true), &cm("b", true));
        h.on_update(&cm("c", true), &cm("c", false));
        h.on_update(&cm("d", false), &cm("d", false));
        h.on_delete(&DeletedObject::Known(cm("gone-out", false)));
        h.on_delete(&DeletedObject::Known(cm("gone-in", true)));
        assert_eq!(
            *log.lock().unwrap(),
            ["add in", "add a", "update b", "delete c", "delete gone-in"]
        );
    }
}
