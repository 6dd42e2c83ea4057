//! [`KeyGate`]: a term's say over which of the primary's keys are queued and
//! reconciled.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::object::ObjectKey;

/// Which of the primary's keys a [`Term`](super::term::Term) lets through, beyond the
/// queue's own rules: asked by the primary informer's handler on each event of its
/// objects, and by a worker before each reconcile. A term without a gate (leader
/// election, or none) lets every key through; a shard's gate lets through only what
/// the shard holds and has not handed over.
pub(crate) trait KeyGate: Send + Sync {
    /// An add or update of `key` (state `meta`) arrived: whether to queue it.
    fn admit_upsert(&self, key: &ObjectKey, meta: &ObjectMeta) -> bool;

    /// `key` left the cache (last known state `meta`): whether to queue its
    /// reconcile with no object.
    fn admit_delete(&self, key: &ObjectKey, meta: &ObjectMeta) -> bool;

    /// A worker took `key`, whose cached state is `cached`: a pass to hold while
    /// reconciling it, or `None` to skip it (the key is then forgotten and done).
    fn begin(&self, key: &ObjectKey, cached: Option<&ObjectMeta>) -> Option<Box<dyn Pass + '_>>;
}

/// A reconcile a [`KeyGate`] let start. Dropping it ends the reconcile for the gate
/// (also when the worker is aborted mid-reconcile).
pub(crate) trait Pass: Send {
    /// The reconcile ended and its key was not queued again.
    fn settled(self: Box<Self>);
}
