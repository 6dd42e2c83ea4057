//! The reflector's side of a store: what it hands a store besides the [`Store`]
//! verbs. Crate-private: only the queues of [`fifo`](crate::fifo) (and the
//! [`Indexer`]) use these hooks; any other store gets the plain behaviour, one call
//! per event. The store layer knows no queue: the FIFO implements [`StoreSink`]
//! itself, and `fifo::sink_for` recognises it before asking [`sink_for`] here.

use std::any::Any;
use std::sync::Arc;

use super::{Indexer, Store, StoreError};
use crate::object::{Object, ObjectKey};

/// The store call a watch event stands for: `ADDED` → [`Store::add`],
/// `MODIFIED` → [`Store::update`], `DELETED` → [`Store::delete`]. A reflector hands
/// a store the events of one poll together, as `(WatchAction, object)` pairs, through
/// [`StoreSink::apply_watch_run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum WatchAction {
    /// An `ADDED` event: [`Store::add`].
    Add,
    /// A `MODIFIED` event: [`Store::update`].
    Update,
    /// A `DELETED` event: [`Store::delete`].
    Delete,
}

impl WatchAction {
    /// The store call's name: `add`, `update` or `delete`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WatchAction::Add => "add",
            WatchAction::Update => "update",
            WatchAction::Delete => "delete",
        }
    }
}

impl std::fmt::Display for WatchAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Applies a run of watch events one store call each, in order, leaving `run` empty and
/// telling `failed` of every refusal: what [`StoreSink::apply_watch_run`] does by
/// default.
pub(crate) fn apply_each<K: Object, S: Store<K> + ?Sized>(
    store: &S,
    run: &mut Vec<(WatchAction, Arc<K>)>,
    failed: &mut dyn FnMut(WatchAction, StoreError),
) {
    for (action, obj) in run.drain(..) {
        let result = match action {
            WatchAction::Add => store.add(obj),
            WatchAction::Update => store.update(obj),
            WatchAction::Delete => store.delete(obj),
        };
        if let Err(e) = result {
            failed(action, e);
        }
    }
}

/// A [`Store`] as the reflector writes through it: the store verbs plus the
/// batching and streaming hooks only the queues implement (and `prepare_listed`,
/// which the [`Indexer`] answers too). Every hook defaults to what a plain store does
/// with the verbs alone.
pub(crate) trait StoreSink<K: Object>: Store<K> {
    /// Applies a run of watch events in order, each as the [`WatchAction`]'s own
    /// call would, and leaves `run` empty; `failed` is told of every event the store
    /// refused, with the error that call would have returned. A reflector hands over
    /// the events it takes from the stream in one poll this way (up to 1024), then
    /// reports their resource versions. Default: one call per event; the
    /// [`DeltaFifo`](crate::fifo::DeltaFifo) queues a run's adds and updates under
    /// one lock with one wake-up.
    fn apply_watch_run(
        &self,
        run: &mut Vec<(WatchAction, Arc<K>)>,
        failed: &mut dyn FnMut(WatchAction, StoreError),
    ) {
        apply_each(self, run, failed);
    }

    /// Told the resource version of every watch event the reflector handles, bookmarks
    /// included, as client-go's optional `ResourceVersionUpdater`. Default: ignored.
    fn update_resource_version(&self, _resource_version: &str) {}

    /// Told, once per run of watch events ([`apply_watch_run`](StoreSink::apply_watch_run)),
    /// the resource version through which the reflector has handed everything over:
    /// the run's last event's or bookmark's (a bookmark's version counts once every
    /// event before it is handed over). Lists carry theirs in
    /// [`replace`](Store::replace) and
    /// [`finish_list_stream`](StoreSink::finish_list_stream). The store's resource
    /// version follows from these once what was handed over is applied. Default:
    /// ignored.
    #[doc(alias = "Bookmark")]
    fn handed_over(&self, _resource_version: &str) {}

    /// One object of a list as the store will keep it, handed over before the list
    /// ends ([`stream_list_page`](StoreSink::stream_list_page),
    /// [`finish_list_stream`](StoreSink::finish_list_stream),
    /// [`replace_listed`](StoreSink::replace_listed)), which take it as it is: the
    /// store's transform applied, and, with `look_up`, the copy the store (or the cache
    /// behind it) already holds if `obj` is exactly that object
    /// ([`unchanged`](super::unchanged): same resourceVersion *and* same content; a
    /// real API server changes what a read returns without a new resourceVersion when
    /// a CRD's schema adds a default). So a relist holds one copy of every unchanged
    /// object rather than two (its peak memory is the old cache plus what changed, not
    /// twice the cache). The reflector calls it for every listed object as its page
    /// arrives; `look_up` is what [`may_cache_listed`](StoreSink::may_cache_listed)
    /// said as the list started. Default: `obj`.
    fn prepare_listed(&self, obj: Arc<K>, _look_up: bool) -> Arc<K> {
        obj
    }

