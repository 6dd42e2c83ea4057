//! What the reflector's tests share: a scripted lister-watcher (client-go's
//! `ListWatch{}`), a list table answered row by row over N rounds, a driven watch
//! (`watch.NewFake()`), a recording store, and the objects and API errors the
//! scripts answer with.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kube::api::{ListParams, ObjectList, TypeMeta, WatchEvent, WatchParams};
use kube::core::Status;
use kube::core::response::{StatusCause, StatusDetails};
use kube::core::watch::{Bookmark, BookmarkMeta};
use tokio_util::sync::CancellationToken;

use crate::listwatch::{ListWatchError, ListerWatcher, WatchStream};
use crate::object::ObjectKey;
use crate::reflector::{Reflector, ReflectorError, ReflectorOptions};
use crate::store::{Store, StoreError, StoreSink};

/// What a list answers.
pub(crate) type ListResult = Result<ObjectList<Pod>, ListWatchError>;
/// What a watch answers.
pub(crate) type WatchResult = Result<WatchStream<Pod>, ListWatchError>;

type ListFn = Box<
    dyn Fn(&ListParams) -> BoxFuture<'static, Result<ObjectList<Pod>, ListWatchError>>
        + Send
        + Sync,
>;
type WatchFn = Box<
    dyn Fn(&WatchParams, &str) -> BoxFuture<'static, Result<WatchStream<Pod>, ListWatchError>>
        + Send
        + Sync,
>;

/// A lister-watcher whose answers the test scripts, as client-go's `ListWatch{}`.
pub(crate) struct Scripted {
    pub(crate) list: ListFn,
    pub(crate) watch: WatchFn,
}

impl ListerWatcher<Pod> for Scripted {
    fn list(
        &self,
        params: &ListParams,
    ) -> impl Future<Output = Result<ObjectList<Pod>, ListWatchError>> + Send {
        (self.list)(params)
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> impl Future<Output = Result<WatchStream<Pod>, ListWatchError>> + Send {
        (self.watch)(params, resource_version)
    }
}

/// A scripted lister-watcher whose answers are ready at once.
pub(crate) fn scripted<LF, WF>(list: LF, watch: WF) -> Scripted
where
    LF: Fn(&ListParams) -> ListResult + Send + Sync + 'static,
    WF: Fn(&WatchParams, &str) -> WatchResult + Send + Sync + 'static,
{
    Scripted {
        list: Box::new(move |p| futures::future::ready(list(p)).boxed()),
        watch: Box::new(move |p, rv| futures::future::ready(watch(p, rv)).boxed()),
    }
}

/// A lister answering `answer`, and the requests it was sent, each described as
/// a list table's row is (`rv=0 limit=500`).
pub(crate) fn recorded_list(
    answer: impl Fn(&ListParams) -> ListResult + Send + Sync + 'static,
) -> (
    Arc<Mutex<Vec<String>>>,
    impl Fn(&ListParams) -> ListResult + Send + Sync + 'static,
) {
    let asked = recorder();
    let a = asked.clone();
    let list = move |p: &ListParams| {
        a.lock().unwrap().push(describe(p));
        answer(p)
    };
    (asked, list)
}

/// A lister for watch-list tests: the list must not be called.
pub(crate) fn no_list(_: &ListParams) -> Result<ObjectList<Pod>, ListWatchError> {
    Err(api_error(500, "InternalError", "list must not be called"))
}

/// A lister answering one empty list at `rv`, however often asked.
pub(crate) fn empty_list(
    rv: &'static str,
) -> impl Fn(&ListParams) -> ListResult + Send + Sync + 'static {
    move |_| Ok(pod_list(rv, None, vec![]))
}

// ---------- objects ----------

/// A pod without namespace, named `name` at `rv`. Also used by the informer's tests.
pub(crate) fn pod(name: &str, rv: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

/// `pod-0@0` … `pod-{n-1}@{n-1}`.
pub(crate) fn pods(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| pod(&format!("pod-{i}"), &i.to_string()))
        .collect()
}

