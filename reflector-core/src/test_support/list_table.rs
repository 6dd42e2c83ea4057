//! client-go's table of list resource versions: a reflector whose lister answers a
//! table of list requests row by row, run for N rounds.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;

use super::api_errors::api_error;
use super::lister_watchers::{ListResult, Rounds, Scripted, describe, recorder, scripted};
use super::stores::RecordingStore;
use crate::reflector::{Reflector, ReflectorOptions};
use crate::store::{Store, Writer};

/// One row of a list table: the request the reflector must send, as
/// `"rv=R[ limit=N][ continue=C]"`, and the server's answer to it.
pub(crate) type ListRow = (&'static str, ListResult);

/// A reflector whose lister answers a table of list requests row by row, and
/// whose watch ends each round as it opens.
pub(crate) struct ListTable {
    pub(crate) reflector: Reflector<Pod, Scripted>,
    /// What the reflector's store holds.
    contents: Box<dyn Fn() -> Vec<Arc<Pod>> + Send + Sync>,
    rounds: Rounds,
    /// The request of every row, in order.
    expected: Vec<&'static str>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ListTable {
    /// The table over a fresh recording store.
    pub(crate) fn new(options: ReflectorOptions, rows: Vec<ListRow>) -> Self {
        let store = Arc::new(RecordingStore::default());
        let contents = Arc::clone(&store);
        Self::build(
            |lw| Reflector::new(lw, store, options),
            Box::new(move || contents.list()),
            rows,
        )
    }

    /// The table over the cache `writer` writes.
    pub(crate) fn with_cache(
        writer: Writer<Pod>,
        options: ReflectorOptions,
        rows: Vec<ListRow>,
    ) -> Self {
        let reader = writer.reader();
        Self::build(
            |lw| Reflector::with_cache(lw, writer, options),
            Box::new(move || reader.list()),
            rows,
        )
    }

    /// The table over the store `reflector` makes. A request other than the next
    /// row's is answered 400 and shows in the requests [`ListTable::assert_rounds`]
    /// checks.
    fn build(
        reflector: impl FnOnce(Scripted) -> Reflector<Pod, Scripted>,
        contents: Box<dyn Fn() -> Vec<Arc<Pod>> + Send + Sync>,
        rows: Vec<ListRow>,
    ) -> Self {
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
        ListTable {
            reflector: reflector(lw),
            contents,
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
            sizes.push((self.contents)().len());
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
