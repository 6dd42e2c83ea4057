//! Ready-made transforms for [`InformerOptions::transform`].
//!
//! [`InformerOptions::transform`]: super::InformerOptions::transform

use std::sync::Arc;

use crate::object::Object;

/// A transform that drops `metadata.managedFields` before objects are cached.
///
/// `managedFields` (server-side apply bookkeeping) is often half of an object's
/// decoded size and almost never read by controllers; dropping it roughly halves the
/// cache's memory. The object is modified in place when the informer holds the only
/// reference to it (always the case for freshly decoded objects), so no copy is made.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
/// use reflector::informer::strip_managed_fields;
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
/// let stripped = strip_managed_fields::<ConfigMap>()(Arc::new(cm));
/// assert!(stripped.metadata.managed_fields.is_none());
/// ```
pub fn strip_managed_fields<K: Object>() -> impl Fn(Arc<K>) -> Arc<K> + Send + Sync + 'static {
    |obj: Arc<K>| {
        if obj.meta().managed_fields.is_none() {
            return obj;
        }
        let mut owned = Arc::unwrap_or_clone(obj);
        owned.meta_mut().managed_fields = None;
        Arc::new(owned)
    }
}
