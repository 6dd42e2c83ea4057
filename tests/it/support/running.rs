//! An informer running in a task until the test stops it.

use std::time::Duration;

use reflector::informer::SharedIndexInformer;
use reflector::object::Object;
use tokio::task::{JoinError, JoinHandle};
use tokio_util::sync::CancellationToken;

/// An informer's `run` in a task, stopped by [`Running::stop`].
pub struct Running {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// Runs `informer` in a task and waits up to `within` for its first sync.
    pub async fn until_synced<K: Object>(
        informer: &SharedIndexInformer<K>,
        within: Duration,
    ) -> Result<Running, String> {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (i, c) = (informer.clone(), cancel.clone());
            async move { i.run(c).await }
        });
        let running = Running { cancel, task };
        tokio::time::timeout(within, informer.wait_synced())
            .await
            .map_err(|_| "no initial sync".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok(running)
    }

    /// Cancels the run and waits for its task to end.
    pub async fn stop(self) -> Result<(), JoinError> {
        self.cancel.cancel();
        self.task.await
    }
}
