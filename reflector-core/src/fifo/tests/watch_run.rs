//! `apply_watch_run` of the per-key queue — a run of watch events queued at once — against
//! the same events handed over one `add`/`update`/`delete` call each: a property
//! test that both FIFOs (each in front of its own cache) hand out the same items,
//! plus the cases a run must get right on its own: a closed FIFO, a key error in
//! the middle of a run, and waking every waiting popper.

use std::sync::Arc;
use std::time::Duration;

use crate::fifo::{DeltaType, Fifo, QueueMode};
use crate::store::{Indexers, SinkError, StoreError, StoreSink, WatchAction, Writer};
use crate::test_support::PopItem;
use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;

use crate::test_support::cm;

#[derive(Debug, Clone)]
enum Op {
    /// A watch event for key `k`.
    Event(WatchAction, u8),
    /// The informer pops one key's deltas into its cache.
    Pop,
    /// A run ends here (the reflector's poll returned).
    EndRun,
}

fn op() -> impl Strategy<Value = Op> {
    let action = prop_oneof![
        Just(WatchAction::Add),
        Just(WatchAction::Update),
        Just(WatchAction::Delete),
    ];
    prop_oneof![
        6 => (action, 0u8..6).prop_map(|(a, k)| Op::Event(a, k)),
        2 => Just(Op::Pop),
        1 => Just(Op::EndRun),
    ]
}

/// A FIFO in front of its own cache, as an informer has them.
struct Pipeline {
    cache: Writer<ConfigMap>,
    fifo: Fifo<ConfigMap>,
}

impl Pipeline {
    fn new() -> Self {
        let cache = Writer::<ConfigMap>::new(Indexers::new());
        let fifo = Fifo::new(QueueMode::PerKey)
            .cache(cache.reader())
            .emit_replaced(true);
        Pipeline { cache, fifo }
    }

