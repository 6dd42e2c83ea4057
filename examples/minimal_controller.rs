//! The smallest ConfigMap controller: reconcile gets each ConfigMap's typed key and
//! its cached state (`None` once deleted); SIGINT/SIGTERM stop it gracefully.
//!
//! ```sh
//! cargo run --example minimal_controller                # on the embedded API server
//! cargo run --example minimal_controller -- --cluster   # on your kubeconfig
//! ```
//!
//! Everything above the `embedded` module is the whole controller.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use reflector::prelude::*;
use tracing_subscriber::EnvFilter;

async fn reconcile(req: Request<ConfigMap>, _ctx: Arc<()>) -> Result<Action, kube::Error> {
    match req.object {
        Some(cm) => println!("{}: {:?}", req.key, cm.data),
        None => println!("{}: deleted", req.key),
    }
    Ok(Action::done())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init(); // logs, reconcile errors too
    let client = embedded::client_unless_cluster().await?;
    Controller::<ConfigMap>::for_kind(client)
        .shutdown_on_signal()
        .run(reconcile, Arc::new(()))
        .await?;
    Ok(())
}

/// Not part of the controller: without `--cluster`, an embedded API server with a
/// short scripted story, ended by a SIGTERM to this process (as a pod is stopped).
mod embedded {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

    pub async fn client_unless_cluster() -> Result<kube::Client, Box<dyn std::error::Error>> {
        if std::env::args().any(|a| a == "--cluster") {
            return Ok(kube::Client::try_default().await?);
        }
        let server = reflector_testkit::ApiServer::start().await?;
        let client = server.client();
        tokio::spawn(async move {
            if let Err(e) = story(&server).await {
                eprintln!("demo failed: {e}");
                std::process::exit(1);
            }
            // The server outlives the controller's graceful shutdown.
            std::future::pending::<()>().await;
        });
        Ok(client)
    }

    async fn story(
        server: &reflector_testkit::ApiServer,
    ) -> Result<(), Box<dyn std::error::Error>> {
        // The namespace first: the API server refuses objects in one that does not exist.
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some("demo".into());
        Api::<Namespace>::all(server.client())
            .create(&PostParams::default(), &namespace)
            .await?;
        let api: Api<ConfigMap> = Api::namespaced(server.client(), "demo");
        let step = || tokio::time::sleep(Duration::from_millis(300));
        for name in ["web", "db"] {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some(name.into());
            cm.data = Some([("greeting".to_owned(), "hello".to_owned())].into());
            api.create(&PostParams::default(), &cm).await?;
        }
        step().await;
        let more = serde_json::json!({ "data": { "farewell": "bye" } });
        api.patch("web", &PatchParams::default(), &Patch::Merge(&more))
            .await?;
        step().await;
        api.delete("db", &DeleteParams::default()).await?;
        step().await;
        println!("demo: sending SIGTERM to this process");
        let pid = std::process::id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()?;
        Ok(())
    }
}
