//! How a DeltaFifo is configured: keys, known objects, `Replaced` deltas and the
//! transform.

use std::fmt;
use std::sync::Arc;

use crate::object::{KeyFunc, Object, meta_namespace_key};
use crate::store::KeyListerGetter;

/// A function applied to each object as it enters a [`DeltaFifo`](super::DeltaFifo),
/// as client-go's `TransformFunc`: typically strips fields the consumer never reads
/// (such as `managedFields`) to save memory.
///
/// It runs exactly once per object entering through `add`, `update`, `delete`,
/// `replace` or a streamed list page, before anyone else sees the object, and never
/// on tombstones nor on the `Sync` deltas of `resync` (those objects come from the
/// known objects, which were transformed already). Keep it fast: it runs under the
/// FIFO's lock.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::fifo::TransformFunc;
/// let strip: TransformFunc<ConfigMap> = Arc::new(|obj: Arc<ConfigMap>| {
///     let mut obj = Arc::unwrap_or_clone(obj);
///     obj.metadata.managed_fields = None;
///     Arc::new(obj)
/// });
/// # let _ = strip;
/// ```
pub type TransformFunc<K> = Arc<dyn Fn(Arc<K>) -> Arc<K> + Send + Sync>;

/// Configuration of a [`DeltaFifo`](super::DeltaFifo), as client-go's
/// `DeltaFIFOOptions`. Every field is optional.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector_core::fifo::{DeltaFifo, DeltaFifoOptions};
/// let fifo = DeltaFifo::<ConfigMap>::new(DeltaFifoOptions::default().emit_delta_type_replaced(true));
/// assert!(fifo.is_empty());
/// ```
#[non_exhaustive]
pub struct DeltaFifoOptions<K> {
    /// Computes each object's key. Default: [`meta_namespace_key`] (`ns/name`), as
    /// client-go's `MetaNamespaceKeyFunc`.
    pub key_func: KeyFunc<K>,
    /// The keys the consumer already knows (the informer's indexer). Used by
    /// `delete` (an object known there is deleted even if not queued), `replace`
    /// (known keys missing from the list get a tombstone) and `resync`. Default:
    /// `None`, as client-go; then deletions are detected only among queued keys and
    /// `resync` does nothing.
    pub known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    /// Whether `replace` emits
    /// [`DeltaType::Replaced`](crate::fifo::DeltaType::Replaced) rather than
    /// [`DeltaType::Sync`](crate::fifo::DeltaType::Sync). Default: `false`, as client-go (for backward
    /// compatibility).
    pub emit_delta_type_replaced: bool,
    /// Applied to each object entering the FIFO. Default: `None`, as client-go.
    pub transform: Option<TransformFunc<K>>,
}

impl<K: Object> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        DeltaFifoOptions {
            key_func: Arc::new(meta_namespace_key::<K>),
            known_objects: None,
            emit_delta_type_replaced: false,
            transform: None,
        }
    }
}

impl<K> DeltaFifoOptions<K> {
    /// Sets the key function.
    #[must_use]
    pub fn key_func(mut self, key_func: KeyFunc<K>) -> Self {
        self.key_func = key_func;
        self
    }

    /// Sets the known objects (usually the informer's indexer).
    #[must_use]
    pub fn known_objects(mut self, known: Arc<dyn KeyListerGetter<K>>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Sets whether `replace` emits `Replaced` instead of `Sync`.
    #[must_use]
    pub fn emit_delta_type_replaced(mut self, emit: bool) -> Self {
        self.emit_delta_type_replaced = emit;
        self
    }

    /// Sets the transform applied to each object entering the FIFO.
    #[must_use]
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }
}

impl<K> fmt::Debug for DeltaFifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoOptions")
            .field("known_objects", &self.known_objects.is_some())
            .field("emit_delta_type_replaced", &self.emit_delta_type_replaced)
            .field("transform", &self.transform.is_some())
            .finish_non_exhaustive()
    }
}
