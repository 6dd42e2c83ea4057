//! The `/metrics` endpoint (feature `metrics-server`) over real loopback HTTP.
#![cfg(feature = "metrics-server")]

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use reflector_core::metrics::{Metrics, MetricsServer, ReconcileResult};
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
    let recorder = metrics.reconcile().init_controller("widgets", 1);
    recorder.reconciled(ReconcileResult::Success, Duration::from_millis(1));
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
    assert!(response.contains(
        "controller_runtime_reconcile_total{controller=\"widgets\",result=\"success\"} 1"
    ));
    assert!(response.trim_end().ends_with("# EOF"), "{response}");
    assert!(get(addr, "/other").await.starts_with("HTTP/1.1 404"));

    cancel.cancel();
    task.await.unwrap().unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
