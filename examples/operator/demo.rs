//! Not part of the operator: the embedded API server (the `WidgetSet` and `Widget` CRDs
//! installed through the API, as `kubectl apply` would), and a story that creates,
//! changes and scales a widget set, checks what the operator did (owned widgets and
//! ConfigMaps, the finalizer, the set's status, Events, one Lease, `/readyz`,
//! `/metrics`), then stops it. With `--cluster`, only the kubeconfig's client: no story,
//! the operator runs until a signal. And the YAML printing of `--print-manifests`.

#[path = "../support/embedded.rs"]
mod embedded;
#[path = "../support/manifests.rs"]
mod manifests;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{CustomResourceExt, ResourceExt};
use reflector_testkit::RequestLogEntry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Widget, WidgetSet, WidgetSetSpec};
use embedded::Embedded;
pub use embedded::Error;
pub use manifests::{offline_client, print_yaml};

/// The namespace the story's objects live in.
const NS: &str = "demo";
/// How long the story waits for any one thing the operator should do.
const WAIT: Duration = Duration::from_secs(10);

/// The operator's client and, on the embedded server, the story that checks it.
pub struct Demo(Embedded);

impl Demo {
    /// The kubeconfig's client with `--cluster`; else an embedded API server with the
    /// CRDs installed and the demo namespace created.
    pub async fn start() -> Result<Self, Error> {
        Ok(Demo(
            Embedded::start([WidgetSet::crd(), Widget::crd()], NS).await?,
        ))
    }

    /// A client of the API server (its requests carry the operator's `User-Agent` on
    /// the embedded server).
    pub fn client(&self) -> kube::Client {
        self.0.client()
    }

    /// Where to serve `/metrics`: `METRICS_ADDR` if set; else `0.0.0.0:8080` in a
    /// cluster (as the printed Deployment probes it), a free loopback port here.
    pub fn metrics_addr(&self) -> SocketAddr {
        let default = if self.0.is_embedded() {
            "127.0.0.1:0"
        } else {
            "0.0.0.0:8080"
        };
        let addr = std::env::var("METRICS_ADDR").unwrap_or_else(|_| default.into());
        addr.parse().unwrap_or_else(|_| ([127, 0, 0, 1], 0).into())
    }

    /// The story against the operator whose metrics are served on `addr`: resolves
    /// once it has ended, which stops the operator. Never resolves with `--cluster`.
    pub fn story(&mut self, addr: SocketAddr) -> impl Future<Output = ()> + Send + 'static {
        println!("serving /metrics, /healthz and /readyz on http://{addr}");
        self.0.story(move |client, _server| story(client, addr))
    }

    /// The operator's requests so far (on the embedded server).
    pub fn operator_requests(&self) -> Vec<RequestLogEntry> {
        self.0.controller_requests()
    }

    /// Shuts the embedded server down; the story's outcome (`Ok` with `--cluster`).
    pub async fn outcome(self) -> Result<(), Error> {
        self.0.finish().await
    }
}

