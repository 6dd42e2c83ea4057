//! Ports of client-go's reflector_test.go and reflector_watchlist_test.go, by name,
//! against scripted lister-watchers. Time is tokio's paused clock throughout.

use std::collections::BTreeMap;
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
use kube::core::watch::{Bookmark, BookmarkMeta};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::backoff::BackoffConfig;
use crate::listwatch::{ListWatchError, ListerWatcher, WatchStream};
use crate::object::ObjectKey;
use crate::store::{Store, StoreError, StoreSink};

// ---------- scaffolding ----------

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
struct Scripted {
    list: ListFn,
    watch: WatchFn,
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

fn scripted<LF, WF>(list: LF, watch: WF) -> Scripted
where
    LF: Fn(&ListParams) -> Result<ObjectList<Pod>, ListWatchError> + Send + Sync + 'static,
    WF: Fn(&WatchParams, &str) -> Result<WatchStream<Pod>, ListWatchError> + Send + Sync + 'static,
{
    Scripted {
        list: Box::new(move |p| futures::future::ready(list(p)).boxed()),
        watch: Box::new(move |p, rv| futures::future::ready(watch(p, rv)).boxed()),
    }
}

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

fn pods(n: usize) -> Vec<Pod> {
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

fn api_error(code: u16, reason: &str, message: &str) -> ListWatchError {
    let mut s = Status::failure(message, reason).with_code(code);
    s.reason = reason.into();
    ListWatchError::Api(Box::new(s))
}

fn expired() -> ListWatchError {
    api_error(
        410,
        "Expired",
        "The resourceVersion for the provided watch is too old.",
    )
}

fn too_many_requests() -> ListWatchError {
    api_error(429, "TooManyRequests", "too many requests")
}

fn internal_error() -> ListWatchError {
    api_error(
        500,
        "InternalError",
        "Internal error occurred: etcdserver: no leader",
    )
}

type Sender = mpsc::UnboundedSender<Result<WatchEvent<Pod>, ListWatchError>>;

/// A watch the test drives, as client-go's `watch.NewFake()`; dropping the sender
/// closes it.
fn fake_watch() -> (Sender, WatchStream<Pod>) {
    let (tx, rx) = mpsc::unbounded();
    (tx, rx.boxed())
}

/// A watch that never ends and never sends.
fn pending_watch() -> WatchStream<Pod> {
    futures::stream::pending().boxed()
}

fn bookmark(rv: &str, initial_events_end: bool) -> WatchEvent<Pod> {
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

/// A store that records every call, as client-go tests inspect their stores.
#[derive(Default)]
struct RecordingStore {
    items: Mutex<BTreeMap<String, Arc<Pod>>>,
    ops: Mutex<Vec<String>>,
    resource_versions: Mutex<Vec<String>>,
    resyncs: AtomicUsize,
    fail_resync: bool,
}

impl RecordingStore {
    fn names_and_rvs(&self) -> Vec<(String, String)> {
        self.items
            .lock()
            .unwrap()
            .values()
            .map(|p| {
                (
                    p.metadata.name.clone().unwrap_or_default(),
                    p.metadata.resource_version.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    fn len(&self) -> usize {
        self.items.lock().unwrap().len()
    }

    fn ops(&self) -> Vec<String> {
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
    fn get(&self, obj: &Pod) -> Result<Option<Arc<Pod>>, StoreError> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        Ok(self.items.lock().unwrap().get(&name).cloned())
    }
    fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<Pod>> {
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

/// Runs one `list_and_watch` round of `r` in a task, stopped by the returned token.
fn spawn_list_and_watch<L: ListerWatcher<Pod> + 'static>(
    r: &Arc<Reflector<Pod, L>>,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<(), ReflectorError>>,
) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (Arc::clone(r), cancel.clone());
        async move { r.list_and_watch(&c).await }
    });
    (cancel, task)
}

/// Runs `r`'s loop in a task, stopped by the returned token.
fn spawn_run<L: ListerWatcher<Pod> + 'static>(
    r: &Arc<Reflector<Pod, L>>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, c) = (Arc::clone(r), cancel.clone());
        async move { r.run(c).await }
    });
    (cancel, task)
}

fn rv_of(p: &ListParams) -> String {
    p.resource_version.clone().unwrap_or_default()
}

fn recorder() -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(Vec::new()))
}

fn no_jitter() -> BackoffConfig {
    BackoffConfig::default().jitter(0.0)
}

