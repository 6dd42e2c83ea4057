//! How to test your own informer-based code against the embedded API server, with a
//! fault injected: the server answers the first two watches with 429, and the cache
//! still converges (the reflector backs off and re-watches without relisting). The
//! wait is woken by the informer when its cache reaches the write, never polled.
//!
//! In your crate this body goes into a `#[tokio::test]`; testing a controller (a
//! reconcile on its own, and the whole controller) is `reflector-testkit`'s guide,
//! "Testing your controller".
//!
//! ```sh
//! cargo run --example testing
//! ```

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use reflector::informer::InformerFactory;
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt().with_env_filter(filter).init();
    let server = ApiServer::start().await?;
    let fault = server.inject(
        Matcher::verb(Verb::Watch).times(2),
        Fault::TooManyRequests {
            retry_after_secs: 1,
            plain_text: true,
        },
    );
    let factory = InformerFactory::new(server.client_without_retries());
    let configmaps = factory.informer::<ConfigMap>();
    factory.start();
    factory.wait_synced().await?;

    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("hello".into());
    let created = Api::<ConfigMap>::namespaced(server.client(), "default")
        .create(&Default::default(), &cm)
        .await?;
    // Woken once the informer's cache holds the write (or anything later); the
    // timeout only turns a cache that never gets there into a failure.
    let rv = created.metadata.resource_version.unwrap_or_default();
    tokio::time::timeout(
        Duration::from_secs(10),
        configmaps.wait_for_resource_version(&rv),
    )
    .await??;
    assert!(configmaps.lister().get(Some("default"), "hello").is_some());
    assert_eq!(server.fault_hits(fault), 2, "both 429s were served");
    assert_eq!(
        configmaps.reflector_stats().lists,
        1,
        "429s never cause a relist"
    );

    factory.shutdown().await;
    println!("ok: cache converged through 2 injected 429s without relisting");
    Ok(())
}
