//! Not part of the controller: the embedded API server (the Widget CRD installed
//! through the API, the demo namespace created), and a story that creates, updates
//! and deletes widgets, waits for the end state it expects after each step, prints
//! the Events and a summary, then stops the controller. With `--cluster`, only the
//! kubeconfig's client: no story, the controller runs until a signal.

#[path = "../support/embedded.rs"]
mod embedded;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event as EventObject;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{CustomResourceExt, Resource, ResourceExt};
use reflector::metrics::{Registry, render_metrics};
use reflector::prelude::*;
use reflector_testkit::{ApiServer, Fault, Matcher, Verb};

use crate::{Widget, WidgetIndexes, WidgetSpec, config_map_name, desired_data};
use embedded::{Embedded, Error};

/// The namespace the demo's widgets live in.
const NS: &str = "demo";

/// The controller's client and, on the embedded server, the story that drives it.
pub struct Demo(Embedded);

impl Demo {
    /// The kubeconfig's client with `--cluster`; else an embedded API server with the
    /// Widget CRD installed and the demo namespace created.
    pub async fn start() -> Result<Self, Box<dyn std::error::Error>> {
        Ok(Demo(
            Embedded::start([Widget::crd()], NS)
                .await
                .map_err(|e| e as Box<dyn std::error::Error>)?,
        ))
    }

    /// A client of the API server.
    pub fn client(&self) -> kube::Client {
        self.0.client()
    }

    /// The story: resolves once it has ended, which stops the controller. Never
    /// resolves with `--cluster`.
    pub fn story(&mut self) -> impl Future<Output = ()> + Send + 'static {
        self.0
            .story(|client, server| async move { story(&server, &client).await })
    }

    /// Prints the Events and a summary of what the controller did, shuts the
    /// embedded server down, and returns the story's outcome (`Ok` with `--cluster`,
    /// where the Events and the summary are those of the `demo` namespace).
    pub async fn finish(
        self,
        widgets: &SharedIndexInformer<Widget>,
        registry: &Registry,
        reconciles: usize,
        errors: usize,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let client = self.0.client();
        print_events(&client).await?;
        let lp = ListParams::default();
        let listed_widgets = Api::<Widget>::namespaced(client.clone(), NS)
            .list(&lp)
            .await?;
        let listed_config_maps = Api::<ConfigMap>::namespaced(client, NS).list(&lp).await?;
        println!("\nsummary");
        println!("  widgets           {}", listed_widgets.items.len());
        println!("  configmaps        {}", listed_config_maps.items.len());
        println!("  reconciles        {reconciles}");
        println!("  errors (requeued) {errors}");
        for index in Widget::INDEX_NAMES {
            let indexer = widgets.indexer();
            let mut parts: Vec<String> = (indexer.index_values(index).iter())
                .map(|v| {
                    format!(
                        "{v}={}",
                        indexer.index_keys(index, v).map_or(0, |k| k.len())
                    )
                })
                .collect();
            parts.sort();
            println!("  index {index:<10} {}", parts.join(" "));
        }
        let mut alices: Vec<String> = widgets
            .by_owner("alice")?
            .iter()
            .map(|w| w.name_any())
            .collect();
        alices.sort();
        println!("  alice's widgets   {alices:?}");
        let text = render_metrics(registry);
        let success =
            |l: &&str| l.starts_with("controller_runtime_reconcile_total") && l.contains("success");
        if let Some(line) = text.lines().find(success) {
            println!("  metrics           {line}");
        }
        self.0
            .finish()
            .await
            .map_err(|e| e as Box<dyn std::error::Error>)
    }
}

async fn story(server: &ApiServer, client: &kube::Client) -> Result<(), Error> {
    let api: Api<Widget> = Api::namespaced(client.clone(), NS);
    // One failed ConfigMap create, so the controller records a Warning and retries.
    server.inject(
        Matcher::verb(Verb::Create).resource("configmaps").times(1),
        Fault::InternalError,
    );
    println!("\ncreating widgets (the first ConfigMap create answers 500 once)");
    for w in [
        widget("anvil", "alice", &["metal", "heavy"], "forge", 3),
        widget("bolt", "alice", &["metal"], "forge", 1),
        widget("cog", "bob", &["metal", "round"], "mill", 2),
        widget("dial", "bob", &["glass"], "mill", 1),
        widget("easel", "carol", &["wood"], "studio", 5),
        widget("flute", "carol", &["wood", "round"], "studio", 1),
    ] {
        api.create(&PostParams::default(), &w).await?;
    }
    settle(server, "all widgets ready").await?;

    println!("\nupdating: anvil grows, dial moves from bob to alice");
    api.patch(
        "anvil",
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({ "spec": { "size": 4 } })),
    )
    .await?;
    api.patch(
        "dial",
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({ "spec": { "owner": "alice" } })),
    )
    .await?;
    settle(server, "updates reconciled").await?;

    println!("\ndeleting easel and cog (finalizer cleanup)");
    api.delete("easel", &DeleteParams::default()).await?;
    api.delete("cog", &DeleteParams::default()).await?;
    settle(server, "deletes cleaned up").await?;
    if server.count::<Widget>()? != 4 {
        return Err("deleted widgets are still there".into());
    }
    println!("\nend state reached: 4 widgets, each ready with its ConfigMap");
    Ok(())
}

