//! Every queue the suites build (per key, in order, and as an informer builds it in
//! front of a reflector), what they queue and pop, and the assertions on what comes
//! out, shown the same way for both modes.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};

use super::objects::{Obj, data, mk};
use super::stores::Literal;
use crate::fifo::{Delta, DeltaType, Deltas, Entry, Fifo, FifoError, Popped, QueueMode};
use crate::listwatch::ListerWatcher;
use crate::object::{MaybeTombstone, Object, ObjectKey};
use crate::reflector::{Reflector, ReflectorOptions};
use crate::store::{Indexers, Writer};

// ---------- queues ----------

/// An empty per-key queue with no cache.
pub(crate) fn fifo() -> Fifo<ConfigMap> {
    Fifo::new(QueueMode::PerKey)
}

/// A per-key queue whose cache holds `known`.
pub(crate) fn fifo_known(known: Vec<Obj>) -> Fifo<ConfigMap> {
    fifo().cache_view(Arc::new(Literal(known)))
}

/// A per-key queue over `known` that emits `Replaced` (not `Sync`) for listed
/// objects, as an informer's.
pub(crate) fn fifo_known_replaced(known: Vec<Obj>) -> Fifo<ConfigMap> {
    fifo_known(known).emit_replaced(true)
}

/// An in-order queue with atomic lists (as an informer's) whose cache holds `known`.
pub(crate) fn in_order(known: Vec<Obj>) -> Fifo<ConfigMap> {
    Fifo::new(QueueMode::InOrder).cache_view(Arc::new(Literal(known)))
}

/// An in-order queue without atomic lists over `known`, as client-go's
/// `NewRealFIFO(keyFunc, literalListerGetter(known), nil)`.
pub(crate) fn in_order_per_object(known: Vec<Obj>) -> Fifo<ConfigMap> {
    in_order(known).atomic(false)
}

/// The queue client-go's tests build for `mode` over `known`: the DeltaFIFO with
/// known objects per key, `NewRealFIFO` (lists not atomic) in order.
pub(crate) fn ported(mode: QueueMode, known: Vec<Obj>) -> Fifo<ConfigMap> {
    match mode {
        QueueMode::PerKey => fifo_known(known),
        QueueMode::InOrder => in_order_per_object(known),
    }
}

