//! The one write both sides of a ring make: a JSON merge patch of an object's
//! metadata (labels, annotations) carrying its `resourceVersion` as a precondition,
//! and what its answer means for the caller's work queue.

use kube::api::{Patch, PatchParams};
use kube::core::PartialObjectMeta;

use crate::object::ObjectKey;

/// How one metadata write ended, for the work queue that asked for it.
pub(crate) enum Outcome {
    /// Written.
    Written,
    /// Nothing to write: the object is gone (404), or already as wanted.
    Settled,
    /// Not written (a 409 from a stale view, a 5xx, a transport error): try again
    /// later from the then-cached object.
    Retry,
}

/// Merge-patches the metadata of the `K` named `key` with `patch` (which should
/// carry `metadata.resourceVersion`), as `field_manager`, asking for the object's
/// metadata only; `ring` and `what` name the write in logs.
///
/// # Cancel safety
/// Dropping it may leave the patch applied unknown to the caller; the informers'
/// next event of the object shows it.
pub(crate) async fn patch_metadata<K>(
    client: &kube::Client,
    key: &ObjectKey,
    patch: serde_json::Value,
    field_manager: &str,
    (ring, what): (&str, &str),
) -> Outcome
where
    K: kube::Resource,
    K::DynamicType: Default,
{
    let params = PatchParams {
        field_manager: Some(field_manager.to_owned()),
        ..PatchParams::default()
    };
    let dyntype = K::DynamicType::default();
    let result = match kube::core::Request::new(K::url_path(&dyntype, key.namespace()))
        .patch_metadata(key.name(), &params, &Patch::Merge(patch))
    {
        Ok(request) => client
            .request::<PartialObjectMeta<K>>(request)
            .await
            .map(drop),
        Err(e) => Err(kube::Error::BuildRequest(e)),
    };
    match result {
        Ok(()) => Outcome::Written,
        Err(kube::Error::Api(status)) if status.code == 404 => Outcome::Settled,
        Err(kube::Error::Api(status)) if status.code == 409 => {
            tracing::debug!(%ring, %key, what, "conflicted; retrying from a fresh view");
            Outcome::Retry
        }
        Err(error) => {
            tracing::warn!(%ring, %key, what, %error, "cannot write; retrying");
            Outcome::Retry
        }
    }
}
