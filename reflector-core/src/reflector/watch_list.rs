//! Watch-list: the initial state streamed by a watch request
//! (`sendInitialEvents=true`) instead of listed, as client-go's `watchList`.

use std::sync::Arc;

use kube::api::WatchParams;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::listwatch::{ListWatchError, ListerWatcher, WatchStream};
use crate::object::Object;

use super::stats::bump;
use super::temporary_store::TemporaryStore;
use super::watch_handler::{RunVersions, WatchContext, WatchEnd, handle_watch};
use super::{Reflector, ReflectorError, is_watch_error_retriable};

impl<K, L> Reflector<K, L>
where
    K: Object,
    L: ListerWatcher<K>,
{
    /// Streams the initial state with a watch-list request. `Ok(None)` when
    /// cancelled; `Ok(Some(stream))` with the store replaced (or the streamed list
    /// ended: `TemporaryStore::finish`) and the stream open.
    pub(super) async fn watch_list(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<WatchStream<K>>, ReflectorError> {
        loop {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let last_known = self.rewatch_resource_version();
            let temporary = TemporaryStore::<K>::new(Arc::clone(&self.store));
            let params = WatchParams {
                bookmarks: true,
                send_initial_events: true,
                timeout: Some(self.watch_timeout_secs()),
                ..WatchParams::default()
            };
            let start = Instant::now();
            bump(&self.stats.watches);
            let started = tokio::select! {
                () = cancel.cancelled() => return Ok(None),
                r = self.lister_watcher.watch(&params, &last_known) => r,
            };
            let mut stream = match started {
                Ok(stream) => stream,
                Err(source) => {
                    self.stats.count_error(&source);
                    if self.watch_list_retriable(&source, cancel).await {
                        continue;
                    }
                    return Err(ReflectorError::Watch {
                        resource: self.name.clone(),
                        source,
                    });
                }
            };
            let mut resource_version = String::new();
            let mut set_rv = |versions: RunVersions<'_>| {
                let last = versions.iter().filter(|(_, past)| *past).last();
                if let Some((rv, _)) = last {
                    rv.clone_into(&mut resource_version);
                }
            };
            let ctx = WatchContext {
                name: &self.name,
                store: &temporary,
                stats: &self.stats,
                cancel,
                resync: None,
                exit_on_initial_events_end: true,
            };
            match handle_watch(ctx, start, &mut stream, &mut set_rv).await {
                Ok(WatchEnd::Stopped) => return Ok(None),
                Ok(WatchEnd::InitialEventsEnd) => {
                    self.lock_state().unavailable = false;
                    bump(&self.stats.lists);
                    let relist = std::mem::replace(&mut self.lock_state().listed_once, true);
                    if relist {
                        bump(&self.stats.relists);
                    }
                    temporary
                        .finish(&resource_version)
                        .map_err(|e| ReflectorError::of_sink(&self.name, e, false))?;
                    self.set_resource_version(&resource_version);
                    return Ok(Some(stream));
                }
                Ok(WatchEnd::Closed { .. }) => {}
                Err(e) => {
                    let Some(source) = e.list_watch_error() else {
                        return Err(e);
                    };
                    self.stats.count_error(source);
                    if !self.watch_list_retriable(source, cancel).await {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// client-go's `isErrorRetriableWithSideEffectsFn` for watch-list: back off on
    /// 429/refused; forget the resource version on 410/too large.
    async fn watch_list_retriable(&self, e: &ListWatchError, cancel: &CancellationToken) -> bool {
        if is_watch_error_retriable(e) {
            tracing::debug!(reflector = %self.name, error = %e, "watch-list failed; backing off");
            self.sleep_backoff(cancel).await;
            return true;
        }
        if e.is_expired() || e.is_too_large_resource_version() {
            self.lock_state().unavailable = true;
            return true;
        }
        false
    }
}
