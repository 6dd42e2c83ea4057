//! The `/metrics` endpoint (feature `metrics-server`) over real loopback HTTP.
#![cfg(feature = "metrics-server")]

use std::sync::Arc;

use prometheus_client::registry::Registry;
use reflector_core::metrics::{Metrics, MetricsServer};
use reflector_core::workqueue::{QueueConfig, WorkQueue};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

/// `GET /metrics` answers 200 with the registry's text; other paths 404; the
/// server stops when its token is cancelled.
#[tokio::test]
async fn metrics_endpoint_serves_the_registry_until_cancelled() {
    let mut registry = Registry::default();
    let metrics = Metrics::registered(&mut registry);
    let queue: WorkQueue<&str> = WorkQueue::with_config(
        Arc::new(reflector_core::workqueue::DefaultRateLimiter::default()),
        QueueConfig::default().name("widgets").metrics(&metrics),
    );
    queue.add("ns/a");
    let server = MetricsServer::bind("127.0.0.1:0".parse().unwrap(), Arc::new(registry))
        .await
        .unwrap();
    let addr = server.local_addr().unwrap();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(server.run(cancel.clone()));

    let response = get(addr, "/metrics").await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains("application/openmetrics-text"),
        "{response}"
    );
    assert!(
        response.contains("workqueue_adds_total{name=\"widgets\"} 1"),
        "{response}"
    );
    assert!(response.trim_end().ends_with("# EOF"), "{response}");
    assert!(get(addr, "/other").await.starts_with("HTTP/1.1 404"));

    cancel.cancel();
    task.await.unwrap().unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

/// `/healthz` answers 200 at once; `/readyz` answers 503 (naming the informer) until
/// the informer has synced, then 200.
#[tokio::test]
async fn readyz_is_ready_only_after_informers_synced() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use reflector_core::informer::SharedIndexInformer;
    use reflector_core::listwatch::FakeSource;
    use reflector_core::metrics::Health;

    let informer = SharedIndexInformer::new(FakeSource::<ConfigMap>::new());
    let health = Health::new();
    health.informer("configmaps", &informer);
    let server = MetricsServer::bind("127.0.0.1:0".parse().unwrap(), Arc::default())
        .await
        .unwrap()
        .health(health);
    let addr = server.local_addr().unwrap();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(server.run(cancel.clone()));

    let alive = get(addr, "/healthz").await;
    assert!(
        alive.starts_with("HTTP/1.1 200") && alive.ends_with("ok"),
        "{alive}"
    );
    let unready = get(addr, "/readyz").await;
    assert!(unready.starts_with("HTTP/1.1 503"), "{unready}");
    assert!(
        unready.contains("[-]informer configmaps failed"),
        "{unready}"
    );

    let run = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    informer.wait_synced().await.unwrap();
    let ready = get(addr, "/readyz").await;
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    assert!(ready.contains("[+]informer configmaps ok"), "{ready}");
    assert!(ready.contains("readyz check passed"), "{ready}");

    cancel.cancel();
    task.await.unwrap().unwrap();
    run.await.unwrap();
}