/// Waits (in paused time, up to 10 virtual minutes) until `cond` holds, yielding
/// to other tasks.
async fn eventually(mut cond: impl FnMut() -> bool) {
    for _ in 0..60_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

// ---------- reflector_test.go ----------

/// TestReflectorListAndWatch ("UseWatchList disabled"): list at "0" with limit 500,
/// then watch from the list's resource version with bookmarks; every event lands.
#[tokio::test(start_paused = true)]
async fn reflector_list_and_watch() {
    let lists = recorder();
    let watches = Arc::new(Mutex::new(Vec::<(String, bool, Option<u32>)>::new()));
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let (l, w) = (lists.clone(), watches.clone());
    let lw = scripted(
        move |p| {
            l.lock()
                .unwrap()
                .push(format!("rv={} limit={:?}", rv_of(p), p.limit));
            Ok(pod_list("1", None, vec![pod("foo", "1")]))
        },
        move |p, rv| {
            w.lock()
                .unwrap()
                .push((rv.to_owned(), p.bookmarks, p.timeout));
            stream
                .lock()
                .unwrap()
                .take()
                .ok_or_else(|| api_error(500, "InternalError", "watch called twice"))
        },
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(Reflector::new(
        lw,
        store.clone(),
        ReflectorOptions::default(),
    ));
    let (cancel, task) = spawn_list_and_watch(&r);
    tx.unbounded_send(Ok(WatchEvent::Modified(pod("foo", "2"))))
        .unwrap();
    for (name, rv) in [("bar", "3"), ("baz", "4"), ("qux", "5"), ("zoo", "6")] {
        tx.unbounded_send(Ok(WatchEvent::Added(pod(name, rv))))
            .unwrap();
    }
    eventually(|| store.len() == 5 && r.last_sync_resource_version() == "6").await;
    cancel.cancel();
    task.await.unwrap().unwrap();

    assert_eq!(*lists.lock().unwrap(), ["rv=0 limit=Some(500)"]);
    let watches = watches.lock().unwrap();
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].0, "1", "watch from the list's resource version");
    assert!(watches[0].1, "bookmarks requested");
    let mut got = store.names_and_rvs();
    got.sort();
    let mut want: Vec<(String, String)> = [
        ("foo", "2"),
        ("bar", "3"),
        ("baz", "4"),
        ("qux", "5"),
        ("zoo", "6"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(
        store.ops(),
        [
            "replace 1 @1",
            "update foo@2",
            "add bar@3",
            "add baz@4",
            "add qux@5",
            "add zoo@6"
        ]
    );
}

/// Runs `list_and_watch` with a watch that cancels the round as soon as it is
/// opened, as the Go tests' `WatchFunc: cancel(); return watch.NewFake()`.
fn cancel_on_watch(
    cancel: &CancellationToken,
) -> impl Fn(&WatchParams, &str) -> Result<WatchStream<Pod>, ListWatchError> + Send + Sync + 'static
{
    let cancel = Mutex::new(cancel.clone());
    move |_, _| {
        cancel.lock().unwrap().cancel();
        Ok(pending_watch())
    }
}

/// A round runner for tests that call `ListAndWatch` several times, each with a
/// fresh cancellation token.
struct Rounds {
    token: Arc<Mutex<CancellationToken>>,
}

impl Rounds {
    fn new() -> Self {
        Rounds {
            token: Arc::new(Mutex::new(CancellationToken::new())),
        }
    }
    fn watch(
        &self,
    ) -> impl Fn(&WatchParams, &str) -> Result<WatchStream<Pod>, ListWatchError> + Send + Sync + 'static
    {
        let token = self.token.clone();
        move |_, _| {
            token.lock().unwrap().cancel();
            Ok(pending_watch())
        }
    }
    async fn run<L: ListerWatcher<Pod>>(
        &self,
        r: &Reflector<Pod, L>,
    ) -> Result<(), ReflectorError> {
        let t = CancellationToken::new();
        *self.token.lock().unwrap() = t.clone();
        r.list_and_watch(&t).await
    }
}

/// TestReflectorResyncWithResourceVersion: the relist asks for the last resource
/// version seen: list RVs ["0", "10"].
#[tokio::test(start_paused = true)]
async fn reflector_resync_with_resource_version() {
    let rvs = recorder();
    let rounds = Rounds::new();
    let l = rvs.clone();
    let lw = scripted(
        move |p| {
            l.lock().unwrap().push(rv_of(p));
            let all = pods(8);
            match rv_of(p).as_str() {
                "0" => Ok(pod_list("10", None, all[0..4].to_vec())),
                "10" => Ok(pod_list("11", None, all[0..8].to_vec())),
                other => Err(api_error(
                    400,
                    "BadRequest",
                    &format!("unexpected rv {other}"),
                )),
            }
        },
        rounds.watch(),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Reflector::new(lw, store.clone(), ReflectorOptions::default());
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(*rvs.lock().unwrap(), ["0", "10"]);
}

/// TestReflectorExpiredExactResourceVersion: a 410 on the exact-RV relist is
/// retried at once from "": list RVs ["0", "10", ""].
#[tokio::test(start_paused = true)]
async fn reflector_expired_exact_resource_version() {
    let rvs = recorder();
    let rounds = Rounds::new();
    let l = rvs.clone();
    let lw = scripted(
        move |p| {
            l.lock().unwrap().push(rv_of(p));
            let all = pods(8);
            match rv_of(p).as_str() {
                "0" => Ok(pod_list("10", None, all[0..4].to_vec())),
                "10" => Err(expired()),
                "" => Ok(pod_list("11", None, all[0..8].to_vec())),
                other => Err(api_error(
                    400,
                    "BadRequest",
                    &format!("unexpected rv {other}"),
                )),
            }
        },
        rounds.watch(),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Reflector::new(lw, store.clone(), ReflectorOptions::default());
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(*rvs.lock().unwrap(), ["0", "10", ""]);
}

/// TestReflectorFullListIfExpired: an expired continue token falls back to one
/// unpaginated list at the original RV: list RVs ["0", "10", "", "10"].
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_expired() {
    let rvs = recorder();
    let rounds = Rounds::new();
    let l = rvs.clone();
    let lw = scripted(
        move |p| {
            l.lock().unwrap().push(rv_of(p));
            let all = pods(8);
            let cont = p.continue_token.clone().unwrap_or_default();
            match (rv_of(p).as_str(), cont.as_str(), p.limit) {
                ("0", "", Some(4)) => Ok(pod_list("10", None, all[0..4].to_vec())),
                ("10", "", Some(4)) => Ok(pod_list("11", Some("C1"), all[0..4].to_vec())),
                ("", "C1", Some(4)) => Err(expired()),
                ("10", "", None) => Ok(pod_list("11", None, all[0..8].to_vec())),
                other => Err(api_error(
                    400,
                    "BadRequest",
                    &format!("unexpected {other:?}"),
                )),
            }
        },
        rounds.watch(),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Reflector::new(lw, store.clone(), ReflectorOptions::default().page_size(4));
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(*rvs.lock().unwrap(), ["0", "10", "", "10"]);
}

/// TestReflectorFullListIfTooLarge: each form of "too large resource version"
/// (cause, cause message, status message) relists from "":
/// ["0", "20", "", "30", "", "40", ""].
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_too_large() {
    let rvs = recorder();
    let rounds = Rounds::new();
    let l = rvs.clone();
    let version = Arc::new(AtomicUsize::new(30));
    let lw = scripted(
        move |p| {
            l.lock().unwrap().push(rv_of(p));
            let too_large = |cause_reason: &str, cause_message: &str, message: &str| {
                let mut s = Status::failure(message, "Timeout").with_code(504);
                s.reason = "Timeout".into();
                if !cause_reason.is_empty() || !cause_message.is_empty() {
                    s.details = Some(kube::core::response::StatusDetails {
                        name: String::new(),
                        group: String::new(),
                        kind: String::new(),
                        uid: String::new(),
                        causes: vec![kube::core::response::StatusCause {
                            reason: cause_reason.into(),
                            message: cause_message.into(),
                            field: String::new(),
                        }],
                        retry_after_seconds: 1,
                    });
                }
                ListWatchError::Api(Box::new(s))
            };
            match rv_of(p).as_str() {
                "0" => Ok(pod_list("20", None, vec![])),
                "20" => Err(too_large(
                    "ResourceVersionTooLarge",
                    "",
                    "too large resource version",
                )),
                "30" => Err(too_large(
                    "",
                    "Too large resource version",
                    "too large resource version",
                )),
                "40" => Err(too_large("", "", "Too large resource version")),
                "" => {
                    let v = version.fetch_add(10, Ordering::SeqCst);
                    Ok(pod_list(&v.to_string(), None, vec![]))
                }
                other => Err(api_error(
                    400,
                    "BadRequest",
                    &format!("unexpected rv {other}"),
                )),
            }
        },
        rounds.watch(),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Reflector::new(lw, store.clone(), ReflectorOptions::default());
    for _ in 0..4 {
        rounds.run(&r).await.unwrap();
    }
    assert_eq!(*rvs.lock().unwrap(), ["0", "20", "", "30", "", "40", ""]);
    assert_eq!(r.stats().errors_too_large_resource_version, 3);
}

fn paged_lister(
    expect_limit: Option<u32>,
    seen: Arc<Mutex<Vec<String>>>,
) -> impl Fn(&ListParams) -> Result<ObjectList<Pod>, ListWatchError> + Send + Sync + 'static {
    move |p| {
        seen.lock().unwrap().push(format!(
            "rv={} limit={:?} continue={:?}",
            rv_of(p),
            p.limit,
            p.continue_token
        ));
        if p.limit != expect_limit {
            return Err(api_error(
                400,
                "BadRequest",
                &format!("limit {:?}", p.limit),
            ));
        }
        let all = pods(10);
        match p.continue_token.as_deref() {
            None => Ok(pod_list("10", Some("C1"), all[0..4].to_vec())),
            Some("C1") => Ok(pod_list("10", Some("C2"), all[4..8].to_vec())),
            Some("C2") => Ok(pod_list("10", None, all[8..10].to_vec())),
            Some(other) => Err(api_error(400, "BadRequest", &format!("continue {other}"))),
        }
    }
}

/// TestReflectorWatchListPageSize: an explicit page size is used even at an exact
/// RV, and the pages are followed by their continue tokens.
#[tokio::test(start_paused = true)]
async fn reflector_watch_list_page_size() {
    let seen = recorder();
    let cancel = CancellationToken::new();
    let lw = scripted(
        paged_lister(Some(4), seen.clone()),
        cancel_on_watch(&cancel),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Reflector::new(lw, store.clone(), ReflectorOptions::default().page_size(4));
    r.set_last_sync_resource_version("10");
    r.list_and_watch(&cancel).await.unwrap();
    assert_eq!(store.len(), 10);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "rv=10 limit=Some(4) continue=None",
            "rv= limit=Some(4) continue=Some(\"C1\")",
            "rv= limit=Some(4) continue=Some(\"C2\")"
        ]
    );
}

/// TestReflectorNotPaginatingNotConsistentReads: relisting at an exact RV asks for
/// no limit, so the server can answer from its watch cache.
#[tokio::test(start_paused = true)]
async fn reflector_not_paginating_not_consistent_reads() {
    let seen = recorder();
    let cancel = CancellationToken::new();
    let s = seen.clone();
    let lw = scripted(
        move |p| {
            s.lock()
                .unwrap()
                .push(format!("rv={} limit={:?}", rv_of(p), p.limit));
            Ok(pod_list("10", None, pods(10)))
        },
        cancel_on_watch(&cancel),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Reflector::new(lw, store.clone(), ReflectorOptions::default());
    r.set_last_sync_resource_version("10");
    r.list_and_watch(&cancel).await.unwrap();
    assert_eq!(store.len(), 10);
    assert_eq!(*seen.lock().unwrap(), ["rv=10 limit=None"]);
}

/// TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled: once the first
/// "0" list came back paginated, relists at an exact RV keep a limit of 500.
#[tokio::test(start_paused = true)]
async fn reflector_paginating_non_consistent_reads_if_watch_cache_disabled() {
    let seen = recorder();
    let rounds = Rounds::new();
    let lw = scripted(paged_lister(Some(500), seen.clone()), rounds.watch());
    let store = Arc::new(RecordingStore::default());
    let r = Reflector::new(lw, store.clone(), ReflectorOptions::default());
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 10);
    rounds.run(&r).await.unwrap();
    assert_eq!(store.len(), 10);
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0], "rv=0 limit=Some(500) continue=None");
    assert_eq!(seen[3], "rv=10 limit=Some(500) continue=None", "{seen:?}");
}

/// TestNoRelistOnTooManyRequests: 429s when starting the watch back off and watch
/// again without relisting: 1 list, 5 watches.
#[tokio::test(start_paused = true)]
async fn no_relist_on_too_many_requests() {
    let (lists, watches) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (l, w) = (lists.clone(), watches.clone());
    let lw = scripted(
        move |_| {
            l.fetch_add(1, Ordering::SeqCst);
            Ok(pod_list("1", None, vec![]))
        },
        move |_, _| {
            if w.fetch_add(1, Ordering::SeqCst) + 1 < 5 {
                Err(too_many_requests())
            } else {
                // A stopped fake watcher: closes at once.
                Ok(futures::stream::empty().boxed())
            }
        },
    );
    let r = Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorOptions::default(),
    );
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(lists.load(Ordering::SeqCst), 1);
    assert_eq!(watches.load(Ordering::SeqCst), 5);
    assert_eq!(r.stats().errors_too_many_requests, 4);
}

/// TestBackoffOnTooManyRequests: a 429 when starting a watch and a 429 ERROR event
/// each back off once (2 backoff delays), with no relist.
#[tokio::test(start_paused = true)]
async fn backoff_on_too_many_requests() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let lw = scripted(
        |_| Ok(pod_list("1", None, vec![])),
        move |_, _| match c.fetch_add(1, Ordering::SeqCst) {
            0 => Err(too_many_requests()),
            1 => {
                let (tx, stream) = fake_watch();
                let ListWatchError::Api(status) = too_many_requests() else {
                    unreachable!()
                };
                tx.unbounded_send(Ok(WatchEvent::Error(status))).unwrap();
                Ok(stream)
            }
            _ => Ok(futures::stream::empty().boxed()),
        },
    );
    let backoff = BackoffConfig::default()
        .jitter(0.0)
        .initial(Duration::from_secs(1));
    let r = Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorOptions::default().backoff(backoff),
    );
    let start = Instant::now();
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(3),
        "two backoffs: 1 s then 2 s"
    );
    assert_eq!(r.stats().lists, 1);
}

