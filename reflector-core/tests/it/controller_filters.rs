//! Event filters (controller-runtime's predicates) on a controller's primary and on
//! its owned children: which changes are reconciled, and that deletions (tombstones
//! included) and a relist's new objects always are. Against in-memory sources;
//! tokio's paused clock, so "no reconcile" is checked after every task went idle.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use reflector_core::controller::{Action, Controller, EventFilter, Request};
use reflector_core::informer::SharedIndexInformer;
use reflector_core::listwatch::FakeSource;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What a reconcile saw: the name, and the generation (`None`: deleted).
type Seen = (String, Option<i64>);

fn deployment(name: &str, generation: i64) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(format!("uid-{name}")),
            generation: Some(generation),
            ..ObjectMeta::default()
        },
        ..Deployment::default()
    }
}

/// A ConfigMap owned (as controller) by the deployment `owner`.
fn child(name: &str, owner: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: owner.into(),
                uid: format!("uid-{owner}"),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// Runs `controller`, telling `seen` of every reconcile; stopped by the token.
fn run(
    controller: Controller<Deployment>,
) -> (
    mpsc::UnboundedReceiver<Seen>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let (tx, seen) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let task = tokio::spawn(
        controller
            .graceful_shutdown_on(stop.clone().cancelled_owned())
            .run(
                |req: Request<Deployment>, tx: Arc<mpsc::UnboundedSender<Seen>>| async move {
                    let generation = req.object.as_ref().and_then(|d| d.metadata.generation);
                    let _ = tx.send((req.key.name().to_owned(), generation));
                    Ok::<_, std::convert::Infallible>(Action::done())
                },
                Arc::new(tx),
            ),
    );
    let task = tokio::spawn(async move { task.await.unwrap().unwrap() });
    (seen, stop, task)
}

/// Nothing more was reconciled once every task went idle.
async fn nothing_more(seen: &mut mpsc::UnboundedReceiver<Seen>, after: &str) {
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(seen.try_recv().ok(), None, "reconciled after {after}");
}

fn seen(name: &str, generation: Option<i64>) -> Option<Seen> {
    Some((name.to_owned(), generation))
}

/// Under the generation filter, a status-only write (the controller's own, usually)
/// is not reconciled; a spec change is; a delete is, and so are a delete and an add
/// that only a relist finds.
#[tokio::test(start_paused = true)]
async fn manager_generation_filter_skips_status_only_writes_never_deletes_or_relists() {
    let source = FakeSource::<Deployment>::new();
    source.add(deployment("a", 1));
    source.add(deployment("b", 1));
    let controller = Controller::new(SharedIndexInformer::new(source.clone()))
        .filter(EventFilter::generation_changed());
    let (mut reconciled, stop, task) = run(controller);
    let mut initial = vec![reconciled.recv().await, reconciled.recv().await];
    initial.sort();
    assert_eq!(initial, [seen("a", Some(1)), seen("b", Some(1))]);

    let mut status_only = deployment("a", 1);
    status_only.status = Some(DeploymentStatus {
        observed_generation: Some(1),
        ..DeploymentStatus::default()
    });
    source.modify(status_only);
    nothing_more(&mut reconciled, "a status-only write").await;

    source.modify(deployment("a", 2));
    assert_eq!(reconciled.recv().await, seen("a", Some(2)), "a spec change");

    source.delete(deployment("a", 2));
    assert_eq!(reconciled.recv().await, seen("a", None), "a delete");

    // A delete and an add the watch misses: the relist's tombstone and add pass.
    source.delete_drop_watch(deployment("b", 1));
    source.add_drop_watch(deployment("c", 1));
    source.compact_history();
    source.break_watches();
    let mut relisted = vec![reconciled.recv().await, reconciled.recv().await];
    relisted.sort();
    assert_eq!(relisted, [seen("b", None), seen("c", Some(1))]);
    nothing_more(&mut reconciled, "the relist").await;
    stop.cancel();
    task.await.unwrap();
}

/// Without a filter, the same status-only write is reconciled (what the filter is for).
#[tokio::test(start_paused = true)]
async fn manager_without_a_filter_reconciles_a_status_only_write() {
    let source = FakeSource::<Deployment>::new();
    source.add(deployment("a", 1));
    let (mut reconciled, stop, task) =
        run(Controller::new(SharedIndexInformer::new(source.clone())));
    assert_eq!(reconciled.recv().await, seen("a", Some(1)));
    let mut status_only = deployment("a", 1);
    status_only.status = Some(DeploymentStatus::default());
    source.modify(status_only);
    assert_eq!(reconciled.recv().await, seen("a", Some(1)));
    stop.cancel();
    task.await.unwrap();
}

/// A filter on owned children: a child's data change is not reconciled, a change
/// of its labels is, its deletion is; the primary's own changes are unfiltered.
#[tokio::test(start_paused = true)]
async fn manager_filter_on_owned_children() {
    let deployments = FakeSource::<Deployment>::new();
    deployments.add(deployment("a", 1));
    let children = FakeSource::<ConfigMap>::new();
    children.add(child("a-conf", "a"));
    let controller = Controller::new(SharedIndexInformer::new(deployments.clone())).owns_filtered(
        SharedIndexInformer::new(children.clone()),
        EventFilter::labels_changed(),
    );
    let (mut reconciled, stop, task) = run(controller);
    assert_eq!(reconciled.recv().await, seen("a", Some(1)));
    nothing_more(&mut reconciled, "the initial lists").await;

    let mut data = child("a-conf", "a");
    data.data = Some([("k".to_owned(), "v".to_owned())].into());
    children.modify(data.clone());
    nothing_more(&mut reconciled, "a child's data change").await;

    data.metadata.labels = Some([("tier".to_owned(), "web".to_owned())].into());
    children.modify(data.clone());
    assert_eq!(
        reconciled.recv().await,
        seen("a", Some(1)),
        "a label change"
    );

    children.delete(data);
    assert_eq!(
        reconciled.recv().await,
        seen("a", Some(1)),
        "a child's delete"
    );

    deployments.modify(deployment("a", 1)); // unfiltered primary: a resourceVersion bump
    assert_eq!(reconciled.recv().await, seen("a", Some(1)));
    stop.cancel();
    task.await.unwrap();
}

/// Filters combine: `matching` keeps one class of objects out of adds and updates,
/// `and` requires both, `or` either; a second `filter` call narrows the first.
#[tokio::test(start_paused = true)]
async fn manager_filters_combine() {
    let managed = |d: &Deployment| {
        d.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("managed"))
    };
    let label = |mut d: Deployment| {
        d.metadata.labels = Some([("managed".to_owned(), "yes".to_owned())].into());
        d
    };
    let both = EventFilter::matching(managed).and(EventFilter::generation_changed());
    assert!(!both.passes_add(&deployment("x", 1)));
    assert!(both.passes_add(&label(deployment("x", 1))));
    assert!(!both.passes_update(&label(deployment("x", 1)), &label(deployment("x", 1))));
    assert!(both.passes_update(&label(deployment("x", 1)), &label(deployment("x", 2))));
    let either = EventFilter::<Deployment>::labels_changed().or(EventFilter::generation_changed());
    assert!(either.passes_update(&deployment("x", 1), &deployment("x", 2)));
    assert!(either.passes_update(&deployment("x", 1), &label(deployment("x", 1))));
    assert!(!either.passes_update(&deployment("x", 1), &deployment("x", 1)));

    let source = FakeSource::<Deployment>::new();
    source.add(deployment("unmanaged", 1));
    source.add(label(deployment("managed", 1)));
    let controller = Controller::new(SharedIndexInformer::new(source.clone()))
        .filter(EventFilter::matching(managed))
        .filter(EventFilter::generation_changed());
    let (mut reconciled, stop, task) = run(controller);
    assert_eq!(reconciled.recv().await, seen("managed", Some(1)));
    nothing_more(&mut reconciled, "the initial list").await;
    source.modify(deployment("unmanaged", 2));
    source.modify(label(deployment("managed", 1)));
    nothing_more(&mut reconciled, "filtered updates").await;
    source.modify(label(deployment("managed", 2)));
    assert_eq!(reconciled.recv().await, seen("managed", Some(2)));
    stop.cancel();
    task.await.unwrap();
}