    /// Pops one item (if any) into the cache; returns what it held: the key and
    /// each delta's type and resource version.
    fn pop(&mut self) -> Option<(String, Vec<(DeltaType, String)>)> {
        if self.fifo.is_empty() {
            return None;
        }
        let item = futures::executor::block_on(self.fifo.pop_item()).ok()?;
        let seen = item
            .deltas
            .iter()
            .map(|d| {
                let rv = d.object.object().metadata.resource_version.clone();
                (d.delta_type, rv.unwrap_or_default())
            })
            .collect();
        for d in item.deltas.into_vec() {
            if d.delta_type == DeltaType::Deleted {
                self.cache.delete_by_key(&item.key);
            } else {
                self.cache.add(Arc::clone(d.object.object())).unwrap();
            }
        }
        Some((item.key.to_string(), seen))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Runs of any length, deletions of cached, queued and unknown keys among
    /// them: the FIFO fed in runs hands out exactly what the one fed per event
    /// does, pop for pop.
    #[test]
    fn a_run_queues_what_one_call_per_event_queues(ops in proptest::collection::vec(op(), 0..120)) {
        let mut per_event = Pipeline::new();
        let mut in_runs = Pipeline::new();
        let mut run: Vec<(WatchAction, Arc<ConfigMap>)> = Vec::new();
        let mut rv = 0u64;
        let mut refused = Vec::new();
        for op in ops {
            match op {
                Op::Event(action, k) => {
                    rv += 1;
                    let obj = cm(k, rv);
                    match action {
                        WatchAction::Add => per_event.fifo.add(Arc::clone(&obj)).unwrap(),
                        WatchAction::Update => per_event.fifo.update(Arc::clone(&obj)).unwrap(),
                        _ => per_event.fifo.delete(Arc::clone(&obj)).unwrap(),
                    }
                    run.push((action, obj));
                }
                // A pop sees only what was handed over, so a run ends before it.
                Op::Pop | Op::EndRun => {
                    in_runs.fifo.apply_watch_run(&mut run, &mut |a, e| refused.push((a, e)));
                    prop_assert!(run.is_empty());
                    if matches!(op, Op::Pop) {
                        prop_assert_eq!(in_runs.pop(), per_event.pop());
                    }
                }
            }
        }
        in_runs.fifo.apply_watch_run(&mut run, &mut |a, e| refused.push((a, e)));
        prop_assert!(refused.is_empty(), "refused: {:?}", refused);
        loop {
            let (a, b) = (in_runs.pop(), per_event.pop());
            prop_assert_eq!(&a, &b);
            if a.is_none() {
                break;
            }
        }
        let keys = |p: &Pipeline| {
            let mut k: Vec<String> = p.cache.reader().list_keys().iter().map(ToString::to_string).collect();
            k.sort();
            k
        };
        prop_assert_eq!(keys(&in_runs), keys(&per_event));
    }
}

/// A closed FIFO refuses every event of a run, each with `Closed`, and leaves the
/// run empty.
#[test]
fn a_closed_fifo_refuses_each_event_of_a_run() {
    let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
    fifo.close();
    let mut run = vec![
        (WatchAction::Add, cm(1, 1)),
        (WatchAction::Update, cm(1, 2)),
        (WatchAction::Delete, cm(1, 3)),
    ];
    let mut refused = Vec::new();
    fifo.apply_watch_run(&mut run, &mut |a, e| refused.push((a, e)));
    assert!(run.is_empty());
    assert_eq!(
        refused,
        [
            (WatchAction::Add, SinkError::Closed),
            (WatchAction::Update, SinkError::Closed),
            (WatchAction::Delete, SinkError::Closed),
        ]
    );
}

/// An object without a name is refused with its key error; the events around it
/// are queued in order.
#[test]
fn a_key_error_refuses_only_its_own_event() {
    let fifo = Fifo::<ConfigMap>::new(QueueMode::PerKey);
    let mut run = vec![
        (WatchAction::Add, cm(1, 1)),
        (WatchAction::Add, Arc::new(ConfigMap::default())),
        (WatchAction::Update, cm(2, 3)),
    ];
    let mut refused = Vec::new();
    fifo.apply_watch_run(&mut run, &mut |a, e| refused.push((a, e)));
    assert_eq!(refused.len(), 1);
    assert!(matches!(
        refused[0],
        (WatchAction::Add, SinkError::Store(StoreError::Key(_)))
    ));
    let keys: Vec<String> = fifo.list_keys().iter().map(ToString::to_string).collect();
    assert_eq!(keys, ["ns/cm-1", "ns/cm-2"]);
}

/// Two poppers wait; one run queues two keys: both wake (one wake-up per run,
/// not per key, must still reach every waiting popper).
#[tokio::test(start_paused = true)]
async fn a_run_wakes_every_waiting_popper() {
    let fifo = Arc::new(Fifo::<ConfigMap>::new(QueueMode::PerKey));
    let popper = |fifo: Arc<Fifo<ConfigMap>>| {
        tokio::spawn(async move { fifo.pop_item().await.map(|item| item.key.to_string()) })
    };
    let (a, b) = (popper(Arc::clone(&fifo)), popper(Arc::clone(&fifo)));
    // Both are parked on the FIFO before the run arrives.
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    assert!(!a.is_finished() && !b.is_finished());
    let mut run = vec![(WatchAction::Add, cm(1, 1)), (WatchAction::Add, cm(2, 2))];
    fifo.apply_watch_run(&mut run, &mut |a, e| panic!("{a}: {e}"));
    let (a, b) = tokio::time::timeout(Duration::from_secs(10), async {
        (a.await.unwrap().unwrap(), b.await.unwrap().unwrap())
    })
    .await
    .expect("both poppers woke");
    let mut got = [a, b];
    got.sort();
    assert_eq!(got, ["ns/cm-1", "ns/cm-2"]);
}