/// TestRetryInternalError: 500 ERROR events are retried without relisting until
/// the deadline: 0 retries when off, 31 over 30 s at one error per second, and 40
/// when a quiet minute in the middle resets the run.
#[tokio::test(start_paused = true)]
async fn retry_internal_error() {
    for (max, rewind_at, want_retries) in [
        (Duration::ZERO, 0, 0),
        (Duration::from_secs(30), 0, 31),
        (Duration::from_secs(30), 10, 40),
    ] {
        let counter = Arc::new(AtomicUsize::new(0));
        let c = counter.clone();
        let lw = Scripted {
            list: Box::new(|_| futures::future::ready(Ok(pod_list("1", None, vec![]))).boxed()),
            watch: Box::new(move |_, _| {
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                async move {
                    if n == rewind_at {
                        tokio::time::advance(Duration::from_secs(60)).await;
                    }
                    tokio::time::advance(Duration::from_secs(1)).await;
                    let (tx, stream) = fake_watch();
                    let ListWatchError::Api(status) = internal_error() else {
                        unreachable!()
                    };
                    tx.unbounded_send(Ok(WatchEvent::Error(status))).unwrap();
                    Ok(stream)
                }
                .boxed()
            }),
        };
        let r = Reflector::new(
            lw,
            Arc::new(RecordingStore::default()),
            ReflectorOptions::default().max_internal_error_retry_duration(max),
        );
        r.list_and_watch(&CancellationToken::new()).await.unwrap();
        assert_eq!(
            counter.load(Ordering::SeqCst) - 1,
            want_retries,
            "max {max:?} rewind at {rewind_at}"
        );
    }
}

