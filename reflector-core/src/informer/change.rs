//! [`Change`]: one notification as a value, for handlers written as a single closure.

use std::sync::Arc;

use crate::object::{MaybeTombstone, Object};

use super::{EventHandler, InformerError, Registration, SharedIndexInformer};

/// One informer notification as a value: what an [`EventHandler`]'s three methods
/// receive, folded into one enum so a handler can be a single closure with a
/// `match` (see [`SharedIndexInformer::add_event_fn`]).
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::informer::Change;
///
/// fn describe(ev: &Change<ConfigMap>) -> String {
///     match ev {
///         Change::Added { obj, is_in_initial_list } => {
///             format!("added {:?} (initial: {is_in_initial_list})", obj.metadata.name)
///         }
///         Change::Updated { old: _, new } => format!("updated {:?}", new.metadata.name),
///         Change::Deleted(d) => format!("deleted {:?}", d.object().metadata.name),
///     }
/// }
/// let ev = Change::Added { obj: Arc::new(ConfigMap::default()), is_in_initial_list: true };
/// assert_eq!(describe(&ev), "added None (initial: true)");
/// ```
#[doc(alias = "Event")]
#[derive(Debug)]
pub enum Change<K> {
    /// An object appeared: from the initial list (`is_in_initial_list`), a later
    /// relist, or a watch event (as [`EventHandler::on_add`]).
    Added {
        /// The object.
        obj: Arc<K>,
        /// Whether it came with the informer's initial list.
        is_in_initial_list: bool,
    },
    /// An object changed, or is re-delivered unchanged by a resync (then `old` and
    /// `new` have the same resource version), as [`EventHandler::on_update`].
    Updated {
        /// The cached state before the change.
        old: Arc<K>,
        /// The new state.
        new: Arc<K>,
    },
    /// An object was deleted; a tombstone when the delete was only seen by a relist
    /// (as [`EventHandler::on_delete`]).
    Deleted(MaybeTombstone<K>),
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Change::Added {
                obj,
                is_in_initial_list,
            } => Change::Added {
                obj: Arc::clone(obj),
                is_in_initial_list: *is_in_initial_list,
            },
            Change::Updated { old, new } => Change::Updated {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Change::Deleted(d) => Change::Deleted(d.clone()),
        }
    }
}

impl<K> Change<K> {
    /// The object the event is about: the added object, the new state of an update,
    /// or the deleted object (a tombstone's last known state).
    #[must_use]
    pub fn object(&self) -> &Arc<K> {
        match self {
            Change::Added { obj, .. } => obj,
            Change::Updated { new, .. } => new,
            Change::Deleted(d) => d.object(),
        }
    }
}

/// An [`EventHandler`] that hands every notification to one closure as an [`Change`].
struct EventFn<F>(F);

impl<K, F> EventHandler<K> for EventFn<F>
where
    K: Send + Sync + 'static,
    F: Fn(Change<K>) + Send + Sync + 'static,
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (self.0)(Change::Added {
            obj: Arc::clone(obj),
            is_in_initial_list,
        });
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (self.0)(Change::Updated {
            old: Arc::clone(old),
            new: Arc::clone(new),
        });
    }

    fn on_delete(&self, obj: &MaybeTombstone<K>) {
        (self.0)(Change::Deleted(obj.clone()));
    }
}

impl<K: Object> SharedIndexInformer<K> {
    /// Adds a handler written as one closure over [`Change`]s, with the informer's
    /// default resync period. Same delivery guarantees as
    /// [`SharedIndexInformer::add_event_handler`]: its own buffer and task, in order
    /// per object, a synthetic `Added` for every cached object when added after
    /// start. Events carry `Arc`s: no object is cloned.
    ///
    /// # Errors
    /// [`InformerError::Stopped`] if the informer has stopped.
    ///
    /// # Example
    /// ```no_run
    /// use k8s_openapi::api::core::v1::Pod;
    /// use reflector::informer::{Change, SharedIndexInformer};
    /// # fn f(informer: SharedIndexInformer<Pod>) {
    /// let reg = informer
    ///     .add_event_fn(|ev: Change<Pod>| match ev {
    ///         Change::Added { obj, .. } => println!("add {:?}", obj.metadata.name),
    ///         Change::Updated { new, .. } => println!("update {:?}", new.metadata.name),
    ///         Change::Deleted(d) => println!("delete {:?}", d.object().metadata.name),
    ///     })
    ///     .unwrap();
    /// informer.remove_event_handler(&reg);
    /// # }
    /// ```
    pub fn add_event_fn<F>(&self, f: F) -> Result<Registration, InformerError>
    where
        F: Fn(Change<K>) + Send + Sync + 'static,
    {
        self.add_event_handler(EventFn(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::sync::Mutex;

    fn cm(name: &str, rv: &str) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.name = Some(name.into());
        c.metadata.resource_version = Some(rv.into());
        Arc::new(c)
    }

    #[test]
    fn event_fn_maps_each_callback_to_its_variant() {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let h = EventFn({
            let seen = Arc::clone(&seen);
            move |ev: Change<ConfigMap>| {
                let name = ev.object().metadata.name.clone().unwrap_or_default();
                let s = match ev {
                    Change::Added {
                        is_in_initial_list, ..
                    } => format!("add {name} {is_in_initial_list}"),
                    Change::Updated { old, .. } => format!(
                        "update {name} from {}",
                        old.metadata.resource_version.clone().unwrap_or_default()
                    ),
                    Change::Deleted(d) => format!("delete {name} {}", d.is_tombstone()),
                };
                seen.lock().unwrap().push(s);
            }
        });
        let a1 = cm("a", "1");
        let a2 = cm("a", "2");
        h.on_add(&a1, true);
        h.on_update(&a1, &a2);
        h.on_delete(&MaybeTombstone::Object(Arc::clone(&a2)));
        assert_eq!(
            *seen.lock().unwrap(),
            vec!["add a true", "update a from 1", "delete a false"]
        );
    }

    #[test]
    fn event_object_is_the_newest_state() {
        let a1 = cm("a", "1");
        let a2 = cm("a", "2");
        let ev = Change::Updated {
            old: Arc::clone(&a1),
            new: Arc::clone(&a2),
        };
        assert!(Arc::ptr_eq(ev.object(), &a2));
        assert!(Arc::ptr_eq(ev.clone().object(), &a2));
    }
}
