//! The informer's waits: for its sync (woken by the informer's progress signal), and
//! for a resource version (read-your-writes; woken by the cache's version). Never
//! polled.

use tokio::sync::oneshot;

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

    /// Waits until the cache has reached `resource_version`
    /// ([`store_resource_version`](Self::store_resource_version) at least as large),
    /// for read-your-writes: after a write answered with resource version N,
    /// `wait_for_resource_version(N)` returns once the informer's cache holds that
    /// write or a later state. Woken by the informer when its cache gets there,
    /// never polled.
    ///
    /// Resource versions are compared as the integers an etcd3-backed API server
    /// hands out. Bookmarks advance the cache's version too, so a write this
    /// informer does not watch (outside its namespace or selectors) is reached as
    /// soon as a later event or bookmark is applied. A cache whose version is not an
    /// integer counts as having reached any version (the comparison fails open).
    ///
    /// # Errors
    /// [`InformerError::InvalidResourceVersion`] at once for a version that is not an
    /// integer; [`InformerError::StoppedBeforeSync`] if the informer stopped first.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes (a dropped wait leaves a spent waiter behind,
    /// dropped when the cache reaches the version or the informer stops).
    pub async fn wait_for_resource_version(
        &self,
        resource_version: &str,
    ) -> Result<(), InformerError> {
        let Ok(target) = resource_version.parse::<u64>() else {
            return Err(InformerError::InvalidResourceVersion(
                resource_version.to_owned(),
            ));
        };
        let version = self.inner.indexer.version();
        if !version.reached(target).is_over() {
            let (reached, wait) = oneshot::channel();
            let wake = Box::new(move || {
                let _ = reached.send(());
            });
            if version.wake_at(target, wake) {
                // Woken when reached, or when the informer stops (or is dropped).
                let _ = wait.await;
            }
        }
        if version.reached(target).is_over() {
            Ok(())
        } else {
            Err(InformerError::StoppedBeforeSync)
        }
    }

    /// Waits until `done()` is true, woken by the informer's progress signal.
    async fn wait_until(&self, done: impl Fn() -> bool) -> Result<(), InformerError> {
        wait_for_progress(&self.inner.progress, done, || self.is_stopped()).await
    }
}