/// TestWatchTimeout: the watch timeout is drawn from [min, 2×min]; a minimum below
/// 5 min is not honoured.
#[tokio::test(start_paused = true)]
async fn watch_timeout() {
    for (min, want_min) in [
        (None, 300),
        (Some(Duration::from_secs(1)), 300),
        (Some(Duration::from_secs(1800)), 1800),
    ] {
        for _ in 0..20 {
            let cancel = CancellationToken::new();
            let got = Arc::new(Mutex::new(None));
            let (g, c) = (got.clone(), cancel.clone());
            let lw = scripted(
                |_| Ok(pod_list("10", None, vec![])),
                move |p, _| {
                    *g.lock().unwrap() = p.timeout;
                    c.cancel();
                    Ok(pending_watch())
                },
            );
            let mut opts = ReflectorOptions::default();
            if let Some(m) = min {
                opts = opts.min_watch_timeout(m);
            }
            let r = Reflector::new(lw, Arc::new(RecordingStore::default()), opts);
            r.list_and_watch(&cancel).await.unwrap();
            let t = got.lock().unwrap().expect("timeout set");
            assert!(
                (want_min..=2 * want_min).contains(&t),
                "timeout {t} outside [{want_min}, {}]",
                2 * want_min
            );
        }
    }
}

/// TestReflectorResourceVersionUpdate: every event, bookmarks included, moves the
/// resource version and tells the store: ["10", "20", "30", "40"].
#[tokio::test(start_paused = true)]
async fn reflector_resource_version_update() {
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let lw = scripted(
        |_| Ok(pod_list("10", None, vec![])),
        move |_, _| Ok(stream.lock().unwrap().take().unwrap_or_else(pending_watch)),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Reflector::with_sink(lw, store.clone(), ReflectorOptions::default());
    tx.unbounded_send(Ok(WatchEvent::Added(pod("p", "10"))))
        .unwrap();
    tx.unbounded_send(Ok(WatchEvent::Modified(pod("p", "20"))))
        .unwrap();
    tx.unbounded_send(Ok(bookmark("30", false))).unwrap();
    tx.unbounded_send(Ok(WatchEvent::Deleted(pod("p", "40"))))
        .unwrap();
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let s = store.clone();
    tokio::spawn(async move {
        eventually(|| s.resource_versions.lock().unwrap().len() == 4).await;
        c.cancel();
    });
    r.list_and_watch(&cancel).await.unwrap();
    assert_eq!(
        *store.resource_versions.lock().unwrap(),
        ["10", "20", "30", "40"]
    );
    assert_eq!(r.last_sync_resource_version(), "40");
}

/// A BOOKMARK moves the resource version and touches nothing in the store.
#[tokio::test(start_paused = true)]
async fn bookmark_moves_resource_version_only() {
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let lw = scripted(
        |_| Ok(pod_list("5", None, vec![pod("a", "5")])),
        move |_, _| Ok(stream.lock().unwrap().take().unwrap_or_else(pending_watch)),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(Reflector::new(
        lw,
        store.clone(),
        ReflectorOptions::default(),
    ));
    let (cancel, task) = spawn_list_and_watch(&r);
    tx.unbounded_send(Ok(bookmark("99", false))).unwrap();
    eventually(|| r.last_sync_resource_version() == "99").await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(
        store.ops(),
        ["replace 1 @5"],
        "the bookmark touched nothing"
    );
    assert_eq!(r.stats().bookmarks, 1);
}

/// TestCloseWatchChannelOnError: an ERROR event ends the watch, which is dropped
/// (its channel closed).
#[tokio::test(start_paused = true)]
async fn close_watch_channel_on_error() {
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let lw = scripted(
        |_| Ok(pod_list("1", None, vec![])),
        move |_, _| Ok(stream.lock().unwrap().take().unwrap_or_else(pending_watch)),
    );
    let r = Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorOptions::default(),
    );
    let ListWatchError::Api(status) = expired() else {
        unreachable!()
    };
    tx.unbounded_send(Ok(WatchEvent::Error(status))).unwrap();
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert!(tx.is_closed(), "the watch was dropped");
    assert_eq!(r.stats().errors_expired, 1);
}

/// What a watch handler needs, without resync and without stopping at the
/// initial-events-end bookmark.
fn plain_watch_context<'a>(
    store: &'a RecordingStore,
    stats: &'a StatsCounters,
    cancel: &'a CancellationToken,
) -> WatchContext<'a, Pod> {
    WatchContext {
        name: "test",
        store,
        stats,
        cancel,
        resync: None,
        exit_on_initial_events_end: false,
    }
}

/// TestReflectorStopWatch: a cancelled token stops the watch handler at once.
#[tokio::test(start_paused = true)]
async fn reflector_stop_watch() {
    let store = RecordingStore::default();
    let stats = StatsCounters::default();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (_tx, mut stream) = fake_watch();
    let ctx = plain_watch_context(&store, &stats, &cancel);
    let end = handle_watch(ctx, Instant::now(), &mut stream, &mut |_| {})
        .await
        .unwrap();
    assert_eq!(end, WatchEnd::Stopped);
}

/// A token cancelled between two events of an always-ready stream stops the
/// handler before the next event: cancellation is checked per event, not only when
/// the stream waits.
#[tokio::test(start_paused = true)]
async fn cancel_between_ready_events_stops_before_the_next() {
    let store = RecordingStore::default();
    let stats = StatsCounters::default();
    let cancel = CancellationToken::new();
    let (tx, stream) = fake_watch();
    for i in 0..10 {
        tx.unbounded_send(Ok(WatchEvent::Added(pod(
            &format!("p{i}"),
            &format!("{}", i + 2),
        ))))
        .unwrap();
    }
    // The token is cancelled as the stream hands out its third event.
    let mut taken = 0;
    let canceller = cancel.clone();
    let mut stream: WatchStream<Pod> = stream
        .inspect(move |_| {
            taken += 1;
            if taken == 3 {
                canceller.cancel();
            }
        })
        .boxed();
    let ctx = plain_watch_context(&store, &stats, &cancel);
    let mut rvs = Vec::new();
    let end = handle_watch(ctx, Instant::now(), &mut stream, &mut |versions| {
        rvs.extend(versions.iter().map(|(rv, _)| rv.to_owned()));
    })
    .await
    .unwrap();
    assert_eq!(end, WatchEnd::Stopped);
    assert_eq!(
        *store.ops.lock().unwrap(),
        ["add p0@2", "add p1@3", "add p2@4"]
    );
    assert_eq!(rvs, ["2", "3", "4"]);
}