/// The writes of client-go's transformer tests (both FIFOs): adds, an update and a
/// delete, two empty relists around an add.
pub(crate) fn transformer_writes(f: &Fifo<ConfigMap>) {
    f.add(mk("foo", 10)).unwrap();
    f.add(mk("bar", 11)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();
    f.replace(vec![], "").unwrap();
    f.add(mk("bar", 16)).unwrap();
    f.replace(vec![], "").unwrap();
}

/// Declares, for the test function `$name` taking a [`QueueMode`], a module
/// `$name` with one test per mode (`in_order`, `per_key`) under the attribute given:
/// one body, run and reported once per queue.
macro_rules! each_queue {
    (#[$test:meta] $name:ident) => {
        mod $name {
            #[$test]
            async fn in_order() {
                super::$name(crate::fifo::QueueMode::InOrder).await;
            }

            #[$test]
            async fn per_key() {
                super::$name(crate::fifo::QueueMode::PerKey).await;
            }
        }
    };
}
pub(crate) use each_queue;

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
pub(crate) fn delta_types(f: &Fifo<ConfigMap>, name: &str) -> Vec<DeltaType> {
    let ds = f.deltas_by_key(&ObjectKey::new(None, name)).unwrap();
    ds.iter().map(|d| d.delta_type).collect()
}

// ---------- writes ----------

/// Applies a script of writes such as `"add foo 10, update bar 15, delete baz 20"`
/// to `f`: each writes `mk(name, val)`. `replace@RV foo:5 bar:6` replaces the
/// contents with `mk("foo", 5)` and `mk("bar", 6)` at resource version `RV`
/// (`replace` alone: none).
pub(crate) fn apply(f: &Fifo<ConfigMap>, script: &str) {
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

/// One popped object's key and changes, as the per-key suites read them.
#[derive(Debug, PartialEq)]
pub(crate) struct PoppedItem<K> {
    pub(crate) key: ObjectKey,
    pub(crate) deltas: Deltas<K>,
    pub(crate) is_in_initial_list: bool,
}

impl<K> From<Popped<K>> for PoppedItem<K> {
    fn from(p: Popped<K>) -> Self {
        let Entry::Deltas(deltas) = p.entry else {
            panic!("not an object's changes");
        };
        PoppedItem {
            key: p.key.expect("an object's changes are keyed"),
            deltas,
            is_in_initial_list: p.is_in_initial_list,
        }
    }
}

/// Pops of an object's changes, whole.
pub(crate) trait PopItem<K> {
    /// Pops one entry, an object's changes, and runs `process` on it.
    async fn pop_with<R>(&self, process: impl FnOnce(PoppedItem<K>) -> R) -> Result<R, FifoError>;

    /// Pops one entry, an object's changes.
    async fn pop_item(&self) -> Result<PoppedItem<K>, FifoError> {
        self.pop_with(|item| item).await
    }
}

impl<K: Object> PopItem<K> for Fifo<K> {
    async fn pop_with<R>(&self, process: impl FnOnce(PoppedItem<K>) -> R) -> Result<R, FifoError> {
        self.pop_batch(1, |mut batch, _| batch.pop().map(|p| process(p.into())))
            .await
            .map(|r| r.expect("a batch of one entry"))
    }
}

/// Pops one item; fails the test if none arrives within a second (instant under
/// paused time).
pub(crate) async fn pop<K: Object>(f: &Fifo<K>) -> PoppedItem<K> {
    tokio::time::timeout(Duration::from_secs(1), f.pop_item())
        .await
        .expect("an item to pop")
        .expect("fifo not closed")
}

/// The `val` of the newest object of each of the next `n` pops.
pub(crate) async fn pop_vals(f: &Fifo<ConfigMap>, n: usize) -> Vec<String> {
    let mut vals = Vec::with_capacity(n);
    for _ in 0..n {
        vals.push(newest_val(&pop(f).await.deltas));
    }
    vals
}

/// Asserts that the queue holds one item, whose newest `val` is `val`, and that
/// popping it leaves nothing behind.
pub(crate) async fn assert_pops_only(f: &Fifo<ConfigMap>, val: &str) {
    assert_eq!(pop_vals(f, 1).await, [val]);
    assert_nothing_to_pop(f).await;
    assert!(f.deltas(&mk("foo", "")).unwrap().is_none());
}

/// Asserts nothing is left to pop (within a second of the paused clock).
pub(crate) async fn assert_nothing_to_pop(f: &Fifo<ConfigMap>) {
    assert!(f.is_empty(), "queue not empty: {:?}", f.list_keys());
    let r = tokio::time::timeout(Duration::from_secs(1), f.pop(|e, _| show(&e))).await;
    assert!(r.is_err(), "unexpected entry: {r:?}");
}

/// Pops every item in turn, asserting each one's deltas, then asserts the queue is
/// empty; failures name `case`.
pub(crate) async fn assert_drains(
    case: &str,
    f: &Fifo<ConfigMap>,
    expected: Vec<Deltas<ConfigMap>>,
) {
    for (i, e) in expected.into_iter().enumerate() {
        assert_eq!(pop(f).await.deltas, e, "{case}: pop #{i}");
    }
    assert!(f.is_empty(), "{case}: left over: {:?}", f.list_keys());
}

/// An entry as one line: `"Added foo=10"`, `"Deleted~ bar=6"` (a tombstone; an
/// object's several changes joined with `, `), `"ReplacedAll@5 [foo=1]"`,
/// `"SyncAll"`, `"Bookmark@7"`.
pub(crate) fn show(entry: &Entry<ConfigMap>) -> String {
    let named = |o: &ConfigMap| {
        format!(
            "{}={}",
            o.metadata.name.as_deref().unwrap_or_default(),
            data(o, "val")
        )
    };
    match entry {
        Entry::Deltas(ds) => {
            let shown: Vec<String> = ds
                .iter()
                .map(|d| {
                    let mark = if d.object.is_tombstone() { "~" } else { "" };
                    format!("{:?}{mark} {}", d.delta_type, named(d.object.object()))
                })
                .collect();
            shown.join(", ")
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

/// The queued entries, shown, without popping them.
pub(crate) fn queued(f: &Fifo<ConfigMap>) -> Vec<String> {
    f.entries().iter().map(show).collect()
}

/// Pops one entry (within a second of the paused clock), shown.
pub(crate) async fn pop_shown(f: &Fifo<ConfigMap>) -> String {
    tokio::time::timeout(Duration::from_secs(1), f.pop(|e, _| show(&e)))
        .await
        .expect("an entry to pop")
        .expect("the FIFO is open")
}

/// Pops everything queued, shown.
pub(crate) async fn pop_all_shown(f: &Fifo<ConfigMap>) -> Vec<String> {
    let mut out = Vec::new();
    while !f.is_empty() {
        out.push(pop_shown(f).await);
    }
    out
}

// ---------- the queue a reflector writes into, as an informer builds it ----------

/// A reflector into a queue of `mode` whose cache is an (empty) informer cache,
/// built as an informer builds it.
pub(crate) fn reflector_into_informer_queue<L: ListerWatcher<Pod> + 'static>(
    mode: QueueMode,
    lw: L,
    options: ReflectorOptions,
) -> (Arc<Fifo<Pod>>, Arc<Reflector<Pod, L>>) {
    let cache = Writer::<Pod>::new(Indexers::new()).reader();
    let fifo = Arc::new(Fifo::new(mode).cache(cache).emit_replaced(true));
    let r = Arc::new(Reflector::with_queue(lw, Arc::clone(&fifo), options));
    (fifo, r)
}

/// `delta_fifo` or `in_order`, for `mode`: the pops a suite expects of each mode
/// where they differ.
pub(crate) fn per_mode<'a>(
    mode: QueueMode,
    per_key: &'a [&'a str],
    in_order: &'a [&'a str],
) -> &'a [&'a str] {
    match mode {
        QueueMode::PerKey => per_key,
        _ => in_order,
    }
}

