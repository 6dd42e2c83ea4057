//! Informers run in a task the test stops, and client-go's recording
//! `testListener`.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::objects::ns_pod;
use crate::fifo::QueueMode;
use crate::informer::{EventHandler, InformerOptions, Registration, SharedIndexInformer};
use crate::listwatch::FakeSource;
use crate::object::MaybeTombstone;

/// Records the names of everything it is told, as client-go's `testListener`.
#[derive(Clone, Default)]
pub(crate) struct TestListener {
    pub(crate) received: Arc<Mutex<Vec<String>>>,
}

impl TestListener {
    pub(crate) fn names(&self) -> BTreeSet<String> {
        self.received.lock().unwrap().iter().cloned().collect()
    }
    pub(crate) fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }
    pub(crate) fn reset(&self) {
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

/// `names` as a set, to compare with [`TestListener::names`].
pub(crate) fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

/// An informer's run in a task, until [`Running::stop`].
pub(crate) struct Running {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// Cancels the run and waits for it to end.
    pub(crate) async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}

/// Runs `informer` in a task.
pub(crate) fn start(informer: &SharedIndexInformer<Pod>) -> Running {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, c) = (informer.clone(), cancel.clone());
        async move { i.run(c).await }
    });
    Running { cancel, task }
}

/// A source holding a pod for each of `names`, and an informer over it (with
/// `queue`) that resyncs every second.
pub(crate) fn resyncing_informer(
    queue: QueueMode,
    names: &[&str],
) -> (FakeSource<Pod>, SharedIndexInformer<Pod>) {
    let source = FakeSource::<Pod>::new();
    for name in names {
        source.add(ns_pod(name));
    }
    let informer = SharedIndexInformer::with_options(
        source.clone(),
        InformerOptions::default()
            .resync(Duration::from_secs(1))
            .queue(queue),
    );
    (source, informer)
}

/// An empty source, an informer over it (with `queue`), and a recording listener
/// registered on it.
pub(crate) fn listened_informer(
    queue: QueueMode,
) -> (
    FakeSource<Pod>,
    SharedIndexInformer<Pod>,
    TestListener,
    Registration,
) {
    let source = FakeSource::<Pod>::new();
    let informer =
        SharedIndexInformer::with_options(source.clone(), InformerOptions::default().queue(queue));
    let listener = TestListener::default();
    let reg = informer.add_event_handler(listener.clone()).unwrap();
    (source, informer, listener, reg)
}
