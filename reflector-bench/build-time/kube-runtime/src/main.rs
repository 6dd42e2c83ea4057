//! The same controller on kube-runtime.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Api, Client};

async fn reconcile(cm: Arc<ConfigMap>, _ctx: Arc<()>) -> Result<Action, kube::Error> {
    println!("{:?}: {:?}", cm.metadata.name, cm.data);
    Ok(Action::await_change())
}

fn error_policy(_cm: Arc<ConfigMap>, _error: &kube::Error, _ctx: Arc<()>) -> Action {
    Action::requeue(Duration::from_secs(5))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::try_default().await?;
    Controller::new(Api::<ConfigMap>::all(client), watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(()))
        .for_each(|_| async {})
        .await;
    Ok(())
}
