//! The informer's waits: for its sync, and for a resource version (read-your-writes).
//! Each is woken by the informer's progress signal, never polled.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::object::Object;

use super::super::InformerError;
use super::super::registration::wait_for_progress;
use super::SharedIndexInformer;

impl<K: Object> SharedIndexInformer<K> {
    /// Waits until the informer has synced: its initial list is in the cache and
    /// was handed to every handler. Woken when it happens, never polled.
    ///
    /// # Errors
    /// [`InformerError::StoppedBeforeSync`] if the informer stopped first.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes. Put it in a `tokio::time::timeout` for a
    /// deadline.
    pub async fn wait_synced(&self) -> Result<(), InformerError> {
        self.wait_until(|| self.has_synced()).await
    }

    /// Waits until the cache has applied an object event whose `resourceVersion` is
    /// at least `resource_version`, for read-your-writes: after a write answered
    /// with resource version N, `wait_for_resource_version(N)` returns once the
    /// informer's cache holds that write or a later state.
    ///
    /// Resource versions are compared as the integers an etcd3-backed API server
    /// hands out. The event must be one
    /// this informer watches (an object outside its namespace or selectors never
    /// arrives); when the watch is idle and everything received is applied, the
    /// reflector's last resource version (which bookmarks advance) counts too.
    ///
    /// # Errors
    /// [`InformerError::InvalidResourceVersion`] at once for a version that is not an
    /// integer; [`InformerError::StoppedBeforeSync`] if the informer stopped first.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes.
    pub async fn wait_for_resource_version(
        &self,
        resource_version: &str,
    ) -> Result<(), InformerError> {
        let Ok(target) = resource_version.parse::<u64>() else {
            return Err(InformerError::InvalidResourceVersion(
                resource_version.to_owned(),
            ));
        };
        let inner = &self.inner;
        inner.rv_waiters.fetch_add(1, Ordering::SeqCst);
        struct Unwait<'a>(&'a AtomicUsize);
        impl Drop for Unwait<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let _unwait = Unwait(&inner.rv_waiters);
        self.wait_until(|| {
            inner.applied_rv.load(Ordering::SeqCst) >= target || self.drained_past(target)
        })
        .await
    }

    /// Whether everything the reflector received is applied to the cache and its
    /// last resource version is at least `target`.
    fn drained_past(&self, target: u64) -> bool {
        let (fifo, reflector) = {
            let st = self.lock_state();
            match (&st.fifo, &st.reflector) {
                (Some(f), Some(r)) => (f.clone(), Arc::clone(r)),
                _ => return false,
            }
        };
        let reached = reflector
            .resource_version()
            .and_then(|rv| rv.parse::<u64>().ok())
            .is_some_and(|rv| rv >= target);
        reached && fifo.is_drained()
    }

    /// Waits until `done()` is true, woken by the informer's progress signal.
    async fn wait_until(&self, done: impl Fn() -> bool) -> Result<(), InformerError> {
        wait_for_progress(&self.inner.progress, done, || self.is_stopped()).await
    }
}