    /// Asked as a list starts, before any of its objects is looked up by
    /// [`prepare_listed`](StoreSink::prepare_listed): whether such a lookup may
    /// find one of them. `false` promises that the cache is empty and that nothing
    /// queued for it or being applied can fill it but the list's own objects: an
    /// object cached while the list is read then came from the list itself, whose
    /// keys are unique, so every lookup would miss, and the reflector makes none
    /// (nor builds their keys). Default: `true`.
    fn may_cache_listed(&self) -> bool {
        true
    }

    /// Offered one page of a list still being read, so the consumer can start on its
    /// objects before the last page is in; `first_page` says the page starts a list
    /// (its first page, or the single page of a list started over). Returns whether
    /// the store took the page; if it did, the reflector ends the list with
    /// [`finish_list_stream`](StoreSink::finish_list_stream) and the items no page
    /// handed over, instead of [`replace_listed`](StoreSink::replace_listed). The
    /// items are [`prepare_listed`](StoreSink::prepare_listed) already.
    ///
    /// A store takes pages only of a first list into an empty store (nothing queued,
    /// nothing cached, never populated), where `replace` would find nothing to delete
    /// and nothing to compare against, so taking the list page by page changes only
    /// *when* objects arrive. Default: never (`Ok(false)`).
    ///
    /// # Errors
    /// [`StoreError::Closed`] on a closed FIFO.
    fn stream_list_page(&self, _items: &[Arc<K>], _first_page: bool) -> Result<bool, StoreError> {
        Ok(false)
    }

    /// Ends a list whose pages [`stream_list_page`](StoreSink::stream_list_page) took:
    /// `rest` holds the listed items no page handed over, `resource_version` is the
    /// list's. Default: [`replace`](Store::replace) with `rest` (a store that takes
    /// no page never sees this call).
    ///
    /// # Errors
    /// As [`replace`](Store::replace).
    fn finish_list_stream(
        &self,
        rest: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        self.replace_listed(rest, resource_version)
    }

    /// Ends a list no page of which the store took: [`replace`](Store::replace) with
    /// `items`, each [`prepare_listed`](StoreSink::prepare_listed) already (a queue
    /// does not transform them again). Default: `replace`.
    ///
    /// # Errors
    /// As [`replace`](Store::replace).
    fn replace_listed(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        self.replace(items, resource_version)
    }
}

/// A user's store behind a reflector: the verbs, and every hook's default.
struct PlainStore<K>(Arc<dyn Store<K>>);

impl<K: Object> Store<K> for PlainStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.0.add(obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.0.update(obj)
    }
    fn delete(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.0.delete(obj)
    }
    fn list(&self) -> Vec<Arc<K>> {
        self.0.list()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0.list_keys()
    }
    fn get_object(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        self.0.get_object(obj)
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.0.get(key)
    }
    fn replace(&self, items: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        self.0.replace(items, resource_version)
    }
    fn resync(&self) -> Result<(), StoreError> {
        self.0.resync()
    }
}

impl<K: Object> StoreSink<K> for PlainStore<K> {}

/// The sink a reflector writes `store` through, as far as the store layer knows:
/// the [`Indexer`]'s own hooks when `store` is one (as client-go asserts a store's
/// type for its optional interfaces), every hook's default otherwise. The reflector
/// asks `fifo::sink_for`, which recognises the FIFO first and then asks this.
pub(crate) fn sink_for<K: Object>(store: Arc<dyn Store<K>>) -> Arc<dyn StoreSink<K>> {
    let any: Arc<dyn Any + Send + Sync> = store.clone();
    if let Ok(indexer) = any.downcast::<Indexer<K>>() {
        return indexer;
    }
    Arc::new(PlainStore(store))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::store::Indexers;
    use crate::test_support::cm;

    /// An Indexer handed over as a plain `dyn Store` keeps its own hooks; any other
    /// store gets the defaults.
    #[test]
    fn sink_for_recognises_the_indexer() {
        let indexer = Arc::new(Indexer::<ConfigMap>::new(Indexers::new()));
        let a = cm(1, 1);
        indexer.add(a.clone()).unwrap();
        let sink = sink_for(indexer.clone() as Arc<dyn Store<ConfigMap>>);
        assert!(Arc::ptr_eq(&sink.prepare_listed(cm(1, 1), true), &a));

        let plain = sink_for(Arc::new(PlainStore(indexer as Arc<dyn Store<ConfigMap>>)));
        assert!(!Arc::ptr_eq(&plain.prepare_listed(cm(1, 1), true), &a));
        assert!(!plain.stream_list_page(&[cm(2, 1)], true).unwrap());
    }
}
