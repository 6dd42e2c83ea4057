//! Reflectors run in a task until a condition holds, then stopped.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use tokio_util::sync::CancellationToken;

use super::lister_watchers::{ListResult, Scripted, scripted};
use super::stores::RecordingStore;
use super::waiting::eventually;
use super::watches::{Sender, fake_watch, watch_once};
use crate::listwatch::ListerWatcher;
use crate::reflector::{Reflector, ReflectorError, ReflectorOptions};

/// A reflector over `lw` into a fresh recording store.
pub(crate) fn recording<L: ListerWatcher<Pod>>(
    lw: L,
    options: ReflectorOptions,
) -> (Arc<Reflector<Pod, L>>, Arc<RecordingStore>) {
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(Reflector::new(lw, store.clone(), options));
    (r, store)
}

/// A reflector into a fresh recording store whose lister answers `list` and whose
/// one watch the test drives through the returned sender.
pub(crate) fn driven(
    list: impl Fn(&ListParams) -> ListResult + Send + Sync + 'static,
    options: ReflectorOptions,
) -> (Sender, Arc<Reflector<Pod, Scripted>>, Arc<RecordingStore>) {
    let (tx, stream) = fake_watch();
    let (r, store) = recording(scripted(list, watch_once(stream)), options);
    (tx, r, store)
}

/// Runs `round(r, token)` in a task, stopped by the returned token.
fn spawn_with<L, T, F>(
    r: &Arc<Reflector<Pod, L>>,
    round: impl FnOnce(Arc<Reflector<Pod, L>>, CancellationToken) -> F,
) -> (CancellationToken, tokio::task::JoinHandle<T>)
where
    L: ListerWatcher<Pod> + 'static,
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let cancel = CancellationToken::new();
    (cancel.clone(), tokio::spawn(round(Arc::clone(r), cancel)))
}

/// Runs one `list_and_watch` round of `r` in a task, stopped by the returned token.
pub(crate) fn spawn_list_and_watch<L: ListerWatcher<Pod> + 'static>(
    r: &Arc<Reflector<Pod, L>>,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<(), ReflectorError>>,
) {
    spawn_with(r, |r, c| async move { r.list_and_watch(&c).await })
}

/// Runs `r`'s loop in a task, stopped by the returned token.
pub(crate) fn spawn_run<L: ListerWatcher<Pod> + 'static>(
    r: &Arc<Reflector<Pod, L>>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    spawn_with(r, |r, c| async move { r.run(c).await })
}

/// Waits until `cond` holds, then stops the spawned task and returns its output.
async fn stop_when<T>(
    (cancel, task): (CancellationToken, tokio::task::JoinHandle<T>),
    cond: impl FnMut() -> bool,
) -> T {
    eventually(cond).await;
    cancel.cancel();
    task.await.unwrap()
}

/// Runs one `list_and_watch` round of `r` until `cond` holds, then stops it; the
/// round must end without error.
pub(crate) async fn list_and_watch_until<L: ListerWatcher<Pod> + 'static>(
    r: &Arc<Reflector<Pod, L>>,
    cond: impl FnMut() -> bool,
) {
    stop_when(spawn_list_and_watch(r), cond).await.unwrap();
}

/// Runs `r`'s loop until `cond` holds, then stops it.
pub(crate) async fn run_until<L: ListerWatcher<Pod> + 'static>(
    r: &Arc<Reflector<Pod, L>>,
    cond: impl FnMut() -> bool,
) {
    stop_when(spawn_run(r), cond).await;
}