/// A pod list at `rv`, continued by `cont`. Also used by the informer's tests.
pub(crate) fn pod_list(rv: &str, cont: Option<&str>, items: Vec<Pod>) -> ObjectList<Pod> {
    ObjectList {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "PodList".into(),
        },
        metadata: ListMeta {
            resource_version: Some(rv.into()),
            continue_: cont.map(Into::into),
            ..ListMeta::default()
        },
        items,
    }
}

/// The `(name, resourceVersion)` of each pod, sorted.
pub(crate) fn names_and_rvs<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Vec<(String, String)> {
    let mut got: Vec<(String, String)> = pods
        .into_iter()
        .map(|p| {
            (
                p.metadata.name.clone().unwrap_or_default(),
                p.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect();
    got.sort();
    got
}

/// `[(name, rv)]` as owned strings, sorted, to compare with [`names_and_rvs`].
pub(crate) fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut want: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    want.sort();
    want
}

// ---------- API errors ----------

pub(crate) fn api_error(code: u16, reason: &str, message: &str) -> ListWatchError {
    let mut s = Status::failure(message, reason).with_code(code);
    s.reason = reason.into();
    ListWatchError::Api(Box::new(s))
}

pub(crate) fn expired() -> ListWatchError {
    api_error(
        410,
        "Expired",
        "The resourceVersion for the provided watch is too old.",
    )
}

pub(crate) fn too_many_requests() -> ListWatchError {
    api_error(429, "TooManyRequests", "too many requests")
}

pub(crate) fn internal_error() -> ListWatchError {
    api_error(
        500,
        "InternalError",
        "Internal error occurred: etcdserver: no leader",
    )
}

/// A 504 "too large resource version", told by its cause's reason, its cause's
/// message or (with neither) the status message only.
pub(crate) fn too_large(cause_reason: &str, cause_message: &str, message: &str) -> ListWatchError {
    let mut s = Status::failure(message, "Timeout").with_code(504);
    s.reason = "Timeout".into();
    if !cause_reason.is_empty() || !cause_message.is_empty() {
        s.details = Some(StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: vec![StatusCause {
                reason: cause_reason.into(),
                message: cause_message.into(),
                field: String::new(),
            }],
            retry_after_seconds: 1,
        });
    }
    ListWatchError::Api(Box::new(s))
}

/// The `ERROR` watch event carrying `error`'s status.
pub(crate) fn error_event(error: ListWatchError) -> WatchEvent<Pod> {
    let ListWatchError::Api(status) = error else {
        unreachable!("an API error")
    };
    WatchEvent::Error(status)
}

// ---------- watches ----------

pub(crate) type Sender = mpsc::UnboundedSender<Result<WatchEvent<Pod>, ListWatchError>>;

/// A watch the test drives, as client-go's `watch.NewFake()`; dropping the sender
/// closes it.
pub(crate) fn fake_watch() -> (Sender, WatchStream<Pod>) {
    let (tx, rx) = mpsc::unbounded();
    (tx, rx.boxed())
}

/// A watch that never ends and never sends.
pub(crate) fn pending_watch() -> WatchStream<Pod> {
    futures::stream::pending().boxed()
}

/// A watch that ends at once, as a stopped fake watcher.
pub(crate) fn closed_watch() -> WatchStream<Pod> {
    futures::stream::empty().boxed()
}

/// A fake watch already holding `events`, its sender dropped (the stream ends
/// after them).
pub(crate) fn watch_of(events: impl IntoIterator<Item = WatchEvent<Pod>>) -> WatchStream<Pod> {
    let (tx, stream) = fake_watch();
    send(&tx, events);
    stream
}

/// Sends `events` down a fake watch.
pub(crate) fn send(tx: &Sender, events: impl IntoIterator<Item = WatchEvent<Pod>>) {
    for event in events {
        tx.unbounded_send(Ok(event)).unwrap();
    }
}

/// A watcher that hands out `stream` to the first watch and fails any other.
pub(crate) fn watch_once(
    stream: WatchStream<Pod>,
) -> impl Fn(&WatchParams, &str) -> WatchResult + Send + Sync + 'static {
    let stream = Mutex::new(Some(stream));
    move |_, _| {
        stream
            .lock()
            .unwrap()
            .take()
            .ok_or_else(|| api_error(500, "InternalError", "second watch"))
    }
}