/// The events taken from the stream in one poll reach the store before any of
/// their resource versions is reported: a reported version is always one the
/// store already has.
#[tokio::test(start_paused = true)]
async fn ready_events_reach_the_store_before_their_versions_are_reported() {
    let store = RecordingStore::default();
    let stats = StatsCounters::default();
    let cancel = CancellationToken::new();
    let (tx, mut stream) = fake_watch();
    tx.unbounded_send(Ok(WatchEvent::Added(pod("a", "2"))))
        .unwrap();
    tx.unbounded_send(Ok(WatchEvent::Modified(pod("a", "3"))))
        .unwrap();
    tx.unbounded_send(Ok(bookmark("4", false))).unwrap();
    tx.unbounded_send(Ok(WatchEvent::Deleted(pod("a", "5"))))
        .unwrap();
    drop(tx);
    let ctx = plain_watch_context(&store, &stats, &cancel);
    let mut reported = Vec::new();
    handle_watch(ctx, Instant::now(), &mut stream, &mut |versions| {
        let ops = store.ops.lock().unwrap();
        for (rv, past_initial_adds) in versions.iter() {
            reported.push((rv.to_owned(), past_initial_adds, ops.len()));
        }
    })
    .await
    .unwrap();
    assert_eq!(
        *store.ops.lock().unwrap(),
        ["add a@2", "update a@3", "delete a@5"]
    );
    // Every version was reported with the whole run in the store, in event order,
    // each with whether a non-ADDED event had been seen by then.
    assert_eq!(
        reported,
        [
            ("2".to_owned(), false, 3),
            ("3".to_owned(), true, 3),
            ("4".to_owned(), true, 3),
            ("5".to_owned(), true, 3),
        ]
    );
}

/// TestReflectorResync: the resync timer calls `store.resync()`; a resync error
/// ends the current watch.
#[tokio::test(start_paused = true)]
async fn reflector_resync() {
    let lw = scripted(
        |_| Ok(pod_list("1", None, vec![])),
        |_, _| Ok(pending_watch()),
    );
    let store = Arc::new(RecordingStore {
        fail_resync: true,
        ..RecordingStore::default()
    });
    let r = Reflector::new(
        lw,
        store.clone(),
        ReflectorOptions::default().resync_period(Duration::from_millis(10)),
    );
    let start = Instant::now();
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(store.resyncs.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::from_millis(10));
}

/// `should_resync` gates each firing of the resync timer.
#[tokio::test(start_paused = true)]
async fn should_resync_gates_the_timer() {
    let lw = scripted(
        |_| Ok(pod_list("1", None, vec![])),
        |_, _| Ok(pending_watch()),
    );
    let store = Arc::new(RecordingStore::default());
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let r = Arc::new(Reflector::new(
        lw,
        store.clone(),
        ReflectorOptions::default()
            .resync_period(Duration::from_secs(1))
            .should_resync(move || a.fetch_add(1, Ordering::SeqCst) % 2 == 1),
    ));
    let (cancel, task) = spawn_list_and_watch(&r);
    tokio::time::sleep(Duration::from_millis(4500)).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 4, "asked at 1, 2, 3 and 4 s");
    assert_eq!(store.resyncs.load(Ordering::SeqCst), 2, "every other time");
}

/// A watch that closes within a second with no event is a "very short watch"
/// error; the round ends and the next one relists.
#[tokio::test(start_paused = true)]
async fn very_short_watch_is_an_error() {
    let lw = scripted(
        |_| Ok(pod_list("1", None, vec![])),
        |_, _| Ok(futures::stream::empty().boxed()),
    );
    let r = Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorOptions::default(),
    );
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(r.stats().errors_very_short_watch, 1);
    assert_eq!(r.stats().watches, 1);
}

/// A watch that ends normally (its timeout) is restarted from the last RV without a
/// relist.
#[tokio::test(start_paused = true)]
async fn closed_watch_rewatches_without_relist() {
    let watch_rvs = recorder();
    let w = watch_rvs.clone();
    let lw = Scripted {
        list: Box::new(|_| futures::future::ready(Ok(pod_list("1", None, vec![]))).boxed()),
        watch: Box::new(move |_, rv| {
            let n = {
                let mut w = w.lock().unwrap();
                w.push(rv.to_owned());
                w.len()
            };
            async move {
                if n >= 3 {
                    return Ok(pending_watch());
                }
                let (tx, stream) = fake_watch();
                tx.unbounded_send(Ok(WatchEvent::Added(pod(
                    &format!("p{n}"),
                    &format!("{}", n + 1),
                ))))
                .unwrap();
                Ok(stream)
            }
            .boxed()
        }),
    };
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(Reflector::new(
        lw,
        store.clone(),
        ReflectorOptions::default(),
    ));
    let (cancel, task) = spawn_list_and_watch(&r);
    eventually(|| watch_rvs.lock().unwrap().len() == 3).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(*watch_rvs.lock().unwrap(), ["1", "2", "3"]);
    assert_eq!(r.stats().lists, 1);
    assert_eq!(store.len(), 2);
}

/// Events of another kind are dropped, counted, and the watch goes on.
#[tokio::test(start_paused = true)]
async fn unexpected_kind_events_are_dropped_and_counted() {
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let lw = scripted(
        |_| Ok(pod_list("1", None, vec![])),
        move |_, _| Ok(stream.lock().unwrap().take().unwrap_or_else(pending_watch)),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(Reflector::new(
        lw,
        store.clone(),
        ReflectorOptions::default(),
    ));
    let (cancel, task) = spawn_list_and_watch(&r);
    tx.unbounded_send(Err(ListWatchError::UnexpectedKind {
        expected: "v1/Pod".into(),
        found: "v1/ConfigMap".into(),
    }))
    .unwrap();
    tx.unbounded_send(Ok(WatchEvent::Added(pod("after", "2"))))
        .unwrap();
    eventually(|| store.len() == 1).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(r.stats().unexpected_kind_events, 1);
    assert_eq!(r.last_sync_resource_version(), "2");
}

/// A malformed line ends the watch; the run loop relists from the last RV and
/// nothing is lost.
#[tokio::test(start_paused = true)]
async fn malformed_line_ends_the_watch_and_the_loop_recovers() {
    let lists = recorder();
    let watches = Arc::new(AtomicUsize::new(0));
    let (l, w) = (lists.clone(), watches.clone());
    let lw = scripted(
        move |p| {
            l.lock().unwrap().push(rv_of(p));
            Ok(if rv_of(p) == "0" {
                pod_list("1", None, vec![pod("a", "1")])
            } else {
                pod_list("3", None, vec![pod("a", "1"), pod("b", "3")])
            })
        },
        move |_, _| {
            if w.fetch_add(1, Ordering::SeqCst) == 0 {
                let (tx, stream) = fake_watch();
                tx.unbounded_send(Ok(WatchEvent::Added(pod("b", "2"))))
                    .unwrap();
                tx.unbounded_send(Err(ListWatchError::Decode {
                    what: "watch event",
                    source: serde_json::from_str::<u8>("{oops").unwrap_err(),
                }))
                .unwrap();
                // `tx` dropped: but the decode error already ends the watch.
                Ok(stream)
            } else {
                Ok(pending_watch())
            }
        },
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(Reflector::new(
        lw,
        store.clone(),
        ReflectorOptions::default().backoff(no_jitter()),
    ));
    let (cancel, task) = spawn_run(&r);
    eventually(|| watches.load(Ordering::SeqCst) == 2).await;
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(
        *lists.lock().unwrap(),
        ["0", "2"],
        "relisted from the last RV"
    );
    assert_eq!(r.stats().errors_decode, 1);
    let mut got = store.names_and_rvs();
    got.sort();
    assert_eq!(
        got,
        [
            ("a".to_owned(), "1".to_owned()),
            ("b".to_owned(), "3".to_owned())
        ]
    );
}

/// A 410 ERROR event ends the watch; the next round relists from the last RV seen
/// (not from "").
#[tokio::test(start_paused = true)]
async fn expired_watch_relists_from_last_resource_version() {
    let lists = recorder();
    let watches = Arc::new(AtomicUsize::new(0));
    let (l, w) = (lists.clone(), watches.clone());
    let lw = scripted(
        move |p| {
            l.lock().unwrap().push(rv_of(p));
            Ok(pod_list("7", None, vec![]))
        },
        move |_, _| {
            if w.fetch_add(1, Ordering::SeqCst) == 0 {
                let (tx, stream) = fake_watch();
                tx.unbounded_send(Ok(WatchEvent::Added(pod("x", "5"))))
                    .unwrap();
                let ListWatchError::Api(status) = expired() else {
                    unreachable!()
                };
                tx.unbounded_send(Ok(WatchEvent::Error(status))).unwrap();
                Ok(stream)
            } else {
                Ok(pending_watch())
            }
        },
    );
    let r = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorOptions::default().backoff(no_jitter()),
    ));
    let (cancel, task) = spawn_run(&r);
    eventually(|| watches.load(Ordering::SeqCst) == 2).await;
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(*lists.lock().unwrap(), ["0", "5"]);
    assert_eq!(r.stats().relists, 1);
}

