//! The README's minimal controller, as a user's crate holds it.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use reflector::prelude::*;

async fn reconcile(req: Request<ConfigMap>, _ctx: Arc<()>) -> Result<Action, kube::Error> {
    match req.object {
        Some(cm) => println!("{}: {:?}", req.key, cm.data),
        None => println!("{}: deleted", req.key),
    }
    Ok(Action::done())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = kube::Client::try_default().await?;
    Controller::<ConfigMap>::for_kind(client)
        .shutdown_on_signal()
        .run(reconcile, Arc::new(()))
        .await?;
    Ok(())
}