/// A counter of watch calls, and a watcher that answers call `n` (from 0) with
/// `answer(n)`.
pub(crate) fn counted_watch(
    answer: impl Fn(usize) -> WatchResult + Send + Sync + 'static,
) -> (
    Arc<AtomicUsize>,
    impl Fn(&WatchParams, &str) -> WatchResult + Send + Sync + 'static,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    (calls, move |_: &WatchParams, _: &str| {
        answer(c.fetch_add(1, Ordering::SeqCst))
    })
}

/// A watcher that never sends: every watch stays open until the round is stopped.
pub(crate) fn never_send(_: &WatchParams, _: &str) -> Result<WatchStream<Pod>, ListWatchError> {
    Ok(pending_watch())
}

pub(crate) fn bookmark(rv: &str, initial_events_end: bool) -> WatchEvent<Pod> {
    let mut annotations = BTreeMap::new();
    if initial_events_end {
        annotations.insert("k8s.io/initial-events-end".to_owned(), "true".to_owned());
    }
    WatchEvent::Bookmark(Bookmark {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "Pod".into(),
        },
        metadata: BookmarkMeta {
            resource_version: rv.into(),
            annotations,
        },
    })
}

pub(crate) fn added(name: &str, rv: &str) -> WatchEvent<Pod> {
    WatchEvent::Added(pod(name, rv))
}

pub(crate) fn modified(name: &str, rv: &str) -> WatchEvent<Pod> {
    WatchEvent::Modified(pod(name, rv))
}

// ---------- the recording store ----------

/// A store that records every call, as client-go tests inspect their stores.
#[derive(Default)]
pub(crate) struct RecordingStore {
    pub(crate) items: Mutex<BTreeMap<String, Arc<Pod>>>,
    pub(crate) ops: Mutex<Vec<String>>,
    pub(crate) resource_versions: Mutex<Vec<String>>,
    pub(crate) resyncs: AtomicUsize,
    pub(crate) fail_resync: bool,
}

impl RecordingStore {
    /// The stored `(name, resourceVersion)` pairs, sorted.
    pub(crate) fn names_and_rvs(&self) -> Vec<(String, String)> {
        names_and_rvs(self.items.lock().unwrap().values().map(|p| &**p))
    }

    pub(crate) fn len(&self) -> usize {
        self.items.lock().unwrap().len()
    }

    /// Every call so far, as `"add name@rv"`, `"replace N @rv"`, ….
    pub(crate) fn ops(&self) -> Vec<String> {
        self.ops.lock().unwrap().clone()
    }

    fn record(&self, op: &str, p: &Pod) -> String {
        let name = p.metadata.name.clone().unwrap_or_default();
        let rv = p.metadata.resource_version.clone().unwrap_or_default();
        self.ops.lock().unwrap().push(format!("{op} {name}@{rv}"));
        name
    }
}