fn widget(name: &str, owner: &str, tags: &[&str], app: &str, size: u32) -> Widget {
    let mut w = Widget::new(
        name,
        WidgetSpec {
            owner: owner.into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            parent: None,
            size,
        },
    );
    w.metadata.namespace = Some(NS.into());
    w.metadata.labels = Some(BTreeMap::from([("app".to_owned(), app.to_owned())]));
    w
}

/// The end state the demo expects: every widget ready at its generation with a
/// ConfigMap matching it, and no ConfigMap without a widget.
fn end_state_problems(server: &ApiServer) -> Vec<String> {
    let mut problems = Vec::new();
    let widgets: Vec<Widget> = server
        .versions::<Widget>(Some(NS))
        .unwrap_or_default()
        .iter()
        .filter_map(|(k, _)| server.get::<Widget>(Some(NS), k.rsplit('/').next()?).ok()?)
        .collect();
    let mut by_owner: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for w in &widgets {
        by_owner
            .entry(&w.spec.owner)
            .or_default()
            .push(w.name_any());
    }
    for w in &widgets {
        let name = w.name_any();
        let ready = w
            .status
            .as_ref()
            .is_some_and(|s| s.ready && s.observed_generation == w.meta().generation);
        if !ready {
            problems.push(format!(
                "{name} not ready at generation {:?}",
                w.meta().generation
            ));
        }
        let mut peers = by_owner[w.spec.owner.as_str()].clone();
        peers.retain(|p| p != &name);
        peers.sort();
        let want = desired_data(w, peers.join(","));
        match server.get::<ConfigMap>(Some(NS), &config_map_name(&name)) {
            Ok(Some(cm)) if cm.data.as_ref() == Some(&want) => {}
            Ok(Some(cm)) => problems.push(format!(
                "{name}: ConfigMap has {:?}, want {want:?}",
                cm.data
            )),
            _ => problems.push(format!("{name}: no ConfigMap")),
        }
    }
    let live: Vec<String> = widgets
        .iter()
        .map(|w| config_map_name(&w.name_any()))
        .collect();
    for (key, _) in server.versions::<ConfigMap>(Some(NS)).unwrap_or_default() {
        let cm = key.rsplit('/').next().unwrap_or_default().to_owned();
        if !live.contains(&cm) {
            problems.push(format!("orphan ConfigMap {cm}"));
        }
    }
    problems
}

/// Prints the Events recorded in the demo namespace, then one widget's as
/// `kubectl events --for widget/anvil` lists them (field selector `regarding.name`).
async fn print_events(client: &kube::Client) -> Result<(), kube::Error> {
    let api: Api<EventObject> = Api::namespaced(client.clone(), NS);
    let line = |e: &EventObject| {
        let regarding = e.regarding.clone().unwrap_or_default();
        format!(
            "  {:<8} {:<16} {}/{} x{}: {}",
            e.type_.as_deref().unwrap_or_default(),
            e.reason.as_deref().unwrap_or_default(),
            regarding.kind.unwrap_or_default().to_lowercase(),
            regarding.name.unwrap_or_default(),
            e.series.as_ref().map_or(1, |s| s.count),
            e.note.as_deref().unwrap_or_default(),
        )
    };
    let sorted = |mut events: Vec<EventObject>| {
        events.sort_by_key(|e| e.event_time.as_ref().map(|t| t.0));
        events
    };
    let all = sorted(api.list(&ListParams::default()).await?.items);
    println!("\nevents in {NS} (from the server)");
    for e in &all {
        println!("{}", line(e));
    }
    let anvil = sorted(
        api.list(&ListParams::default().fields("regarding.name=anvil"))
            .await?
            .items,
    );
    println!("\nkubectl events --for widget/anvil");
    for e in &anvil {
        println!("{}", line(e));
    }
    Ok(())
}

/// Waits up to 20 s for the expected end state.
async fn settle(server: &ApiServer, what: &str) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let problems = end_state_problems(server);
        if problems.is_empty() {
            println!("  -> {what}");
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("{what}: not reached after 20 s: {problems:#?}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
