//! The webhook server's certificates while clients keep calling it: a self-signed
//! certificate renewed from the same CA, and mounted files changed under it, are
//! served from the next connection on, with no request failing. These run on the
//! real clock (TLS over real sockets); the renewal schedule itself is tested on a
//! paused clock beside the code.

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use reflector_core::webhooks::{Certificates, WebhookServer};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::support::certificate_files;
use crate::support::patience::PATIENCE;
use crate::support::webhook_client::WebhookClient;

/// A ConversionReview the server answers (a hub with no spokes converts to itself).
fn review() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "example.com/v1", "objects": []},
    }))
    .unwrap()
}

mod kinds {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
    #[kube(group = "example.com", version = "v1", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        pub size: u32,
    }
}

const PATH: &str = "/convert/example.com/gadgets";

/// Sends requests one after another (each on a new connection) until `stop`, each
/// answered 200; returns the distinct certificates seen, in order. Panics on the
/// first request that fails.
async fn keep_calling(
    client: WebhookClient,
    stop: CancellationToken,
    seen: watch::Sender<usize>,
) -> Vec<Vec<u8>> {
    let body = review();
    let mut certificates: Vec<Vec<u8>> = Vec::new();
    while !stop.is_cancelled() {
        let reply = client
            .post(PATH, &body)
            .await
            .unwrap_or_else(|e| panic!("a request failed: {e}"));
        assert_eq!(reply.status, 200, "{reply:?}");
        if certificates.last() != Some(&reply.certificate) {
            certificates.push(reply.certificate);
            seen.send_replace(certificates.len());
        }
    }
    certificates
}

/// Waits until `seen` reaches `n` certificates.
async fn wait_seen(seen: &watch::Sender<usize>, n: usize, what: &str) {
    let mut seen = seen.subscribe();
    tokio::time::timeout(PATIENCE, seen.wait_for(|k| *k >= n))
        .await
        .unwrap_or_else(|_| panic!("{what}"))
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_certificate_is_served_while_clients_keep_calling() {
    // Renewed every 2 s (two thirds of 3 s).
    let certificates = Certificates::self_signed().validity(Duration::from_secs(3));
    let mut server = WebhookServer::new("hooks")
        .namespace("ns")
        .certificates(certificates)
        .bind("127.0.0.1:0".parse().unwrap())
        .unwrap();
    server.conversion::<kinds::Gadget>();
    let addr = server.local_addr().unwrap();
    let mut ca = server.ca_bundle();
    let stop = CancellationToken::new();
    let serving = tokio::spawn(server.run(stop.clone()));
    let pem = ca.wait_for(Option::is_some).await.unwrap().clone().unwrap();

    // Clients that trust only the first CA, calling without a pause.
    let calling = CancellationToken::new();
    let seen: Vec<_> = (0..2).map(|_| watch::Sender::new(0)).collect();
    let clients: Vec<_> = seen
        .iter()
        .map(|seen| {
            let client = WebhookClient::new(addr, "hooks.ns.svc", &pem);
            tokio::spawn(keep_calling(client, calling.clone(), seen.clone()))
        })
        .collect();
    for seen in &seen {
        wait_seen(seen, 3, "two renewals were not served").await;
    }
    calling.cancel();
    let mut all = HashSet::new();
    for client in clients {
        let certificates = client.await.unwrap();
        assert!(
            certificates.len() >= 3,
            "{} certificates",
            certificates.len()
        );
        all.extend(certificates);
    }
    assert!(all.len() >= 3);
    assert_eq!(ca.borrow().as_deref(), Some(&*pem), "the CA changed");
    stop.cancel();
    serving.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_certificate_files_are_served_while_clients_keep_calling() {
    let ca = certificate_files::new_ca();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("reflector-webhook-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    certificate_files::write_signed(&dir, "hooks.ns.svc", &ca);

    let certificates = Certificates::from_dir(&dir).poll_interval(Duration::from_secs(1));
    let mut server = WebhookServer::new("hooks")
        .certificates(certificates)
        .bind("127.0.0.1:0".parse().unwrap())
        .unwrap();
    server.conversion::<kinds::Gadget>();
    let addr = server.local_addr().unwrap();
    let mut bundle = server.ca_bundle();
    let stop = CancellationToken::new();
    let serving = tokio::spawn(server.run(stop.clone()));
    let pem = bundle
        .wait_for(Option::is_some)
        .await
        .unwrap()
        .clone()
        .unwrap();
    assert_eq!(&*pem, ca.pem(), "ca.crt is the caBundle");

    let calling = CancellationToken::new();
    let seen = watch::Sender::new(0);
    let client = WebhookClient::new(addr, "hooks.ns.svc", &pem);
    let caller = tokio::spawn(keep_calling(client, calling.clone(), seen.clone()));
    wait_seen(&seen, 1, "the first certificate was not served").await;
    certificate_files::write_signed(&dir, "hooks.ns.svc", &ca);
    wait_seen(&seen, 2, "the changed files were not served").await;
    calling.cancel();
    let certificates = caller.await.unwrap();
    assert_eq!(certificates.len(), 2);
    stop.cancel();
    serving.await.unwrap().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn missing_certificate_files_fail_the_start() {
    let mut server = WebhookServer::new("hooks")
        .certificates(Certificates::from_dir(
            "/nonexistent/reflector-webhook-certs",
        ))
        .bind("127.0.0.1:0".parse().unwrap())
        .unwrap();
    server.conversion::<kinds::Gadget>();
    let err = server.run(CancellationToken::new()).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("reading /nonexistent/reflector-webhook-certs/tls."),
        "{err}"
    );
}
