//! What the informer's tests share: pods, client-go's `testListener`, and a
//! running informer that the test stops.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::informer::*;
use crate::listwatch::FakeSource;
use crate::object::MaybeTombstone;
pub(super) use crate::reflector::tests::eventually;

pub(super) fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

pub(super) fn labelled(name: &str, key: &str, value: &str) -> Pod {
    let mut p = pod(name);
    p.metadata.labels = Some([(key.to_owned(), value.to_owned())].into());
    p
}

/// Records the names of everything it is told, as client-go's `testListener`.
#[derive(Clone, Default)]
pub(super) struct TestListener {
    pub(super) received: Arc<Mutex<Vec<String>>>,
}

impl TestListener {
    pub(super) fn names(&self) -> BTreeSet<String> {
        self.received.lock().unwrap().iter().cloned().collect()
    }
    pub(super) fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }
    pub(super) fn reset(&self) {
        self.received.lock().unwrap().clear();
    }
    fn push(&self, p: &Pod) {
        self.received
            .lock()
            .unwrap()
            .push(p.metadata.name.clone().unwrap_or_default());
    }
}

impl EventHandler<Pod> for TestListener {
    fn on_add(&self, obj: &Arc<Pod>, _: bool) {
        self.push(obj);
    }
    fn on_update(&self, _: &Arc<Pod>, new: &Arc<Pod>) {
        self.push(new);
    }
    fn on_delete(&self, obj: &MaybeTombstone<Pod>) {
        self.push(obj.object());
    }
}

pub(super) fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// An informer's run in a task, until [`Running::stop`].
pub(super) struct Running {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// Cancels the run and waits for it to end.
    pub(super) async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}

/// Runs `informer` in a task.
pub(super) fn start(informer: &SharedIndexInformer<Pod>) -> Running {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    Running { cancel, task }
}

/// Lets spawned tasks run without moving the paused clock much.
pub(super) async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

/// A source holding a pod for each of `names`, and an informer over it that
/// resyncs every second.
pub(super) fn resyncing_informer(names: &[&str]) -> (FakeSource<Pod>, SharedIndexInformer<Pod>) {
    let source = FakeSource::<Pod>::new();
    for name in names {
        source.add(pod(name));
    }
    let informer = SharedIndexInformer::builder(source.clone())
        .resync(Duration::from_secs(1))
        .build();
    (source, informer)
}

/// An empty source, an informer over it, and a recording listener registered on
/// it.
pub(super) fn listened_informer() -> (
    FakeSource<Pod>,
    SharedIndexInformer<Pod>,
    TestListener,
    Registration,
) {
    let source = FakeSource::<Pod>::new();
    let informer = SharedIndexInformer::new(source.clone());
    let listener = TestListener::default();
    let reg = informer.add_event_handler(listener.clone()).unwrap();
    (source, informer, listener, reg)
}
