//! [`BoxListerWatcher`]: any lister-watcher behind one type.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{
    ApiListerWatcher, ListParams, ListWatchError, ListerWatcher, ObjectList, WatchParams,
    WatchStream,
};

/// The object-safe face of a [`ListerWatcher`].
trait DynListerWatcher<K: Clone + 'static>: Send + Sync {
    /// [`ListerWatcher::api_lister_watcher`] of the boxed lister-watcher.
    fn api_lister_watcher_dyn(&self) -> Option<&ApiListerWatcher<K>>
    where
        K: kube::Resource;
    fn list_boxed<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<K>, ListWatchError>>;
    fn watch_boxed<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>, ListWatchError>>;
}

impl<K: Clone + 'static, L: ListerWatcher<K>> DynListerWatcher<K> for L {
    fn api_lister_watcher_dyn(&self) -> Option<&ApiListerWatcher<K>>
    where
        K: kube::Resource,
    {
        self.api_lister_watcher()
    }
    fn list_boxed<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<K>, ListWatchError>> {
        Box::pin(self.list(params))
    }
    fn watch_boxed<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>, ListWatchError>> {
        Box::pin(self.watch(params, resource_version))
    }
}

/// Any [`ListerWatcher`] behind one cloneable type, so informers of one object type
/// need not be generic over where their objects come from.
pub struct BoxListerWatcher<K: Clone + 'static>(Arc<dyn DynListerWatcher<K>>);

impl<K: Clone + 'static> Clone for BoxListerWatcher<K> {
    fn clone(&self) -> Self {
        BoxListerWatcher(Arc::clone(&self.0))
    }
}

impl<K: Clone + 'static> std::fmt::Debug for BoxListerWatcher<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoxListerWatcher")
    }
}

impl<K: Clone + 'static> BoxListerWatcher<K> {
    /// Boxes `lw`.
    #[must_use]
    pub fn new(lw: impl ListerWatcher<K>) -> Self {
        BoxListerWatcher(Arc::new(lw))
    }
}

impl<K: kube::Resource + Clone + 'static> BoxListerWatcher<K> {
    /// The collection URL the boxed lister-watcher lists and watches, when it is an
    /// [`ApiListerWatcher`](super::ApiListerWatcher); `None` for any other.
    pub(crate) fn api_url(&self) -> Option<&str> {
        self.0.api_lister_watcher_dyn().map(ApiListerWatcher::url)
    }
}

impl<K: Clone + Send + 'static> ListerWatcher<K> for BoxListerWatcher<K> {
    fn api_lister_watcher(&self) -> Option<&ApiListerWatcher<K>>
    where
        K: kube::Resource,
    {
        self.0.api_lister_watcher_dyn()
    }

    async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, ListWatchError> {
        self.0.list_boxed(params).await
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError> {
        self.0.watch_boxed(params, resource_version).await
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::listwatch::ApiListerWatcher;

    /// An `ApiListerWatcher` boxes (was the rustdoc example while
    /// `BoxListerWatcher` was public); compiled, not run: it needs a client.
    #[allow(dead_code)]
    fn boxes_an_api_lister_watcher(client: kube::Client) -> BoxListerWatcher<Pod> {
        BoxListerWatcher::new(ApiListerWatcher::new(kube::Api::all(client)))
    }
}
