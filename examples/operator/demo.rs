//! Not part of the operator: the embedded API server (the `Widget` CRD installed
//! through the API, as `kubectl apply` would), and a story that creates, changes and
//! deletes widgets, checks what the operator did (owned ConfigMaps, the finalizer,
//! Events, `/readyz`, `/metrics`), then stops it. With `--cluster`, only the
//! kubeconfig's client: no story, the operator runs until a signal.

#[path = "../support/embedded.rs"]
mod embedded;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{CustomResourceExt, ResourceExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{Widget, WidgetSpec};
use embedded::{Embedded, Error};

/// The namespace the story's widgets live in.
const NS: &str = "demo";
/// How long the story waits for any one thing the operator should do.
const WAIT: Duration = Duration::from_secs(10);

/// The operator's client and, on the embedded server, the story that checks it.
pub struct Demo(Embedded);

impl Demo {
    /// The kubeconfig's client with `--cluster`; else an embedded API server with the
    /// `Widget` CRD installed and the demo namespace created.
    pub async fn start() -> Result<Self, Box<dyn std::error::Error>> {
        Ok(Demo(Embedded::start(Widget::crd(), NS).await?))
    }

    /// A client of the API server.
    pub fn client(&self) -> kube::Client {
        self.0.client()
    }

    /// The story against the operator whose metrics are served on `addr`: resolves
    /// once it has ended, which stops the operator. Never resolves with `--cluster`.
    pub fn story(&mut self, addr: SocketAddr) -> impl Future<Output = ()> + Send + 'static {
        self.0.story(move |client, _server| story(client, addr))
    }

    /// Shuts the embedded server down; the story's outcome (`Ok` with `--cluster`).
    pub async fn outcome(self) -> Result<(), Box<dyn std::error::Error>> {
        self.0.finish().await
    }
}

async fn story(client: kube::Client, addr: SocketAddr) -> Result<(), Error> {
    wait_ready(addr).await?;
    let widgets = Api::<Widget>::namespaced(client.clone(), NS);
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), NS);

    println!("\ncreating widgets anvil and bolt");
    for (name, message) in [("anvil", "hello"), ("bolt", "hi")] {
        let widget = Widget::new(
            name,
            WidgetSpec {
                message: message.into(),
            },
        );
        widgets.create(&PostParams::default(), &widget).await?;
    }
    for (name, message) in [("anvil", "hello"), ("bolt", "hi")] {
        let cm = wait_for(&config_maps, &format!("widget-{name}"), says(message)).await?;
        let cm = cm.ok_or("no ConfigMap")?;
        let owner = cm
            .owner_references()
            .first()
            .map(|o| format!("{} {}", o.kind, o.name));
        let widget = widgets.get(name).await?;
        println!(
            "  {name}: ConfigMap {} says {message:?}, owned by {owner:?}; finalizers {:?}",
            cm.name_any(),
            widget.finalizers()
        );
        if owner.as_deref() != Some(&format!("Widget {name}"))
            || widget.finalizers() != ["example.com/cleanup"]
        {
            return Err(format!("{name}: wrong owner or finalizers").into());
        }
    }

    println!("\nchanging anvil's message");
    let patch = serde_json::json!({ "spec": { "message": "hello again" } });
    widgets
        .patch("anvil", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for(&config_maps, "widget-anvil", says("hello again")).await?;
    println!("  anvil: ConfigMap widget-anvil says \"hello again\"");

    println!("\ndeleting bolt (the finalizer holds it until its cleanup ran)");
    let uid = widgets.get("bolt").await?.uid().unwrap_or_default();
    widgets.delete("bolt", &DeleteParams::default()).await?;
    wait_for(&widgets, "bolt", conditions::is_deleted(&uid)).await?;
    if config_maps.get_opt("widget-bolt").await?.is_some() {
        return Err("bolt is gone but its ConfigMap is not".into());
    }
    println!("  bolt: gone, and its ConfigMap widget-bolt with it");

    println!("\nevents (kubectl events --for widget/NAME)");
    for (name, reason) in [
        ("anvil", "Applied"),
        ("bolt", "Applied"),
        ("bolt", "CleanedUp"),
    ] {
        let event = wait_for_event(&client, name, reason).await?;
        let count = event.series.as_ref().map_or(1, |s| s.count);
        println!(
            "  widget/{name} {reason} x{count}: {}",
            event.note.unwrap_or_default()
        );
    }

    println!("\nGET /metrics (a few lines)");
    let (_, metrics) = get(addr, "/metrics").await?;
    for want in [
        "leader_election_master_status{name=\"widget-operator\"} 1",
        "controller_runtime_reconcile_total{controller=\"widget\",result=\"success\"}",
    ] {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(want))
            .ok_or(format!("no metric {want}"))?;
        println!("  {line}");
    }
    Ok(())
}

/// Whether a ConfigMap's `message` is `message`.
fn says(message: &str) -> impl Condition<ConfigMap> + use<> {
    let message = message.to_owned();
    move |cm: Option<&ConfigMap>| {
        cm.and_then(|cm| cm.data.as_ref()?.get("message")) == Some(&message)
    }
}

/// Waits (woken by a watch) until the named object meets `condition`; its state
/// then (`None` once deleted).
async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    condition: impl Condition<K>,
) -> Result<Option<K>, Error>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let met = tokio::time::timeout(WAIT, await_condition(api.clone(), name, condition)).await;
    Ok(met.map_err(|_| format!("{name}: not as expected after {WAIT:?}"))??)
}

/// Waits (woken by a watch) for the Event `reason` about the widget `name`, as
/// `kubectl events --for widget/<name>` selects them.
async fn wait_for_event(client: &kube::Client, name: &str, reason: &str) -> Result<Event, Error> {
    let api = Api::<Event>::namespaced(client.clone(), NS);
    let config = watcher::Config::default().fields(&format!("regarding.name={name}"));
    let events = watcher(api, config).applied_objects();
    let found = events.try_filter(|e| std::future::ready(e.reason.as_deref() == Some(reason)));
    let first = tokio::time::timeout(WAIT, Box::pin(found).next()).await;
    match first.map_err(|_| format!("no {reason} event for {name} after {WAIT:?}"))? {
        Some(event) => Ok(event?),
        None => Err(format!("the watch of {name}'s events ended").into()),
    }
}

/// Waits until `GET /readyz` answers 200 (the informers synced), then prints its body.
async fn wait_ready(addr: SocketAddr) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (status, body) = get(addr, "/readyz").await?;
        if status == 200 {
            println!(
                "
GET /readyz: 200"
            );
            body.lines().for_each(|l| println!("  {l}"));
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("/readyz still {status} after {WAIT:?}: {body}").into());
        }
        // HTTP has no push: ask again shortly.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A plain HTTP/1.1 GET on the metrics server: the status and the body.
async fn get(addr: SocketAddr, path: &str) -> Result<(u16, String), Error> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let (head, body) = response.split_once("\r\n\r\n").ok_or("no HTTP response")?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no HTTP status")?;
    Ok((status, body.to_owned()))
}
