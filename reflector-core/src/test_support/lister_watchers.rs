//! Scripted lister-watchers, as client-go's `ListWatch{}`: the test writes the
//! answer to each list and watch.

use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, ObjectList, WatchParams};
use tokio_util::sync::CancellationToken;

use super::api_errors::api_error;
use super::objects::pod_list;
use super::watches::pending_watch;
use crate::listwatch::{ListWatchError, ListerWatcher, WatchStream};
use crate::reflector::{Reflector, ReflectorError};

/// What a list answers.
pub(crate) type ListResult = Result<ObjectList<Pod>, ListWatchError>;
/// What a watch answers.
pub(crate) type WatchResult = Result<WatchStream<Pod>, ListWatchError>;

type ListFn = Box<dyn Fn(&ListParams) -> BoxFuture<'static, ListResult> + Send + Sync>;
type WatchFn = Box<dyn Fn(&WatchParams, &str) -> BoxFuture<'static, WatchResult> + Send + Sync>;

/// A lister-watcher whose answers the test scripts, as client-go's `ListWatch{}`.
pub(crate) struct Scripted {
    pub(crate) list: ListFn,
    pub(crate) watch: WatchFn,
}

impl ListerWatcher<Pod> for Scripted {
    fn list(&self, params: &ListParams) -> impl Future<Output = ListResult> + Send {
        (self.list)(params)
    }

    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> impl Future<Output = WatchResult> + Send {
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

// ---------- list answers ----------

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
pub(crate) fn no_list(_: &ListParams) -> ListResult {
    Err(api_error(500, "InternalError", "list must not be called"))
}

/// A lister answering one empty list at `rv`, however often asked.
pub(crate) fn empty_list(
    rv: &'static str,
) -> impl Fn(&ListParams) -> ListResult + Send + Sync + 'static {
    move |_| Ok(pod_list(rv, None, vec![]))
}

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

/// The resource version a list asked for (`""` when unset).
pub(crate) fn rv_of(p: &ListParams) -> String {
    p.resource_version.clone().unwrap_or_default()
}

/// An empty, shared list of what a script saw.
pub(crate) fn recorder() -> Arc<Mutex<Vec<String>>> {
    Arc::new(Mutex::new(Vec::new()))
}

// ---------- rounds ----------

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