impl Store<Pod> for RecordingStore {
    fn add(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let name = self.record("add", &obj);
        self.items.lock().unwrap().insert(name, obj);
        Ok(())
    }
    fn update(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let name = self.record("update", &obj);
        self.items.lock().unwrap().insert(name, obj);
        Ok(())
    }
    fn delete(&self, obj: Arc<Pod>) -> Result<(), StoreError> {
        let name = self.record("delete", &obj);
        self.items.lock().unwrap().remove(&name);
        Ok(())
    }
    fn list(&self) -> Vec<Arc<Pod>> {
        self.items.lock().unwrap().values().cloned().collect()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.items
            .lock()
            .unwrap()
            .keys()
            .map(|k| ObjectKey::new(None, k))
            .collect()
    }
    fn get_object(&self, obj: &Pod) -> Result<Option<Arc<Pod>>, StoreError> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        Ok(self.items.lock().unwrap().get(&name).cloned())
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<Pod>> {
        self.items.lock().unwrap().get(key.name()).cloned()
    }
    fn replace(&self, items: Vec<Arc<Pod>>, resource_version: &str) -> Result<(), StoreError> {
        self.ops
            .lock()
            .unwrap()
            .push(format!("replace {} @{resource_version}", items.len()));
        let mut map = self.items.lock().unwrap();
        map.clear();
        for p in items {
            map.insert(p.metadata.name.clone().unwrap_or_default(), p);
        }
        Ok(())
    }
    fn resync(&self) -> Result<(), StoreError> {
        self.resyncs.fetch_add(1, Ordering::SeqCst);
        if self.fail_resync {
            Err(StoreError::Closed)
        } else {
            Ok(())
        }
    }
}

impl StoreSink<Pod> for RecordingStore {
    fn update_resource_version(&self, resource_version: &str) {
        self.resource_versions
            .lock()
            .unwrap()
            .push(resource_version.to_owned());
    }
}

// ---------- running a reflector ----------

/// A reflector over `lw` into a fresh recording store.
pub(crate) fn recording<L: ListerWatcher<Pod>>(
    lw: L,
    options: ReflectorOptions,
) -> (Arc<Reflector<Pod, L>>, Arc<RecordingStore>) {
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(Reflector::new(lw, store.clone(), options));
    (r, store)
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

/// The four adds that follow the first object in client-go's
/// TestReflectorListAndWatch: bar@3, baz@4, qux@5, zoo@6.
pub(crate) fn four_more_adds() -> [WatchEvent<Pod>; 4] {
    [("bar", "3"), ("baz", "4"), ("qux", "5"), ("zoo", "6")].map(|(n, rv)| added(n, rv))
}

pub(crate) fn rv_of(p: &ListParams) -> String {
    p.resource_version.clone().unwrap_or_default()
}

pub(crate) fn recorder() -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(Vec::new()))
}

/// Waits (in paused time, up to 10 virtual minutes) until `cond` holds, yielding
/// to other tasks.
pub(crate) async fn eventually(mut cond: impl FnMut() -> bool) {
    for _ in 0..60_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

/// A watcher that cancels the round as soon as its watch is opened, as the Go
/// tests' `WatchFunc: cancel(); return watch.NewFake()`.
pub(crate) fn cancel_on_watch(
    cancel: &CancellationToken,
) -> impl Fn(&WatchParams, &str) -> WatchResult + Send + Sync + 'static {
    let cancel = Mutex::new(cancel.clone());
    move |_, _| {
        cancel.lock().unwrap().cancel();
        Ok(pending_watch())
    }
}

/// A round runner for tests that call `ListAndWatch` several times, each with a
/// fresh cancellation token that the watch cancels as soon as it is opened.
pub(crate) struct Rounds {
    token: Arc<Mutex<CancellationToken>>,
}

impl Rounds {
    pub(crate) fn new() -> Self {
        Rounds {
            token: Arc::new(Mutex::new(CancellationToken::new())),
        }
    }

    /// The watcher of the rounds: it ends the current round as it opens.
    pub(crate) fn watch(
        &self,
    ) -> impl Fn(&WatchParams, &str) -> WatchResult + Send + Sync + 'static {
        let token = self.token.clone();
        move |_, _| {
            token.lock().unwrap().cancel();
            Ok(pending_watch())
        }
    }

    /// One `list_and_watch` round of `r`.
    pub(crate) async fn run<L: ListerWatcher<Pod>>(
        &self,
        r: &Reflector<Pod, L>,
    ) -> Result<(), ReflectorError> {
        let t = CancellationToken::new();
        *self.token.lock().unwrap() = t.clone();
        r.list_and_watch(&t).await
    }
}

