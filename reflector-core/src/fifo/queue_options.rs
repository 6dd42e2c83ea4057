//! [`QueueOptions`]: what both queues are configured with alike (keys, the
//! consumer's cache, the transform), and what they compute from it the same way.

use std::sync::Arc;

use crate::object::{KeyError, KeyFunc, Object, ObjectKey, meta_namespace_key};
use crate::store::KeyListerGetter;

/// A function applied to each object as it enters a FIFO (see
/// [`DeltaFifo::transform`](super::DeltaFifo::transform)).
pub(crate) type TransformFunc<K> = Arc<dyn Fn(Arc<K>) -> Arc<K> + Send + Sync>;

/// The settings the [`DeltaFifo`](super::DeltaFifo) and the
/// [`InOrderFifo`](super::InOrderFifo) share, set by their builder methods before
/// the queue is shared, immutable after; each queue documents what it does with
/// them.
pub(super) struct QueueOptions<K> {
    /// Keys objects. Default: `meta_namespace_key` (`ns/name`).
    pub(super) key_func: KeyFunc<K>,
    /// The consumer's cache, read without the queue's lock or under it (each queue
    /// says). Default: none.
    pub(super) known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    /// Applied to each object entering the queue. Default: none.
    pub(super) transform: Option<TransformFunc<K>>,
}

impl<K: Object> QueueOptions<K> {
    /// The defaults: `ns/name` keys, no cache, no transform.
    pub(super) fn new() -> Self {
        QueueOptions {
            key_func: Arc::new(meta_namespace_key::<K>),
            known_objects: None,
            transform: None,
        }
    }

    /// The cached object under `obj`'s key, if it has `obj`'s resourceVersion (the
    /// reflector then hands the cached copy on instead of `obj`).
    pub(super) fn cached_unchanged(&self, obj: &K) -> Option<Arc<K>> {
        let known = self.known_objects.as_ref().filter(|k| !k.is_empty())?;
        let key = self.key_of(obj).ok()?;
        crate::store::same_state(known.get(&key), obj)
    }
}

impl<K> QueueOptions<K> {
    /// `obj`'s key, by the key function.
    ///
    /// # Errors
    /// The key function's.
    #[inline]
    pub(super) fn key_of(&self, obj: &K) -> Result<ObjectKey, KeyError> {
        (self.key_func)(obj)
    }

    /// `obj` through the transform, if any.
    #[inline]
    pub(super) fn transformed(&self, obj: Arc<K>) -> Arc<K> {
        match &self.transform {
            Some(t) => t(obj),
            None => obj,
        }
    }

    /// Whether `obj` is the very object the cache holds under `key` (the reflector
    /// handed an unchanged cached object back, transformed already).
    pub(super) fn is_cached(&self, key: &ObjectKey, obj: &Arc<K>) -> bool {
        self.known_objects
            .as_ref()
            .and_then(|known| known.get(key))
            .is_some_and(|cached| Arc::ptr_eq(&cached, obj))
    }

    /// Whether [`cached_unchanged`](Self::cached_unchanged) may find an object of a
    /// list starting now, given whether the queue is `idle` (nothing queued, nothing
    /// being applied): not when the cache is empty and only the list's own objects
    /// can reach it.
    pub(super) fn may_cache_listed(&self, idle: bool) -> bool {
        self.known_objects
            .as_ref()
            .is_some_and(|known| !idle || !known.is_empty())
    }

    /// Whether there is no cache, or it holds nothing: a first list may then be
    /// streamed into the queue page by page.
    pub(super) fn cache_is_empty(&self) -> bool {
        self.known_objects.as_ref().is_none_or(|k| k.is_empty())
    }
}