/// Errors that end a round reach the watch-error handler (client-go's
/// TestSharedInformerErrorHandling shape, at the reflector level).
#[tokio::test(start_paused = true)]
async fn list_errors_reach_the_watch_error_handler() {
    let seen = recorder();
    let s = seen.clone();
    let lw = scripted(
        |_| Err(api_error(403, "Forbidden", "configmaps is forbidden")),
        |_, _| Ok(pending_watch()),
    );
    let r = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorOptions::default()
            .backoff(no_jitter())
            .watch_error_handler(move |e| s.lock().unwrap().push(e.to_string())),
    ));
    let (cancel, task) = spawn_run(&r);
    eventually(|| seen.lock().unwrap().len() >= 2).await;
    cancel.cancel();
    task.await.unwrap();
    assert!(seen.lock().unwrap()[0].starts_with("failed to list Pod"));
}

/// The run loop backs off between failing rounds: 800 ms, 1.6 s, 3.2 s, ... capped
/// at 30 s (jitter off to make the sequence exact).
#[tokio::test(start_paused = true)]
async fn run_backs_off_exponentially_between_rounds() {
    let times = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let start = Instant::now();
    let t = times.clone();
    let lw = scripted(
        move |_| {
            t.lock().unwrap().push(start.elapsed());
            Err(api_error(500, "InternalError", "boom"))
        },
        |_, _| Ok(pending_watch()),
    );
    let r = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorOptions::default().backoff(no_jitter()),
    ));
    let (cancel, task) = spawn_run(&r);
    eventually(|| times.lock().unwrap().len() >= 9).await;
    cancel.cancel();
    task.await.unwrap();
    let gaps: Vec<u128> = times
        .lock()
        .unwrap()
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    assert_eq!(
        gaps[..8],
        [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]
    );
}

/// Cancellation stops `run` within one poll, and nothing it started stays alive
/// (the open watch is dropped).
#[tokio::test(start_paused = true)]
async fn cancellation_stops_run_and_drops_the_watch() {
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let lw = scripted(
        |_| Ok(pod_list("1", None, vec![])),
        move |_, _| Ok(stream.lock().unwrap().take().unwrap_or_else(pending_watch)),
    );
    let r = Arc::new(Reflector::new(
        lw,
        Arc::new(RecordingStore::default()),
        ReflectorOptions::default(),
    ));
    let cancel = CancellationToken::new();
    let mut task = tokio::spawn({
        let (r, c) = (r.clone(), cancel.clone());
        async move { r.run(c).await }
    });
    eventually(|| r.stats().watches == 1).await;
    assert!(!tx.is_closed());
    cancel.cancel();
    // One poll: the task completes without any time passing.
    let done = futures::poll!(&mut task);
    let done = match done {
        std::task::Poll::Ready(r) => r,
        std::task::Poll::Pending => {
            tokio::task::yield_now().await;
            (&mut task).await
        }
    };
    done.unwrap();
    assert!(tx.is_closed(), "the watch stream was dropped");
    assert_eq!(Arc::strong_count(&r), 1, "the task released the reflector");
}

// ---------- reflector_watchlist_test.go ----------

fn watch_list_reflector(lw: Scripted, store: Arc<dyn Store<Pod>>) -> Reflector<Pod, Scripted> {
    Reflector::new(
        lw,
        store,
        ReflectorOptions::default()
            .use_watch_list(true)
            .backoff(no_jitter()),
    )
}

