//! Every queue the fifo suites build, what they queue and pop, and the assertions
//! on what comes out (the queue a reflector writes into as an informer builds it,
//! of either kind, is in `informer_queues`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;

use super::objects::{Obj, data, mk};
use super::stores::Literal;
use crate::fifo::{Delta, DeltaFifo, DeltaType, Deltas, Entry, InOrderFifo, PoppedItem};
use crate::object::{MaybeTombstone, Object, ObjectKey};
use crate::store::Store;

// ---------- queues ----------

/// An empty FIFO with no known objects.
pub(crate) fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new()
}

/// A FIFO whose known objects are `known`.
pub(crate) fn fifo_known(known: Vec<Obj>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new().cache_view(Arc::new(Literal(known)))
}

/// A FIFO over `known` that emits `Replaced` (not `Sync`) for listed objects, as
/// an informer's.
pub(crate) fn fifo_known_replaced(known: Vec<Obj>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new()
        .cache_view(Arc::new(Literal(known)))
        .emit_replaced(true)
}

// ---------- deltas ----------

/// A delta of `delta_type` about `obj`.
pub(crate) fn d(delta_type: DeltaType, obj: &Obj) -> Delta<ConfigMap> {
    Delta::new(delta_type, obj.clone())
}

/// A `Deleted` delta carrying `obj` as the tombstone of key `name`.
pub(crate) fn tomb(name: &str, obj: &Obj) -> Delta<ConfigMap> {
    Delta::new(
        DeltaType::Deleted,
        MaybeTombstone::DeletedFinalStateUnknown {
            key: ObjectKey::new(None, name),
            obj: obj.clone(),
        },
    )
}

/// `v` as one item's deltas.
pub(crate) fn deltas(v: Vec<Delta<ConfigMap>>) -> Deltas<ConfigMap> {
    Deltas::from(v)
}

/// The `val` of the newest object of `deltas`.
pub(crate) fn newest_val(deltas: &Deltas<ConfigMap>) -> String {
    data(deltas.newest().expect("non-empty").object.object(), "val")
}

/// The types of the deltas queued for `name`.
pub(crate) fn delta_types(f: &DeltaFifo<ConfigMap>, name: &str) -> Vec<DeltaType> {
    let ds = f.deltas_by_key(&ObjectKey::new(None, name)).unwrap();
    ds.iter().map(|d| d.delta_type).collect()
}

// ---------- writes ----------

/// Applies a script of writes such as `"add foo 10, update bar 15, delete baz 20"`
/// to `f`: each writes `mk(name, val)`. `replace@RV foo:5 bar:6` replaces the
/// contents with `mk("foo", 5)` and `mk("bar", 6)` at resource version `RV`
/// (`replace` alone: none).
pub(crate) fn apply(f: &DeltaFifo<ConfigMap>, script: &str) {
    for step in script.split(',') {
        let words: Vec<&str> = step.split_whitespace().collect();
        let Some((op, args)) = words.split_first() else {
            panic!("empty step in {script:?}");
        };
        if let Some(rv) = op.strip_prefix("replace") {
            let list = args.iter().map(|arg| {
                let (name, val) = arg.split_once(':').expect("name:val");
                mk(name, val)
            });
            f.replace(list.collect(), rv.strip_prefix('@').unwrap_or_default())
                .unwrap();
            continue;
        }
        let [name, val] = args[..] else {
            panic!("bad step {step:?}");
        };
        let obj = mk(name, val);
        match *op {
            "add" => f.add(obj),
            "update" => f.update(obj),
            "delete" => f.delete(obj),
            _ => panic!("unknown write {op:?}"),
        }
        .unwrap();
    }
}

// ---------- pops ----------

/// Pops one item; fails the test if none arrives within a second (instant under
/// paused time).
pub(crate) async fn pop<K: Object>(f: &DeltaFifo<K>) -> PoppedItem<K> {
    tokio::time::timeout(Duration::from_secs(1), f.pop_item())
        .await
        .expect("an item to pop")
        .expect("fifo not closed")
}