async fn story(client: kube::Client, addr: SocketAddr) -> Result<(), Error> {
    wait_ready(addr).await?;
    let sets = Api::<WidgetSet>::namespaced(client.clone(), NS);
    let widgets = Api::<Widget>::namespaced(client.clone(), NS);
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), NS);

    println!("\ncreating WidgetSet tools: 2 widgets saying \"hello\"");
    let spec = WidgetSetSpec {
        replicas: 2,
        message: "hello".into(),
    };
    sets.create(&PostParams::default(), &WidgetSet::new("tools", spec))
        .await?;
    for name in ["tools-0", "tools-1"] {
        let cm = wait_for(&config_maps, &format!("widget-{name}"), says("hello")).await?;
        let cm = cm.ok_or("no ConfigMap")?;
        let widget = widgets.get(name).await?;
        println!(
            "  {name}: owned by {:?}, finalizers {:?}; ConfigMap {} says \"hello\", owned by {:?}",
            owner(&widget),
            widget.finalizers(),
            cm.name_any(),
            owner(&cm),
        );
        if owner(&widget).as_deref() != Some("WidgetSet tools")
            || owner(&cm) != Some(format!("Widget {name}"))
            || widget.finalizers() != ["example.com/cleanup"]
        {
            return Err(format!("{name}: wrong owners or finalizers").into());
        }
    }
    wait_for(&sets, "tools", widget_count(2)).await?;
    println!("  tools: status.widgets = 2");

    println!("\nchanging the set's message");
    let patch = serde_json::json!({ "spec": { "message": "hello again" } });
    sets.patch("tools", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    for name in ["tools-0", "tools-1"] {
        wait_for(&config_maps, &format!("widget-{name}"), says("hello again")).await?;
        println!("  {name}: ConfigMap widget-{name} says \"hello again\"");
    }

    println!("\nscaling tools to 1 (tools-1 is deleted once its finalizer cleaned up)");
    let uid = widgets.get("tools-1").await?.uid().unwrap_or_default();
    let patch = serde_json::json!({ "spec": { "replicas": 1 } });
    sets.patch("tools", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for(&widgets, "tools-1", conditions::is_deleted(&uid)).await?;
    if config_maps.get_opt("widget-tools-1").await?.is_some() {
        return Err("tools-1 is gone but its ConfigMap is not".into());
    }
    wait_for(&sets, "tools", widget_count(1)).await?;
    println!("  tools-1: gone, and its ConfigMap with it; tools: status.widgets = 1");
    if widgets.get_opt("tools-0").await?.is_none() {
        return Err("tools-0 was deleted too".into());
    }

    println!("\nevents (kubectl events --for widget/NAME)");
    for (name, reason) in [
        ("tools-0", "Applied"),
        ("tools-1", "Applied"),
        ("tools-1", "CleanedUp"),
    ] {
        let event = wait_for_event(&client, name, reason).await?;
        let count = event.series.as_ref().map_or(1, |s| s.count);
        println!(
            "  widget/{name} {reason} x{count}: {}",
            event.note.unwrap_or_default()
        );
    }

    println!("\none Lease for both controllers");
    let leases = Api::<Lease>::default_namespaced(client)
        .list(&ListParams::default())
        .await?;
    let holders: Vec<_> = leases
        .items
        .iter()
        .map(|l| {
            (
                l.name_any(),
                l.spec.as_ref().and_then(|s| s.holder_identity.clone()),
            )
        })
        .collect();
    println!("  {holders:?}");
    if holders.len() != 1 || holders[0].1.is_none() {
        return Err(format!("expected one held Lease, found {holders:?}").into());
    }

    println!("\nGET /metrics (a few lines)");
    let (_, metrics) = get(addr, "/metrics").await?;
    for want in [
        "leader_election_master_status{name=\"widget-operator\"} 1",
        "controller_runtime_reconcile_total{controller=\"widgetset\",result=\"success\"}",
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

/// `Kind name` of an object's controller owner.
fn owner(object: &impl kube::Resource) -> Option<String> {
    let owners = object
        .meta()
        .owner_references
        .as_deref()
        .unwrap_or_default();
    let owner = owners.iter().find(|o| o.controller == Some(true))?;
    Some(format!("{} {}", owner.kind, owner.name))
}

/// Whether a ConfigMap's `message` is `message`.
fn says(message: &str) -> impl Condition<ConfigMap> + use<> {
    let message = message.to_owned();
    move |cm: Option<&ConfigMap>| {
        cm.and_then(|cm| cm.data.as_ref()?.get("message")) == Some(&message)
    }
}

/// Whether a set's status counts `n` widgets.
fn widget_count(n: u32) -> impl Condition<WidgetSet> {
    move |set: Option<&WidgetSet>| {
        set.and_then(|s| s.status.as_ref())
            .is_some_and(|s| s.widgets == n)
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
            println!("\nGET /readyz: 200");
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