/// TestReflectorListAndWatch ("UseWatchList enabled") / TestWatchList "the reflector
/// can fall back to old LIST/WATCH semantics when a server doesn't support streaming"
/// is below; this is the happy path: initial events are collected until the
/// initial-events-end bookmark, the store is replaced once with the bookmark's RV,
/// and the same watch keeps delivering.
#[tokio::test(start_paused = true)]
async fn watch_list_streams_then_keeps_the_watch() {
    let params = Arc::new(Mutex::new(Vec::new()));
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let p = params.clone();
    let lw = scripted(
        |_| Err(api_error(500, "InternalError", "list must not be called")),
        move |wp, rv| {
            p.lock()
                .unwrap()
                .push((rv.to_owned(), wp.send_initial_events, wp.bookmarks));
            stream
                .lock()
                .unwrap()
                .take()
                .ok_or_else(|| api_error(500, "InternalError", "second watch"))
        },
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(watch_list_reflector(lw, store.clone()));
    let (cancel, task) = spawn_list_and_watch(&r);
    tx.unbounded_send(Ok(WatchEvent::Added(pod("foo", "1"))))
        .unwrap();
    tx.unbounded_send(Ok(bookmark("1", true))).unwrap();
    tx.unbounded_send(Ok(WatchEvent::Modified(pod("foo", "2"))))
        .unwrap();
    for (n, rv) in [("bar", "3"), ("baz", "4"), ("qux", "5"), ("zoo", "6")] {
        tx.unbounded_send(Ok(WatchEvent::Added(pod(n, rv))))
            .unwrap();
    }
    eventually(|| store.len() == 5 && r.last_sync_resource_version() == "6").await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(*params.lock().unwrap(), [(String::new(), true, true)]);
    assert_eq!(
        store.ops()[0],
        "replace 1 @1",
        "one replace at the bookmark's RV"
    );
    assert_eq!(r.stats().lists, 1);
}

/// TestWatchList: a server that refuses streaming makes the reflector fall back to
/// LIST/WATCH.
#[tokio::test(start_paused = true)]
async fn watch_list_falls_back_to_list_on_refusal() {
    let lists = recorder();
    let watch_kinds = recorder();
    let (l, w) = (lists.clone(), watch_kinds.clone());
    let lw = scripted(
        move |p| {
            l.lock().unwrap().push(rv_of(p));
            Ok(pod_list("5", None, vec![pod("a", "5")]))
        },
        move |wp, rv| {
            w.lock()
                .unwrap()
                .push(format!("rv={rv} initial={}", wp.send_initial_events));
            if wp.send_initial_events {
                Err(api_error(
                    400,
                    "BadRequest",
                    "sendInitialEvents is not supported",
                ))
            } else {
                Ok(pending_watch())
            }
        },
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(watch_list_reflector(lw, store.clone()));
    let (cancel, task) = spawn_list_and_watch(&r);
    eventually(|| watch_kinds.lock().unwrap().len() == 2).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(*lists.lock().unwrap(), ["0"]);
    assert_eq!(
        *watch_kinds.lock().unwrap(),
        ["rv= initial=true", "rv=5 initial=false"]
    );
    assert_eq!(store.len(), 1);
}

/// TestWatchList: a 429 on the watch-list request is retried after a backoff,
/// still in watch-list mode (no list).
#[tokio::test(start_paused = true)]
async fn watch_list_retries_too_many_requests() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let open = Arc::new(Mutex::new(Vec::<Sender>::new()));
    let keep = open.clone();
    let lw = scripted(
        |_| Err(api_error(500, "InternalError", "list must not be called")),
        move |_, _| {
            if c.fetch_add(1, Ordering::SeqCst) == 0 {
                return Err(too_many_requests());
            }
            let (tx, stream) = fake_watch();
            tx.unbounded_send(Ok(WatchEvent::Added(pod("a", "1"))))
                .unwrap();
            tx.unbounded_send(Ok(bookmark("2", true))).unwrap();
            keep.lock().unwrap().push(tx);
            Ok(stream)
        },
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(watch_list_reflector(lw, store.clone()));
    let (cancel, task) = spawn_list_and_watch(&r);
    eventually(|| r.last_sync_resource_version() == "2").await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(store.ops(), ["replace 1 @2"]);
    assert_eq!(r.stats().errors_too_many_requests, 1);
}

/// TestWatchList "stopping the reflector before it is synced": cancelling during the
/// initial events leaves the store untouched.
#[tokio::test(start_paused = true)]
async fn watch_list_stop_before_sync() {
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let lw = scripted(
        |_| Err(api_error(500, "InternalError", "list must not be called")),
        move |_, _| Ok(stream.lock().unwrap().take().unwrap_or_else(pending_watch)),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(watch_list_reflector(lw, store.clone()));
    let (cancel, task) = spawn_list_and_watch(&r);
    tx.unbounded_send(Ok(WatchEvent::Added(pod("a", "1"))))
        .unwrap();
    eventually(|| r.stats().events == 1).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert!(
        store.ops().is_empty(),
        "nothing reached the store: {:?}",
        store.ops()
    );
    assert!(tx.is_closed());
}

/// TestWatchList "stopping the reflector after it is synced": the store holds the
/// streamed state and the watch is dropped.
#[tokio::test(start_paused = true)]
async fn watch_list_stop_after_sync() {
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let lw = scripted(
        |_| Err(api_error(500, "InternalError", "list must not be called")),
        move |_, _| Ok(stream.lock().unwrap().take().unwrap_or_else(pending_watch)),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(watch_list_reflector(lw, store.clone()));
    let (cancel, task) = spawn_list_and_watch(&r);
    tx.unbounded_send(Ok(WatchEvent::Added(pod("a", "1"))))
        .unwrap();
    tx.unbounded_send(Ok(WatchEvent::Added(pod("b", "2"))))
        .unwrap();
    tx.unbounded_send(Ok(bookmark("2", true))).unwrap();
    eventually(|| store.len() == 2).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(store.ops(), ["replace 2 @2"]);
    assert_eq!(r.last_sync_resource_version(), "2");
    assert!(tx.is_closed());
}

/// TestWatchListResourceVersion: a 410 during the watch-list forgets the resource
/// version, and the retry streams from "".
#[tokio::test(start_paused = true)]
async fn watch_list_expired_restarts_from_empty_resource_version() {
    let rvs = recorder();
    let w = rvs.clone();
    let open = Arc::new(Mutex::new(Vec::<Sender>::new()));
    let keep = open.clone();
    let lw = scripted(
        |_| Err(api_error(500, "InternalError", "list must not be called")),
        move |_, rv| {
            let n = {
                let mut w = w.lock().unwrap();
                w.push(rv.to_owned());
                w.len()
            };
            if n == 1 {
                return Err(expired());
            }
            let (tx, stream) = fake_watch();
            tx.unbounded_send(Ok(bookmark("9", true))).unwrap();
            keep.lock().unwrap().push(tx);
            Ok(stream)
        },
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(watch_list_reflector(lw, store.clone()));
    r.set_last_sync_resource_version("4");
    let (cancel, task) = spawn_list_and_watch(&r);
    eventually(|| r.last_sync_resource_version() == "9").await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(*rvs.lock().unwrap(), ["4", ""]);
}

// ---------- relists keep one copy of unchanged objects ----------

/// The cached `Arc` of every key, by name.
fn cached(indexer: &crate::store::Indexer<Pod>) -> BTreeMap<String, Arc<Pod>> {
    indexer
        .list()
        .into_iter()
        .map(|p| (p.metadata.name.clone().unwrap(), p))
        .collect()
}

/// A relist hands the store the cached object for every key whose resourceVersion
/// did not change (the decoded duplicate is dropped as its page arrives), and the
/// decoded object for every changed or new key.
#[tokio::test(start_paused = true)]
async fn relist_reuses_cached_objects_whose_resource_version_is_unchanged() {
    let rounds = Rounds::new();
    let lw = scripted(
        |p| match rv_of(p).as_str() {
            "0" => Ok(pod_list("10", None, vec![pod("a", "1"), pod("b", "2")])),
            _ => Ok(pod_list(
                "20",
                None,
                vec![pod("a", "1"), pod("b", "12"), pod("c", "13")],
            )),
        },
        rounds.watch(),
    );
    let indexer = Arc::new(crate::store::Indexer::<Pod>::new(
        crate::store::Indexers::new(),
    ));
    let r = Reflector::new(lw, indexer.clone(), ReflectorOptions::default());
    rounds.run(&r).await.unwrap();
    let before = cached(&indexer);
    rounds.run(&r).await.unwrap();
    let after = cached(&indexer);
    assert_eq!(after.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert!(
        Arc::ptr_eq(&before["a"], &after["a"]),
        "unchanged: cached copy"
    );
    assert!(!Arc::ptr_eq(&before["b"], &after["b"]), "changed: new copy");
    assert_eq!(after["b"].metadata.resource_version.as_deref(), Some("12"));
}

/// The same for a watch-list: initial events of unchanged objects are swapped for
/// the cached copy before they are collected.
#[tokio::test(start_paused = true)]
async fn watch_list_reuses_cached_objects_whose_resource_version_is_unchanged() {
    let (tx, stream) = fake_watch();
    let stream = Mutex::new(Some(stream));
    let lw = scripted(
        |_| Err(api_error(500, "InternalError", "list must not be called")),
        move |_, _| {
            stream
                .lock()
                .unwrap()
                .take()
                .ok_or_else(|| api_error(500, "InternalError", "second watch"))
        },
    );
    let indexer = Arc::new(crate::store::Indexer::<Pod>::new(
        crate::store::Indexers::new(),
    ));
    indexer
        .replace(vec![Arc::new(pod("a", "1")), Arc::new(pod("b", "2"))], "2")
        .unwrap();
    let before = cached(&indexer);
    let r = Arc::new(watch_list_reflector(lw, indexer.clone()));
    let (cancel, task) = spawn_list_and_watch(&r);
    for (name, rv) in [("a", "1"), ("b", "7")] {
        tx.unbounded_send(Ok(WatchEvent::Added(pod(name, rv))))
            .unwrap();
    }
    tx.unbounded_send(Ok(bookmark("7", true))).unwrap();
    eventually(|| r.last_sync_resource_version() == "7").await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    let after = cached(&indexer);
    assert!(
        Arc::ptr_eq(&before["a"], &after["a"]),
        "unchanged: cached copy"
    );
    assert_eq!(after["b"].metadata.resource_version.as_deref(), Some("7"));
}

// ---------- first lists streamed into an empty DeltaFifo ----------

/// A reflector into a DeltaFifo whose known objects are an (empty) indexer, as an
/// informer builds them.
fn reflector_into_informer_fifo<L: ListerWatcher<Pod> + 'static>(
    lw: L,
) -> (Arc<crate::fifo::DeltaFifo<Pod>>, Arc<Reflector<Pod, L>>) {
    let indexer = Arc::new(crate::store::Indexer::<Pod>::new(
        crate::store::Indexers::new(),
    ));
    let fifo = Arc::new(crate::fifo::DeltaFifo::new(
        crate::fifo::DeltaFifoOptions::default()
            .known_objects(indexer)
            .emit_delta_type_replaced(true),
    ));
    let r = Arc::new(Reflector::new(
        lw,
        fifo.clone(),
        ReflectorOptions::default(),
    ));
    (fifo, r)
}

/// Pops one item within a (paused-clock) second.
async fn pop_within_a_second(fifo: &crate::fifo::DeltaFifo<Pod>) -> crate::fifo::PoppedItem<Pod> {
    tokio::time::timeout(Duration::from_secs(1), fifo.pop_item())
        .await
        .expect("an item to pop")
        .expect("fifo open")
}

/// The deltas of `item` as (type, resourceVersion of the object or tombstone).
fn delta_summary(item: &crate::fifo::PoppedItem<Pod>) -> Vec<(crate::fifo::DeltaType, String)> {
    item.deltas
        .iter()
        .map(|d| {
            let rv = d
                .object
                .object()
                .metadata
                .resource_version
                .clone()
                .unwrap_or_default();
            (d.delta_type, rv)
        })
        .collect()
}

/// The first list's pages reach an empty DeltaFifo as they arrive: its consumer pops
/// page one while page two is still being served, each item marked as in the
/// initial list, and the FIFO syncs only once the list has ended.
#[tokio::test(start_paused = true)]
async fn first_list_streams_pages_into_an_empty_delta_fifo() {
    let release = Arc::new(tokio::sync::Notify::new());
    let lw = Scripted {
        list: Box::new({
            let release = Arc::clone(&release);
            move |p| {
                let release = Arc::clone(&release);
                let continued = p.continue_token.is_some();
                async move {
                    if continued {
                        release.notified().await;
                        Ok(pod_list("10", None, vec![pod("c", "3")]))
                    } else {
                        Ok(pod_list(
                            "10",
                            Some("next"),
                            vec![pod("a", "1"), pod("b", "2")],
                        ))
                    }
                }
                .boxed()
            }
        }),
        watch: Box::new(|_, _| futures::future::ready(Ok(pending_watch())).boxed()),
    };
    let (fifo, r) = reflector_into_informer_fifo(lw);
    let (cancel, task) = spawn_list_and_watch(&r);
    for name in ["a", "b"] {
        let item = pop_within_a_second(&fifo).await;
        assert_eq!(item.key.as_str(), name);
        assert!(item.is_in_initial_list);
        assert_eq!(
            item.deltas.iter().next().unwrap().delta_type,
            crate::fifo::DeltaType::Replaced
        );
    }
    assert!(!fifo.has_synced(), "page two is still being served");
    assert_eq!(r.last_sync_resource_version(), "");
    release.notify_one();
    let item = pop_within_a_second(&fifo).await;
    assert_eq!(item.key.as_str(), "c");
    assert!(item.is_in_initial_list);
    tokio::time::timeout(Duration::from_secs(1), fifo.wait_synced())
        .await
        .expect("synced once the list ended and its last item was popped");
    assert_eq!(r.last_sync_resource_version(), "10");
    cancel.cancel();
    task.await.unwrap().unwrap();
}

/// A streamed list whose continue token expires starts over as one full list, which
/// the FIFO reconciles with what it streamed: an object the full list lacks gets a
/// tombstone, one it has gets its newer version.
#[tokio::test(start_paused = true)]
async fn streamed_list_started_over_after_expired_continue_is_reconciled() {
    let lw = scripted(
        |p| {
            if p.continue_token.is_some() {
                Err(expired())
            } else if p.limit.is_none() {
                Ok(pod_list("20", None, vec![pod("b", "5"), pod("c", "6")]))
            } else {
                Ok(pod_list(
                    "10",
                    Some("next"),
                    vec![pod("a", "1"), pod("b", "2")],
                ))
            }
        },
        |_, _| Ok(pending_watch()),
    );
    let (fifo, r) = reflector_into_informer_fifo(lw);
    let (cancel, task) = spawn_list_and_watch(&r);
    eventually(|| r.last_sync_resource_version() == "20").await;
    use crate::fifo::DeltaType::{Deleted, Replaced};
    let mut popped = Vec::new();
    for _ in 0..3 {
        let item = pop_within_a_second(&fifo).await;
        let tombstone = item.deltas.iter().any(|d| {
            matches!(
                d.object,
                crate::fifo::DeltaObject::DeletedFinalStateUnknown(_)
            )
        });
        popped.push((item.key.to_string(), delta_summary(&item), tombstone));
    }
    assert_eq!(
        popped,
        [
            (
                "a".to_owned(),
                vec![(Replaced, "1".to_owned()), (Deleted, "1".to_owned())],
                true
            ),
            (
                "b".to_owned(),
                vec![(Replaced, "2".to_owned()), (Replaced, "5".to_owned())],
                false
            ),
            ("c".to_owned(), vec![(Replaced, "6".to_owned())], false),
        ]
    );
    assert!(fifo.has_synced());
    cancel.cancel();
    task.await.unwrap().unwrap();
}
