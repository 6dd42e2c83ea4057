//! Change handlers: what an informer tells its subscribers.

use std::sync::Arc;

use crate::object::MaybeTombstone;

/// Receives an informer's notifications, as client-go's `ResourceEventHandler`.
///
/// Every method defaults to doing nothing. Handlers run on their own listener task,
/// one notification at a time and in order for each object; keep them short and
/// non-blocking (a controller's handler enqueues a key and returns). One that does
/// block (a sleep, blocking I/O) holds up only its own notifications on a
/// multi-thread runtime, where the listener calls handlers through
/// `tokio::task::block_in_place`; on a current-thread runtime it holds up the runtime.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::informer::EventHandler;
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
    fn on_delete(&self, _obj: &MaybeTombstone<K>) {}

    /// This handler, told only of the objects `filter` accepts, as client-go's
    /// `FilteringResourceEventHandler`: an update that starts passing the filter
    /// becomes an add, one that stops passing becomes a delete (of the old state).
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::informer::EventHandler;
    ///
    /// struct Log;
    /// impl EventHandler<ConfigMap> for Log {
    ///     fn on_add(&self, cm: &Arc<ConfigMap>, _: bool) {
    ///         println!("{:?}", cm.metadata.name);
    ///     }
    /// }
    /// let only_labelled = Log.filtered(|cm: &ConfigMap| {
    ///     cm.metadata.labels.as_ref().is_some_and(|l| l.contains_key("app"))
    /// });
    /// only_labelled.on_add(&Arc::new(ConfigMap::default()), true); // not passed on
    /// ```
    fn filtered(self, filter: impl Fn(&K) -> bool + Send + Sync + 'static) -> impl EventHandler<K>
    where
        Self: Sized,
        K: Send + Sync + 'static,
    {
        Filtered {
            filter,
            inner: self,
        }
    }
}

/// What [`EventHandler::filtered`] returns: `inner`, told only of the objects
/// `filter` accepts.
struct Filtered<F, H> {
    filter: F,
    inner: H,
}

impl<K, F, H> EventHandler<K> for Filtered<F, H>
where
    K: Send + Sync + 'static,
    F: Fn(&K) -> bool + Send + Sync + 'static,
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
            (true, false) => self
                .inner
                .on_delete(&MaybeTombstone::Object(Arc::clone(old))),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &MaybeTombstone<K>) {
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

    /// Records what it is told, one line per notification.
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<String>>>);

    impl Log {
        fn push(&self, what: &str, c: &ConfigMap) {
            let name = c.metadata.name.clone().unwrap_or_default();
            self.0.lock().unwrap().push(format!("{what} {name}"));
        }
    }

    impl EventHandler<ConfigMap> for Log {
        fn on_add(&self, c: &Arc<ConfigMap>, _: bool) {
            self.push("add", c);
        }
        fn on_update(&self, _: &Arc<ConfigMap>, n: &Arc<ConfigMap>) {
            self.push("update", n);
        }
        fn on_delete(&self, o: &MaybeTombstone<ConfigMap>) {
            self.push("delete", o.object());
        }
    }

    #[test]
    fn filtering_handler_turns_crossings_into_adds_and_deletes() {
        let log = Log::default();
        let h = log
            .clone()
            .filtered(|c: &ConfigMap| c.metadata.labels.is_some());
        h.on_add(&cm("out", false), true);
        h.on_add(&cm("in", true), true);
        h.on_update(&cm("a", false), &cm("a", true));
        h.on_update(&cm("b", true), &cm("b", true));
        h.on_update(&cm("c", true), &cm("c", false));
        h.on_update(&cm("d", false), &cm("d", false));
        h.on_delete(&MaybeTombstone::Object(cm("gone-out", false)));
        h.on_delete(&MaybeTombstone::Object(cm("gone-in", true)));
        assert_eq!(
            *log.0.lock().unwrap(),
            ["add in", "add a", "update b", "delete c", "delete gone-in"]
        );
    }
}
