//! `#[derive(Reflect)]` end to end on the embedded API server: 200 widgets created
//! through `kube::Api`, watched by `Widget::informer(client)`, and every typed query
//! checked against a model after the initial sync, after updates and after deletes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use reflector::Reflect;
use reflector::informer::{Change, InformerFactory};
use reflector::store::StoreError;
use reflector_testkit::ApiServer;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::support::namespaces::create_namespaces;
use crate::support::patience::PATIENCE;
use crate::support::widget::{Widget, WidgetIndexes, WidgetSpec};

const N: usize = 200;

/// What each widget should look like: (namespace, name) → (owner, tags, parent, app).
type Model = BTreeMap<(String, String), (String, Vec<String>, Option<String>, String)>;

fn initial(i: usize) -> (String, String, String, Vec<String>, Option<String>, String) {
    (
        format!("ns-{}", i % 2),
        format!("w-{i:03}"),
        format!("owner-{}", i % 10),
        vec![format!("tag-{}", i % 10), format!("tag-{}", (i + 1) % 10)],
        i.is_multiple_of(2).then(|| format!("p-{}", i % 5)),
        format!("app-{}", i % 10),
    )
}

fn expected(
    model: &Model,
    pick: impl Fn(&(String, Vec<String>, Option<String>, String)) -> bool,
) -> BTreeSet<(String, String)> {
    model
        .iter()
        .filter(|(_, v)| pick(v))
        .map(|(k, _)| k.clone())
        .collect()
}