// ---------- the list table ----------

/// One row of a list table: the request the reflector must send, as
/// `"rv=R[ limit=N][ continue=C]"`, and the server's answer to it.
pub(crate) type ListRow = (&'static str, Result<ObjectList<Pod>, ListWatchError>);

/// `rv=R[ limit=N][ continue=C]`: a list request as a table row names it.
pub(crate) fn describe(p: &ListParams) -> String {
    let mut s = format!("rv={}", rv_of(p));
    if let Some(limit) = p.limit {
        s.push_str(&format!(" limit={limit}"));
    }
    if let Some(c) = &p.continue_token {
        s.push_str(&format!(" continue={c}"));
    }
    s
}

/// A reflector whose lister answers a table of list requests row by row, and
/// whose watch ends each round as it opens: client-go's table of list resource
/// versions, run for N rounds.
pub(crate) struct ListTable<S> {
    pub(crate) reflector: Reflector<Pod, Scripted>,
    pub(crate) store: Arc<S>,
    rounds: Rounds,
    /// The request of every row, in order.
    expected: Vec<&'static str>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ListTable<RecordingStore> {
    /// The table over a fresh recording store.
    pub(crate) fn new(options: ReflectorOptions, rows: Vec<ListRow>) -> Self {
        Self::with_store(Arc::new(RecordingStore::default()), options, rows)
    }
}

impl<S: Store<Pod> + 'static> ListTable<S> {
    /// The table over `store`. A request other than the next row's is answered
    /// 400 and shows in [`ListTable::asked`].
    pub(crate) fn with_store(store: Arc<S>, options: ReflectorOptions, rows: Vec<ListRow>) -> Self {
        let expected = rows.iter().map(|(request, _)| *request).collect();
        let rows = Mutex::new(rows.into_iter().collect::<VecDeque<_>>());
        let asked = recorder();
        let rounds = Rounds::new();
        let a = asked.clone();
        let lw = scripted(
            move |p| {
                let request = describe(p);
                a.lock().unwrap().push(request.clone());
                match rows.lock().unwrap().pop_front() {
                    Some((want, answer)) if want == request => answer,
                    Some((want, _)) => Err(api_error(
                        400,
                        "BadRequest",
                        &format!("asked {request}, the table expects {want}"),
                    )),
                    None => Err(api_error(
                        400,
                        "BadRequest",
                        &format!("asked {request} after the table's end"),
                    )),
                }
            },
            rounds.watch(),
        );
        let reflector = Reflector::new(lw, store.clone(), options);
        ListTable {
            reflector,
            store,
            rounds,
            expected,
            asked,
        }
    }

    /// Runs `n` rounds, each of which must end without error, and returns how many
    /// objects the store holds after each.
    pub(crate) async fn run_rounds(&self, n: usize) -> Vec<usize> {
        let mut sizes = Vec::with_capacity(n);
        for _ in 0..n {
            self.rounds.run(&self.reflector).await.unwrap();
            sizes.push(self.store.list().len());
        }
        sizes
    }

    /// Runs as many rounds as `sizes` has, each of which must end without error
    /// and leave the store that many objects, then checks that the reflector sent
    /// every row's request, in order, and nothing else.
    pub(crate) async fn assert_rounds(&self, sizes: impl AsRef<[usize]>) {
        let sizes = sizes.as_ref();
        assert_eq!(self.run_rounds(sizes.len()).await, sizes, "store sizes");
        assert_eq!(*self.asked.lock().unwrap(), self.expected, "list requests");
    }
}

/// The cached `Arc` of every key of `indexer`, by name.
pub(crate) fn cached(indexer: &crate::store::Indexer<Pod>) -> BTreeMap<String, Arc<Pod>> {
    indexer
        .list()
        .into_iter()
        .map(|p| (p.metadata.name.clone().unwrap(), p))
        .collect()
}