/// The `val` of the newest object of each of the next `n` pops.
pub(crate) async fn pop_vals(f: &DeltaFifo<ConfigMap>, n: usize) -> Vec<String> {
    let mut vals = Vec::with_capacity(n);
    for _ in 0..n {
        vals.push(newest_val(&pop(f).await.deltas));
    }
    vals
}

/// Asserts that the queue holds one item, whose newest `val` is `val`, and that
/// popping it leaves nothing behind.
pub(crate) async fn assert_pops_only(f: &DeltaFifo<ConfigMap>, val: &str) {
    assert_eq!(pop_vals(f, 1).await, [val]);
    assert_nothing_to_pop(f).await;
    assert!(f.deltas(&mk("foo", "")).unwrap().is_none());
}

/// Asserts nothing is left to pop.
pub(crate) async fn assert_nothing_to_pop(f: &DeltaFifo<ConfigMap>) {
    assert!(f.is_empty(), "queue not empty: {:?}", f.list_keys());
    let r = tokio::time::timeout(Duration::from_millis(50), f.pop_item()).await;
    assert!(r.is_err(), "unexpected item: {r:?}");
}

/// Pops every item in turn, asserting each one's deltas, then asserts the queue is
/// empty; failures name `case`.
pub(crate) async fn assert_drains(
    case: &str,
    f: &DeltaFifo<ConfigMap>,
    expected: Vec<Deltas<ConfigMap>>,
) {
    for (i, e) in expected.into_iter().enumerate() {
        assert_eq!(pop(f).await.deltas, e, "{case}: pop #{i}");
    }
    assert!(f.is_empty(), "{case}: left over: {:?}", f.list_keys());
}

// ---------- the in-order FIFO ----------

/// An in-order FIFO with atomic events (as an informer's) over the known objects
/// `known`.
pub(crate) fn in_order(known: Vec<Obj>) -> InOrderFifo<ConfigMap> {
    InOrderFifo::new().cache_view(Arc::new(Literal(known)))
}

/// An in-order FIFO without atomic events over the known objects `known`, as
/// client-go's `NewRealFIFO(keyFunc, literalListerGetter(known), nil)`.
pub(crate) fn in_order_per_object(known: Vec<Obj>) -> InOrderFifo<ConfigMap> {
    in_order(known).atomic(false)
}

/// An entry as one line: `"Added foo=10"`, `"Deleted~ bar=6"` (a tombstone),
/// `"ReplacedAll@5 [foo=1]"`, `"SyncAll"`, `"Bookmark@7"`.
pub(crate) fn show(entry: &Entry<ConfigMap>) -> String {
    let named = |o: &ConfigMap| {
        format!(
            "{}={}",
            o.metadata.name.as_deref().unwrap_or_default(),
            data(o, "val")
        )
    };
    match entry {
        Entry::Delta(d) => {
            let mark = if d.object.is_tombstone() { "~" } else { "" };
            format!("{:?}{mark} {}", d.delta_type, named(d.object.object()))
        }
        Entry::ReplacedAll {
            objects,
            resource_version,
        } => {
            let objects: Vec<String> = objects.iter().map(|o| named(o)).collect();
            format!("ReplacedAll@{resource_version} [{}]", objects.join(" "))
        }
        Entry::SyncAll => "SyncAll".to_owned(),
        Entry::Bookmark { resource_version } => format!("Bookmark@{resource_version}"),
    }
}

/// The queued entries, shown.
pub(crate) fn queued(f: &InOrderFifo<ConfigMap>) -> Vec<String> {
    f.entries().iter().map(show).collect()
}

/// Pops one entry (within a second of the paused clock), shown.
pub(crate) async fn pop_shown(f: &InOrderFifo<ConfigMap>) -> String {
    tokio::time::timeout(Duration::from_secs(1), f.pop(|e, _| show(&e)))
        .await
        .expect("an entry to pop")
        .expect("the FIFO is open")
}

/// Pops everything queued, shown.
pub(crate) async fn pop_all_shown(f: &InOrderFifo<ConfigMap>) -> Vec<String> {
    let mut out = Vec::new();
    while !f.is_empty() {
        out.push(pop_shown(f).await);
    }
    out
}