/// The (namespace, name) of a query's answer; the query must succeed.
fn got(v: Result<Vec<Arc<Widget>>, StoreError>) -> BTreeSet<(String, String)> {
    v.expect("the index is registered")
        .iter()
        .map(|w| {
            (
                w.metadata.namespace.clone().unwrap_or_default(),
                w.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Every typed query, for every value in use, returns exactly the model's set.
fn assert_queries(q: &impl WidgetIndexes, model: &Model, phase: &str) {
    for v in 0..10 {
        let owner = format!("owner-{v}");
        assert_eq!(
            got(q.by_owner(&owner)),
            expected(model, |m| m.0 == owner),
            "{phase}: {owner}"
        );
        let keys: BTreeSet<(String, String)> = q
            .by_owner_keys(&owner)
            .expect("the index is registered")
            .iter()
            .map(|k| {
                (
                    k.namespace().unwrap_or_default().to_owned(),
                    k.name().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            keys,
            expected(model, |m| m.0 == owner),
            "{phase}: keys of {owner}"
        );
        let tag = format!("tag-{v}");
        assert_eq!(
            got(q.by_tags(&tag)),
            expected(model, |m| m.1.contains(&tag)),
            "{phase}: {tag}"
        );
        let app = format!("app-{v}");
        assert_eq!(
            got(q.by_app(&app)),
            expected(model, |m| m.3 == app),
            "{phase}: {app}"
        );
        let parent = format!("p-{v}");
        assert_eq!(
            got(q.by_parent(&parent)),
            expected(model, |m| m.2.as_deref() == Some(parent.as_str())),
            "{phase}: {parent}"
        );
    }
}

/// Receives `n` events of `kind` (a hang after [`PATIENCE`] fails).
async fn expect_events(rx: &mut mpsc::UnboundedReceiver<&'static str>, kind: &str, n: usize) {
    let got = tokio::time::timeout(PATIENCE, async {
        let mut got = 0;
        while got < n {
            match rx.recv().await {
                Some(k) if k == kind => got += 1,
                Some(_) => {}
                None => break,
            }
        }
        got
    })
    .await
    .expect("events in time");
    assert_eq!(got, n, "{kind} events");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_queries_follow_200_widgets_through_sync_updates_and_deletes() {
    let server = ApiServer::start().await.expect("server");
    server.register::<Widget>();
    let client = server.client();
    create_namespaces(&client, &["ns-0", "ns-1"]).await;
    let mut model = Model::new();
    for i in 0..N {
        let (ns, name, owner, tags, parent, app) = initial(i);
        let api: Api<Widget> = Api::namespaced(client.clone(), &ns);
        let mut w = Widget::new(
            &name,
            WidgetSpec::owned_by(&owner, tags.clone(), parent.clone()),
        );
        w.metadata.labels = Some([("app".to_owned(), app.clone())].into());
        api.create(&PostParams::default(), &w)
            .await
            .expect("create");
        model.insert((ns, name), (owner, tags, parent, app));
    }

    let informer = Widget::informer(client.clone());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let reg = informer
        .add_event_fn(move |ev: Change<Widget>| {
            let kind = match ev {
                Change::Added { .. } => "added",
                Change::Updated { .. } => "updated",
                Change::Deleted(_) => "deleted",
            };
            let _ = tx.send(kind);
        })
        .expect("handler");
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let informer = informer.clone();
        let cancel = cancel.clone();
        async move { informer.run(cancel).await }
    });
    tokio::time::timeout(PATIENCE, informer.wait_synced())
        .await
        .expect("sync in time")
        .expect("not stopped");
    expect_events(&mut rx, "added", N).await;
    // The handler sent its last initial event before returning; the registration
    // counts as synced once it has returned.
    tokio::time::timeout(PATIENCE, reg.wait_synced())
        .await
        .expect("registration synced in time")
        .expect("not stopped");
    assert_queries(&informer, &model, "after sync");
    assert_queries(&informer.lister(), &model, "after sync (lister)");

    // Move the first 50 widgets to other owners, tags, labels and parents.
    for i in 0..50 {
        let (ns, name, ..) = initial(i);
        let owner = format!("owner-{}", (i + 3) % 10);
        let tags = vec![format!("tag-{}", (i + 5) % 10)];
        let parent = (i % 2 == 1).then(|| format!("p-{}", (i + 1) % 5));
        let app = format!("app-{}", (i + 7) % 10);
        let api: Api<Widget> = Api::namespaced(client.clone(), &ns);
        let patch = serde_json::json!({
            "metadata": { "labels": { "app": app } },
            "spec": { "owner": owner, "tags": tags, "parent": parent },
        });
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch");
        model.insert((ns, name), (owner, tags, parent, app));
    }
    expect_events(&mut rx, "updated", 50).await;
    assert_queries(&informer, &model, "after updates");

    // Delete 30 widgets, some of them updated before.
    for i in (30..50).chain(150..160) {
        let (ns, name, ..) = initial(i);
        let api: Api<Widget> = Api::namespaced(client.clone(), &ns);
        api.delete(&name, &DeleteParams::default())
            .await
            .expect("delete");
        model.remove(&(ns, name));
    }
    expect_events(&mut rx, "deleted", 30).await;
    assert_queries(&informer, &model, "after deletes");
    assert_eq!(informer.lister().list().len(), N - 30);

    cancel.cancel();
    run.await.expect("informer task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn factory_reflected_informer_answers_typed_queries() {
    let server = ApiServer::start().await.expect("server");
    server.register::<Widget>();
    create_namespaces(&server.client(), &["ns"]).await;
    let api: Api<Widget> = Api::namespaced(server.client(), "ns");
    for (name, owner) in [("a", "alice"), ("b", "bob"), ("c", "alice")] {
        let w = Widget::new(name, WidgetSpec::owned_by(owner, vec![], None));
        api.create(&PostParams::default(), &w)
            .await
            .expect("create");
    }
    let factory = InformerFactory::new(server.client());
    let widgets = factory.reflected::<Widget>();
    factory.start();
    tokio::time::timeout(PATIENCE, factory.wait_synced())
        .await
        .expect("sync in time")
        .expect("not stopped");
    assert!(widgets.has_synced());
    let mut alices: Vec<String> = widgets
        .by_owner("alice")
        .expect("factory.reflected registers by_owner")
        .iter()
        .filter_map(|w| w.metadata.name.clone())
        .collect();
    alices.sort();
    assert_eq!(alices, ["a", "c"]);
    factory.shutdown().await;
}
