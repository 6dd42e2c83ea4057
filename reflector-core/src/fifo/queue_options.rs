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

    /// A listed object as the queue keeps it: transformed, then, with `look_up`,
    /// swapped for the cached copy if it is exactly that object (see
    /// [`StoreSink::prepare_listed`](crate::store::StoreSink::prepare_listed); the
    /// comparison is after the transform, as the cache holds objects).
    pub(super) fn prepare_listed(&self, obj: Arc<K>, look_up: bool) -> Arc<K> {
        let obj = self.transformed(obj);
        let Some(known) = self
            .known_objects
            .as_ref()
            .filter(|k| look_up && !k.is_empty())
        else {
            return obj;
        };
        let Ok(key) = self.key_of(&obj) else {
            return obj;
        };
        crate::store::unchanged(known.get(&key), &obj).unwrap_or(obj)
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

    /// Whether [`prepare_listed`](Self::prepare_listed) may find an object of a
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
