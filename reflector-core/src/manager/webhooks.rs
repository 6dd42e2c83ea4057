//! The manager's webhook server (feature `webhooks`): served on every replica from
//! the start of `run` until everything else has stopped.

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::webhooks::{WebhookError, WebhookServer};

use super::{Manager, ManagerError};

impl Manager {
    /// Runs `server` (its hooks registered) on every replica, leader or not: the API
    /// server calls whichever pod its Service picks. It starts with the manager,
    /// before the informers sync, and stops last in the shutdown (it stops
    /// accepting, answers the requests in flight, then returns), so the API server
    /// is answered for as long as the pod runs. A server that cannot start (its
    /// certificate files missing, say) shuts the manager down, and `run` returns
    /// [`ManagerError::Webhooks`].
    ///
    /// Its Service's namespace defaults to the client's default namespace (the
    /// pod's own). [`manifests`](Self::manifests) adds its Service, webhook
    /// configurations, CRDs and container port; [`rbac`](Self::rbac) what its
    /// caBundle keeper writes. A second server replaces the first: register every
    /// hook on one.
    ///
    /// # Example
    /// ```no_run
    /// use reflector::manager::Manager;
    /// use reflector::webhooks::WebhookServer;
    /// # fn f(mut manager: Manager) {
    /// let mut webhooks = WebhookServer::new("widget-webhooks").keep_ca_bundle(manager.client().clone());
    /// // webhooks.defaulting::<Widget>().validating::<Widget>();
    /// manager.add_webhooks(webhooks);
    /// # }
    /// ```
    pub fn add_webhooks(&mut self, server: WebhookServer) -> &mut Self {
        let namespace = server
            .namespace_or(self.client.default_namespace())
            .to_owned();
        self.webhooks = Some(server.namespace(namespace));
        self
    }
}

/// The webhook server while it runs; dropping it stops it at once.
pub(super) struct Webhooks {
    stop: CancellationToken,
    task: JoinSet<Result<(), WebhookError>>,
}

impl Webhooks {
    /// Starts `server`, if there is one; if it fails before it is stopped, `failed`
    /// fires (the manager shuts down).
    pub(super) fn start(server: Option<WebhookServer>, failed: &CancellationToken) -> Self {
        let stop = CancellationToken::new();
        let mut task = JoinSet::new();
        if let Some(server) = server {
            let (stop, failed) = (stop.clone(), failed.clone());
            task.spawn(async move {
                let result = server.run(stop.clone()).await;
                if let Err(e) = &result
                    && !stop.is_cancelled()
                {
                    tracing::error!(error = %e, "the webhook server failed; shutting down");
                    failed.cancel();
                }
                result
            });
        }
        Webhooks { stop, task }
    }

    /// Stops serving (requests in flight are answered) and waits for the server.
    ///
    /// # Errors
    /// [`ManagerError::Webhooks`] if the server failed.
    pub(super) async fn stop(mut self) -> Result<(), ManagerError> {
        self.stop.cancel();
        let mut result = Ok(());
        while let Some(joined) = self.task.join_next().await {
            match joined {
                Ok(Err(e)) => result = Err(ManagerError::Webhooks(e)),
                Err(e) => tracing::error!(error = %e, "the webhook server's task failed"),
                Ok(Ok(())) => {}
            }
        }
        result
    }
}

impl Drop for Webhooks {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