/// Pops one entry of an informer's queue (within a second of the paused clock),
/// shown as one line: `[initial ]KEY: CHANGE, CHANGE` for an object's changes, each
/// change `TYPE[~]@RV` (`~`: a tombstone); `[initial ]ReplacedAll@RV [a@1 b@2]`,
/// `[initial ]Bookmark@RV` or `[initial ]SyncAll` for a whole list, bookmark or
/// resync.
pub(crate) async fn pop_pod_shown(f: &Fifo<Pod>) -> String {
    let name_rv = |pod: &Pod| {
        format!(
            "{}@{}",
            pod.metadata.name.as_deref().unwrap_or_default(),
            pod.metadata.resource_version.as_deref().unwrap_or_default()
        )
    };
    let shown = f.pop_batch(1, |mut popped, _| {
        let p = popped.pop().expect("one entry");
        let initial = if p.is_in_initial_list { "initial " } else { "" };
        let shown = match &p.entry {
            Entry::Deltas(ds) => {
                let changes: Vec<String> = ds
                    .iter()
                    .map(|d| {
                        let mark = if d.object.is_tombstone() { "~" } else { "" };
                        let rv = d.object.object().metadata.resource_version.as_deref();
                        format!("{:?}{mark}@{}", d.delta_type, rv.unwrap_or_default())
                    })
                    .collect();
                let key = p.key.as_ref().expect("a keyed change");
                format!("{key}: {}", changes.join(", "))
            }
            Entry::ReplacedAll {
                objects,
                resource_version,
            } => {
                let objects: Vec<String> = objects.iter().map(|o| name_rv(o)).collect();
                format!("ReplacedAll@{resource_version} [{}]", objects.join(" "))
            }
            Entry::SyncAll => "SyncAll".to_owned(),
            Entry::Bookmark { resource_version } => format!("Bookmark@{resource_version}"),
        };
        format!("{initial}{shown}")
    });
    tokio::time::timeout(Duration::from_secs(1), shown)
        .await
        .expect("an item to pop")
        .expect("the FIFO is open")
}

/// Pops `expected.len()` entries in turn and asserts each, shown by
/// [`pop_pod_shown`], equals the line `expected` has for it.
pub(crate) async fn assert_pops(f: &Fifo<Pod>, expected: &[&str]) {
    let mut popped = Vec::with_capacity(expected.len());
    for _ in expected {
        popped.push(pop_pod_shown(f).await);
    }
    assert_eq!(popped, expected);
}

/// Asserts the queue syncs within a second of the paused clock.
pub(crate) async fn assert_syncs<K>(f: &Fifo<K>) {
    tokio::time::timeout(Duration::from_secs(1), f.wait_synced())
        .await
        .expect("synced once the first list's last item was popped");
}
