//! What the DeltaFifo's conformance tests share: client-go's `mkFifoObj`,
//! `literalListerGetter`, delta builders, and pops that fail instead of hanging.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::{Delta, DeltaFifo, DeltaType, Deltas, PoppedItem};
use crate::object::{MaybeTombstone, ObjectKey};
use crate::store::{KeyListerGetter, Store};
use DeltaType::Deleted;

pub(super) type Obj = Arc<ConfigMap>;

/// As client-go's `mkFifoObj`: an object keyed by `name` carrying `val`.
pub(super) fn mk(name: &str, val: impl ToString) -> Obj {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some(BTreeMap::from([("val".to_owned(), val.to_string())]));
    Arc::new(cm)
}

pub(super) fn data(obj: &ConfigMap, field: &str) -> String {
    obj.data
        .as_ref()
        .and_then(|d| d.get(field))
        .cloned()
        .unwrap_or_default()
}

/// The `val` of the newest object of `deltas`.
pub(super) fn newest_val(deltas: &Deltas<ConfigMap>) -> String {
    data(deltas.newest().expect("non-empty").object.object(), "val")
}

pub(super) fn d(delta_type: DeltaType, obj: &Obj) -> Delta<ConfigMap> {
    Delta::new(delta_type, obj.clone())
}

pub(super) fn tomb(name: &str, obj: &Obj) -> Delta<ConfigMap> {
    Delta::new(
        Deleted,
        MaybeTombstone::DeletedFinalStateUnknown {
            key: ObjectKey::new(None, name),
            obj: obj.clone(),
        },
    )
}

pub(super) fn deltas(v: Vec<Delta<ConfigMap>>) -> Deltas<ConfigMap> {
    Deltas::from(v)
}

/// As client-go's `literalListerGetter`: a fixed list of known objects.
pub(super) struct Literal(pub(super) Vec<Obj>);

impl KeyListerGetter<ConfigMap> for Literal {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0
            .iter()
            .map(|o| ObjectKey::new(None, o.metadata.name.as_deref().unwrap_or_default()))
            .collect()
    }

    fn get(&self, key: &ObjectKey) -> Option<Obj> {
        self.0
            .iter()
            .find(|o| o.metadata.name.as_deref() == Some(key.as_str()))
            .cloned()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

pub(super) fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new()
}

pub(super) fn fifo_known(known: Vec<Obj>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new().cache_view(Arc::new(Literal(known)))
}

/// A FIFO over `known` that emits `Replaced` (not `Sync`) for listed objects, as
/// an informer's.
pub(super) fn fifo_known_replaced(known: Vec<Obj>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new()
        .cache_view(Arc::new(Literal(known)))
        .emit_replaced(true)
}

/// Pops one item; fails the test if none arrives within a second (instant under
/// paused time).
pub(super) async fn pop(f: &DeltaFifo<ConfigMap>) -> PoppedItem<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(1), f.pop_item())
        .await
        .expect("an item to pop")
        .expect("fifo not closed")
}

/// Applies a script of writes such as `"add foo 10, update bar 15, delete baz 20"`
/// to `f`: each writes `mk(name, val)`. `replace@RV foo:5 bar:6` replaces the
/// contents with `mk("foo", 5)` and `mk("bar", 6)` at resource version `RV`
/// (`replace` alone: none).
pub(super) fn apply(f: &DeltaFifo<ConfigMap>, script: &str) {
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

/// The `val` of the newest object of each of the next `n` pops.
pub(super) async fn pop_vals(f: &DeltaFifo<ConfigMap>, n: usize) -> Vec<String> {
    let mut vals = Vec::with_capacity(n);
    for _ in 0..n {
        vals.push(newest_val(&pop(f).await.deltas));
    }
    vals
}

/// Asserts that the queue holds one item, whose newest `val` is `val`, and that
/// popping it leaves nothing behind.
pub(super) async fn assert_pops_only(f: &DeltaFifo<ConfigMap>, val: &str) {
    assert_eq!(pop_vals(f, 1).await, [val]);
    assert_nothing_to_pop(f).await;
    assert!(f.deltas(&mk("foo", "")).unwrap().is_none());
}

/// The types of the deltas queued for `name`.
pub(super) fn delta_types(f: &DeltaFifo<ConfigMap>, name: &str) -> Vec<DeltaType> {
    let ds = f.deltas_by_key(&ObjectKey::new(None, name)).unwrap();
    ds.iter().map(|d| d.delta_type).collect()
}

/// Asserts nothing is left to pop.
pub(super) async fn assert_nothing_to_pop(f: &DeltaFifo<ConfigMap>) {
    assert!(f.is_empty(), "queue not empty: {:?}", f.list_keys());
    let r = tokio::time::timeout(Duration::from_millis(50), f.pop_item()).await;
    assert!(r.is_err(), "unexpected item: {r:?}");
}

/// Pops every item in turn, asserting each one's deltas, then asserts the queue is
/// empty; failures name `case`.
pub(super) async fn assert_drains(
    case: &str,
    f: &DeltaFifo<ConfigMap>,
    expected: Vec<Deltas<ConfigMap>>,
) {
    for (i, e) in expected.into_iter().enumerate() {
        assert_eq!(pop(f).await.deltas, e, "{case}: pop #{i}");
    }
    assert!(f.is_empty(), "{case}: left over: {:?}", f.list_keys());
}
