//! Conformance tests of the DeltaFifo: client-go's `delta_fifo_test.go`, ported test
//! by test with the same expected delta sequences, plus cancel-safety tests, the
//! processing lock (what waits for a running `pop` callback and what does not) and
//! first lists streamed in page by page.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::fifo::{
    Delta, DeltaFifo, DeltaFifoOptions, DeltaObject, DeltaType, Deltas, FifoError, PoppedItem,
    TransformFunc,
};
use crate::object::{DeletedFinalStateUnknown, ObjectKey};
use crate::store::{KeyListerGetter, Store, StoreError, StoreSink};
use k8s_openapi::api::core::v1::ConfigMap;

use DeltaType::{Added, Deleted, Replaced, Sync, Updated};

type Obj = Arc<ConfigMap>;

/// As client-go's `mkFifoObj`: an object keyed by `name` carrying `val`.
fn mk(name: &str, val: impl ToString) -> Obj {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some(BTreeMap::from([("val".to_owned(), val.to_string())]));
    Arc::new(cm)
}

fn data(obj: &ConfigMap, field: &str) -> String {
    obj.data
        .as_ref()
        .and_then(|d| d.get(field))
        .cloned()
        .unwrap_or_default()
}

/// The `val` of the newest object of `deltas`.
fn newest_val(deltas: &Deltas<ConfigMap>) -> String {
    data(deltas.newest().expect("non-empty").object.object(), "val")
}

fn d(delta_type: DeltaType, obj: &Obj) -> Delta<ConfigMap> {
    Delta::new(delta_type, obj.clone())
}

fn tomb(name: &str, obj: &Obj) -> Delta<ConfigMap> {
    Delta::new(
        Deleted,
        DeletedFinalStateUnknown {
            key: ObjectKey::new(None, name),
            obj: obj.clone(),
        },
    )
}

fn deltas(v: Vec<Delta<ConfigMap>>) -> Deltas<ConfigMap> {
    Deltas::from(v)
}

/// As client-go's `literalListerGetter`: a fixed list of known objects.
struct Literal(Vec<Obj>);

impl KeyListerGetter<ConfigMap> for Literal {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.0
            .iter()
            .map(|o| ObjectKey::new(None, o.metadata.name.as_deref().unwrap_or_default()))
            .collect()
    }

    fn get_by_key(&self, key: &ObjectKey) -> Option<Obj> {
        self.0
            .iter()
            .find(|o| o.metadata.name.as_deref() == Some(key.as_str()))
            .cloned()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions::default())
}

fn fifo_known(known: Vec<Obj>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions::default().known_objects(Arc::new(Literal(known))))
}

/// Pops one item; fails the test if none arrives within a second (instant under
/// paused time).
async fn pop(f: &DeltaFifo<ConfigMap>) -> PoppedItem<ConfigMap> {
    tokio::time::timeout(Duration::from_secs(1), f.pop_item())
        .await
        .expect("an item to pop")
        .expect("fifo not closed")
}

/// Asserts nothing is left to pop.
async fn assert_nothing_to_pop(f: &DeltaFifo<ConfigMap>) {
    assert!(f.is_empty(), "queue not empty: {:?}", f.list_keys());
    let r = tokio::time::timeout(Duration::from_millis(50), f.pop_item()).await;
    assert!(r.is_err(), "unexpected item: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_fifo_basic() {
    let f = Arc::new(fifo());
    const AMOUNT: usize = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let f = Arc::clone(&f);
            std::thread::spawn(move || {
                for i in 0..AMOUNT {
                    f.add(mk(&format!("{prefix}{i}"), i + 1)).unwrap();
                }
            })
        })
        .collect();
    let mut last = [0usize; 2];
    for _ in 0..AMOUNT * 2 {
        let item = tokio::time::timeout(Duration::from_secs(10), f.pop_item())
            .await
            .expect("an item")
            .expect("open");
        let producer = usize::from(item.key.as_str().starts_with('b'));
        let val: usize = newest_val(&item.deltas).parse().unwrap();
        assert!(
            val > last[producer],
            "got {val} out of order, last was {}",
            last[producer]
        );
        last[producer] = val;
    }
    assert_eq!(last, [AMOUNT, AMOUNT]);
    for p in producers {
        p.join().unwrap();
    }
    assert!(f.is_empty());
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_with_delete_delta_in() {
    let old = mk("foo", 1);
    let new = mk("foo", 2);
    let f = fifo_known(vec![old.clone()]);
    f.delete(old.clone()).unwrap();
    f.replace(vec![new.clone()], "").unwrap();
    assert_eq!(
        pop(&f).await.deltas,
        deltas(vec![d(Deleted, &old), d(Sync, &new)])
    );
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_makes_deletions_for_objects_only_in_queue() {
    let obj = mk("foo", 2);
    let obj_v2 = mk("foo", 3);
    type Ops = Box<dyn Fn(&DeltaFifo<ConfigMap>)>;
    let cases: Vec<(&str, bool, Ops, Deltas<ConfigMap>)> = vec![
        (
            "Added object should be deleted on Replace",
            false,
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.replace(vec![], "0").unwrap();
                }
            }),
            deltas(vec![d(Added, &obj), tomb("foo", &obj)]),
        ),
        (
            "Replaced object should have only a single Delete",
            true,
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.replace(vec![obj.clone()], "0").unwrap();
                    f.replace(vec![], "0").unwrap();
                }
            }),
            deltas(vec![d(Added, &obj), d(Replaced, &obj), tomb("foo", &obj)]),
        ),
        (
            "Deleted object should have only a single Delete",
            false,
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.delete(obj.clone()).unwrap();
                    f.replace(vec![], "0").unwrap();
                }
            }),
            deltas(vec![d(Added, &obj), d(Deleted, &obj)]),
        ),
        (
            "Synced objects should have a single delete",
            false,
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.replace(vec![obj.clone()], "0").unwrap();
                    f.replace(vec![obj.clone()], "0").unwrap();
                    f.replace(vec![], "0").unwrap();
                }
            }),
            deltas(vec![
                d(Added, &obj),
                d(Sync, &obj),
                d(Sync, &obj),
                tomb("foo", &obj),
            ]),
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            false,
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.replace(vec![], "0").unwrap();
                    f.replace(vec![], "1").unwrap();
                }
            }),
            deltas(vec![d(Added, &obj), tomb("foo", &obj)]),
        ),
        (
            "Added and deleted and added object should be deleted",
            false,
            Box::new({
                let (obj, obj_v2) = (obj.clone(), obj_v2.clone());
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.delete(obj.clone()).unwrap();
                    f.add(obj_v2.clone()).unwrap();
                    f.replace(vec![], "0").unwrap();
                }
            }),
            deltas(vec![
                d(Added, &obj),
                d(Deleted, &obj),
                d(Added, &obj_v2),
                tomb("foo", &obj_v2),
            ]),
        ),
    ];
    for (name, emit_replaced, ops, expected) in cases {
        for with_known in [true, false] {
            let mut options = DeltaFifoOptions::default().emit_delta_type_replaced(emit_replaced);
            if with_known {
                options = options.known_objects(Arc::new(Literal(vec![])));
            }
            let f = DeltaFifo::new(options);
            ops(&f);
            assert_eq!(
                pop(&f).await.deltas,
                expected,
                "{name} (known objects: {with_known})"
            );
            assert!(
                f.is_empty(),
                "{name} (known objects: {with_known}): extra items {:?}",
                f.list_keys()
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_add_update() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();
    assert_eq!(f.list(), vec![mk("foo", 15)]);
    assert_eq!(f.list_keys(), vec![ObjectKey::new(None, "foo")]);

    let first = pop(&f).await;
    assert_eq!(newest_val(&first.deltas), "15");
    assert_nothing_to_pop(&f).await;
    assert!(f.deltas(&mk("foo", "")).unwrap().is_none());
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_transformer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let xfrm: TransformFunc<ConfigMap> = {
        let calls = Arc::clone(&calls);
        Arc::new(move |obj: Obj| {
            calls.fetch_add(1, Ordering::SeqCst);
            let mut obj = Arc::unwrap_or_clone(obj);
            let n: usize = data(&obj, "xfrm").parse().unwrap_or(0);
            obj.data
                .get_or_insert_default()
                .insert("xfrm".into(), (n + 1).to_string());
            Arc::new(obj)
        })
    };
    let f = DeltaFifo::new(DeltaFifoOptions::default().transform(xfrm));
    f.add(mk("foo", 10)).unwrap();
    f.add(mk("bar", 11)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();
    f.replace(vec![], "").unwrap();
    f.add(mk("bar", 16)).unwrap();
    f.replace(vec![], "").unwrap();

    assert_eq!(
        f.list_keys(),
        vec![ObjectKey::new(None, "foo"), ObjectKey::new(None, "bar")]
    );
    // One call per object entering; none for the three tombstones.
    assert_eq!(calls.load(Ordering::SeqCst), 5);

    let foo = pop(&f).await.deltas;
    let newest = foo.newest().unwrap();
    assert_eq!(newest.delta_type, Deleted);
    let DeltaObject::Object(obj) = &newest.object else {
        panic!("expected regular deletion of foo, got {newest:?}");
    };
    assert_eq!(obj.metadata.name.as_deref(), Some("foo"));
    assert_eq!(data(obj, "val"), "15");
    assert_eq!(
        data(obj, "xfrm"),
        "1",
        "foo transformed wrong number of times"
    );

    let bar = pop(&f).await.deltas;
    let newest = bar.newest().unwrap();
    let DeltaObject::DeletedFinalStateUnknown(t) = &newest.object else {
        panic!("expected tombstone deletion of bar, got {newest:?}");
    };
    assert_eq!(t.key.as_str(), "bar");
    assert_eq!(data(&t.obj, "val"), "16");
    assert_eq!(
        data(&t.obj, "xfrm"),
        "1",
        "tombstoned bar transformed wrong number of times"
    );
    // Every object in every delta went through the transform exactly once.
    for delta in foo.iter().chain(bar.iter()) {
        assert_eq!(data(delta.object.object(), "xfrm"), "1", "{delta:?}");
    }
}

/// An identity transform and how many times it ran.
fn counting_identity() -> (Arc<AtomicUsize>, TransformFunc<ConfigMap>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let xfrm: TransformFunc<ConfigMap> = Arc::new(move |obj: Obj| {
        counted.fetch_add(1, Ordering::SeqCst);
        obj
    });
    (calls, xfrm)
}

/// client-go skips the transform for resync's `Sync` deltas: the known objects were
/// transformed when they entered.
#[tokio::test(start_paused = true)]
async fn delta_fifo_transformer_skips_resync() {
    let (calls, xfrm) = counting_identity();
    let known = mk("foo", 5);
    let f = DeltaFifo::new(
        DeltaFifoOptions::default()
            .known_objects(Arc::new(Literal(vec![known.clone()])))
            .transform(xfrm),
    );
    f.resync().unwrap();
    let item = pop(&f).await;
    assert_eq!(item.deltas, deltas(vec![d(Sync, &known)]));
    assert!(Arc::ptr_eq(item.deltas[0].object.object(), &known));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// `cached_unchanged` finds the known object with the same resourceVersion (what the
/// reflector reuses during a relist), and `replace` does not transform such an
/// object again: only the freshly decoded one goes through the transform.
#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_does_not_transform_reused_known_objects() {
    let (calls, xfrm) = counting_identity();
    let with_rv = |name: &str, rv: &str| {
        let mut cm = (*mk(name, rv)).clone();
        cm.metadata.resource_version = Some(rv.to_owned());
        Arc::new(cm)
    };
    let (foo, bar) = (with_rv("foo", "5"), with_rv("bar", "6"));
    let f = DeltaFifo::new(
        DeltaFifoOptions::default()
            .known_objects(Arc::new(Literal(vec![foo.clone(), bar.clone()])))
            .emit_delta_type_replaced(true)
            .transform(xfrm),
    );
    let reused = f.cached_unchanged(&with_rv("foo", "5")).expect("same RV");
    assert!(Arc::ptr_eq(&reused, &foo));
    assert!(
        f.cached_unchanged(&with_rv("bar", "9")).is_none(),
        "RV moved"
    );
    assert!(
        f.cached_unchanged(&with_rv("baz", "1")).is_none(),
        "unknown"
    );

    let new_bar = with_rv("bar", "9");
    f.replace(vec![reused, new_bar.clone()], "9").unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "only the new bar is transformed"
    );
    let item = pop(&f).await;
    assert!(Arc::ptr_eq(item.deltas[0].object.object(), &foo));
    assert_eq!(item.deltas[0].delta_type, Replaced);
    let item = pop(&f).await;
    assert!(Arc::ptr_eq(item.deltas[0].object.object(), &new_bar));
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_enqueueing_no_lister() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("bar", 15)).unwrap();
    f.add(mk("qux", 17)).unwrap();
    f.delete(mk("qux", 18)).unwrap();
    // baz does not exist: nothing is queued.
    f.delete(mk("baz", 20)).unwrap();
    for expect in ["10", "15", "18"] {
        assert_eq!(newest_val(&pop(&f).await.deltas), expect);
    }
    assert_nothing_to_pop(&f).await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_enqueueing_with_lister() {
    let f = fifo_known(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("bar", 15)).unwrap();
    // baz is known: the deletion is queued.
    f.delete(mk("baz", 20)).unwrap();
    for expect in ["10", "15", "20"] {
        assert_eq!(newest_val(&pop(&f).await.deltas), expect);
    }
    assert_nothing_to_pop(&f).await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_add_replace() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.replace(vec![mk("foo", 15)], "0").unwrap();
    let first = pop(&f).await;
    assert_eq!(newest_val(&first.deltas), "15");
    assert_nothing_to_pop(&f).await;
    assert!(f.deltas(&mk("foo", "")).unwrap().is_none());
}

#[test]
fn delta_fifo_resync_non_existing() {
    let f = fifo_known(vec![mk("foo", 5)]);
    f.delete(mk("foo", 10)).unwrap();
    f.resync().unwrap();
    let ds = f.deltas_by_key(&ObjectKey::new(None, "foo")).unwrap();
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].delta_type, Deleted);
}

#[test]
fn delta_fifo_resync() {
    let f = fifo_known(vec![mk("foo", 5)]);
    f.resync().unwrap();
    let ds = f.deltas_by_key(&ObjectKey::new(None, "foo")).unwrap();
    assert_eq!(ds.len(), 1, "{ds:?}");
    assert_eq!(ds[0].delta_type, Sync);
}

#[test]
fn delta_fifo_resync_without_known_objects_does_nothing() {
    let f = fifo();
    f.resync().unwrap();
    assert!(f.is_empty());
}

#[test]
fn delta_fifo_delete_existing_non_propagated() {
    let f = fifo_known(vec![]);
    f.add(mk("foo", 5)).unwrap();
    f.delete(mk("foo", 6)).unwrap();
    let ds = f.deltas_by_key(&ObjectKey::new(None, "foo")).unwrap();
    assert_eq!(ds.len(), 2, "{ds:?}");
    assert_eq!(ds.newest().unwrap().delta_type, Deleted);
}

async fn assert_pops(f: &DeltaFifo<ConfigMap>, expected: Vec<Deltas<ConfigMap>>) {
    for (i, e) in expected.into_iter().enumerate() {
        assert_eq!(pop(f).await.deltas, e, "pop #{i}");
    }
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_makes_deletions() {
    let known = || vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)];

    // With a pre-existing Delete.
    let f = fifo_known(known());
    f.delete(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_pops(
        &f,
        vec![
            deltas(vec![d(Deleted, &mk("baz", 10))]),
            deltas(vec![d(Sync, &mk("foo", 5))]),
            // bar had no delete and was not listed: a tombstone with the known object.
            deltas(vec![tomb("bar", &mk("bar", 6))]),
        ],
    )
    .await;
    assert!(f.is_empty());

    // Starting with an Add instead of a Delete.
    let f = fifo_known(known());
    f.add(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_pops(
        &f,
        vec![
            deltas(vec![d(Added, &mk("baz", 10)), tomb("baz", &mk("baz", 10))]),
            deltas(vec![d(Sync, &mk("foo", 5))]),
            deltas(vec![tomb("bar", &mk("bar", 6))]),
        ],
    )
    .await;
    assert!(f.is_empty());

    // Deleted and recreated in the queue, then deleted by a Replace.
    let f = fifo_known(known());
    f.delete(mk("bar", 6)).unwrap();
    f.add(mk("bar", 100)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_pops(
        &f,
        vec![
            deltas(vec![
                d(Deleted, &mk("bar", 6)),
                d(Added, &mk("bar", 100)),
                // The queued object is newer than the known one: the tombstone has it.
                tomb("bar", &mk("bar", 100)),
            ]),
            deltas(vec![d(Sync, &mk("foo", 5))]),
            deltas(vec![tomb("baz", &mk("baz", 7))]),
        ],
    )
    .await;
    assert!(f.is_empty());

    // Synced first: the tombstone uses the latest version.
    let f = fifo_known(known());
    f.replace(vec![mk("bar", 100), mk("foo", 5)], "0").unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_pops(
        &f,
        vec![
            deltas(vec![d(Sync, &mk("bar", 100)), tomb("bar", &mk("bar", 100))]),
            deltas(vec![d(Sync, &mk("foo", 5)), d(Sync, &mk("foo", 5))]),
            deltas(vec![tomb("baz", &mk("baz", 7))]),
        ],
    )
    .await;
    assert!(f.is_empty());

    // Without known objects.
    let f = fifo();
    f.add(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_pops(
        &f,
        vec![
            deltas(vec![d(Added, &mk("baz", 10)), tomb("baz", &mk("baz", 10))]),
            deltas(vec![d(Sync, &mk("foo", 5))]),
        ],
    )
    .await;
    assert!(f.is_empty());
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_makes_deletions_replaced() {
    let f = DeltaFifo::new(
        DeltaFifoOptions::default()
            .known_objects(Arc::new(Literal(vec![
                mk("foo", 5),
                mk("bar", 6),
                mk("baz", 7),
            ])))
            .emit_delta_type_replaced(true),
    );
    f.delete(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 6)], "0").unwrap();
    assert_pops(
        &f,
        vec![
            deltas(vec![d(Deleted, &mk("baz", 10))]),
            deltas(vec![d(Replaced, &mk("foo", 6))]),
            deltas(vec![tomb("bar", &mk("bar", 6))]),
        ],
    )
    .await;
    assert!(f.is_empty());
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_delta_type() {
    let f = DeltaFifo::new(
        DeltaFifoOptions::default()
            .known_objects(Arc::new(Literal(vec![mk("foo", 5)])))
            .emit_delta_type_replaced(true),
    );
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_pops(&f, vec![deltas(vec![d(Replaced, &mk("foo", 5))])]).await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_update_resync_race() {
    let f = fifo_known(vec![mk("foo", 5)]);
    f.update(mk("foo", 6)).unwrap();
    f.resync().unwrap();
    assert_pops(&f, vec![deltas(vec![d(Updated, &mk("foo", 6))])]).await;
    assert!(f.is_empty());
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_has_synced_correct_on_deletion() {
    let f = fifo_known(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    let expected = [
        deltas(vec![d(Sync, &mk("foo", 5))]),
        deltas(vec![tomb("bar", &mk("bar", 6))]),
        deltas(vec![tomb("baz", &mk("baz", 7))]),
    ];
    for e in expected {
        assert!(!f.has_synced(), "expected has_synced to be false");
        let item = pop(&f).await;
        assert_eq!(item.deltas, e);
        assert!(item.is_in_initial_list, "expected an initial list item");
    }
    assert!(f.has_synced(), "expected has_synced to be true");
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_detect_line_jumpers() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.add(mk("bar", 1)).unwrap();
    f.add(mk("foo", 11)).unwrap();
    f.add(mk("foo", 13)).unwrap();
    f.add(mk("zab", 30)).unwrap();
    assert_eq!(newest_val(&pop(&f).await.deltas), "13");
    // foo must not jump back in line.
    f.add(mk("foo", 14)).unwrap();
    for expect in ["1", "30", "14"] {
        assert_eq!(newest_val(&pop(&f).await.deltas), expect);
    }
}

#[test]
fn delta_fifo_key_of() {
    let f = fifo();
    let nobody = Arc::new(ConfigMap::default());
    let t = |name: &str| -> DeltaObject<ConfigMap> {
        DeletedFinalStateUnknown {
            key: ObjectKey::new(None, name),
            obj: nobody.clone(),
        }
        .into()
    };
    assert_eq!(f.key_of(&mk("A", "")).unwrap().as_str(), "A");
    assert_eq!(f.key_of_object(&t("B")).unwrap().as_str(), "B");
    let c = deltas(vec![Delta::new(Sync, mk("C", ""))]);
    assert_eq!(f.key_of_deltas(&c).unwrap().as_str(), "C");
    let dd = deltas(vec![Delta::new(Deleted, t("D"))]);
    assert_eq!(f.key_of_deltas(&dd).unwrap().as_str(), "D");
    assert_eq!(f.key_of_deltas(&Deltas::new()), Err(FifoError::EmptyDeltas));
    assert!(matches!(f.key_of(&nobody), Err(FifoError::Key(_))));
}

enum Action {
    Add(&'static str, u32),
    Replace(Vec<(&'static str, u32)>),
    Pop,
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_has_synced() {
    use Action::{Add, Pop, Replace};
    let cases: Vec<(Vec<Action>, bool)> = vec![
        (vec![], false),
        (vec![Add("a", 1)], true),
        (vec![Replace(vec![])], true),
        (vec![Replace(vec![("a", 1), ("b", 2)])], false),
        (vec![Replace(vec![("a", 1), ("b", 2)]), Pop], false),
        (vec![Replace(vec![("a", 1), ("b", 2)]), Pop, Pop], true),
        // Cannot happen in practice (a list has no duplicate keys), as in client-go.
        (vec![Replace(vec![("a", 1), ("a", 2)]), Pop], true),
    ];
    for (i, (actions, expected)) in cases.into_iter().enumerate() {
        let f = fifo();
        for action in actions {
            match action {
                Add(name, val) => f.add(mk(name, val)).unwrap(),
                Replace(items) => f
                    .replace(items.into_iter().map(|(n, v)| mk(n, v)).collect(), "0")
                    .unwrap(),
                Pop => {
                    pop(&f).await;
                }
            }
        }
        assert_eq!(f.has_synced(), expected, "case {i}");
    }
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_pop_should_unblock_when_closed() {
    let f = Arc::new(fifo_known(vec![mk("foo", 5)]));
    let pops: Vec<_> = (0..10)
        .map(|_| {
            let f = Arc::clone(&f);
            tokio::spawn(async move { f.pop(|_| ()).await })
        })
        .collect();
    tokio::task::yield_now().await;
    f.close();
    for p in pops {
        let r = tokio::time::timeout(Duration::from_millis(500), p)
            .await
            .expect("pop returned within 500 ms of close")
            .unwrap();
        assert_eq!(r, Err(FifoError::Closed));
    }
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_close_drains_queued_items_then_fails_writes() {
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    f.add(mk("b", 2)).unwrap();
    f.close();
    assert!(f.is_closed());
    assert_eq!(f.add(mk("c", 3)), Err(StoreError::Closed));
    assert_eq!(f.replace(vec![], "0"), Err(StoreError::Closed));
    assert_eq!(pop(&f).await.key.as_str(), "a");
    assert_eq!(pop(&f).await.key.as_str(), "b");
    assert_eq!(f.pop_item().await, Err(FifoError::Closed));
}

/// A `pop` dropped while waiting takes nothing: the next pop gets the item whole.
#[tokio::test(start_paused = true)]
async fn delta_fifo_pop_cancelled_while_waiting_loses_nothing() {
    let f = fifo();
    {
        let fut = f.pop_item();
        tokio::pin!(fut);
        assert!(futures::poll!(fut.as_mut()).is_pending());
        assert!(futures::poll!(fut.as_mut()).is_pending());
    }
    let obj = mk("a", 1);
    f.add(obj.clone()).unwrap();
    f.update(obj.clone()).unwrap();
    let item = pop(&f).await;
    assert_eq!(item.deltas, deltas(vec![d(Added, &obj), d(Updated, &obj)]));
    assert!(f.is_empty());
}

/// A `pop` woken for an item but dropped before it ran passes the wake-up on to
/// another waiting `pop` (no lost wake-up).
#[tokio::test(start_paused = true)]
async fn delta_fifo_pop_cancelled_after_wakeup_passes_it_on() {
    let f = Arc::new(fifo());
    let first = {
        let f = Arc::clone(&f);
        async move { f.pop_item().await }
    };
    let mut first = Box::pin(first);
    assert!(futures::poll!(first.as_mut()).is_pending());
    let second = tokio::spawn({
        let f = Arc::clone(&f);
        async move { f.pop_item().await }
    });
    tokio::task::yield_now().await;
    f.add(mk("a", 1)).unwrap();
    // The wake-up went to `first`, the older waiter; drop it unpolled.
    drop(first);
    let item = tokio::time::timeout(Duration::from_secs(1), second)
        .await
        .expect("the second pop was woken")
        .unwrap()
        .unwrap();
    assert_eq!(item.key.as_str(), "a");
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_pop_runs_process_under_the_lock_and_returns_its_value() {
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    let (key, n, initial) = f
        .pop(|item| (item.key, item.deltas.len(), item.is_in_initial_list))
        .await
        .unwrap();
    assert_eq!((key.as_str(), n, initial), ("a", 1, false));
}

#[test]
fn delta_fifo_store_getters_return_newest_object() {
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    f.update(mk("a", 2)).unwrap();
    f.add(mk("b", 3)).unwrap();
    assert_eq!(f.get(&mk("a", "")).unwrap(), Some(mk("a", 2)));
    assert_eq!(f.get_by_key(&ObjectKey::new(None, "b")), Some(mk("b", 3)));
    assert_eq!(f.get_by_key(&ObjectKey::new(None, "c")), None);
    assert_eq!(f.list(), vec![mk("a", 2), mk("b", 3)]);
    assert_eq!(f.len(), 2);
    assert!(matches!(
        f.add(Arc::new(ConfigMap::default())),
        Err(StoreError::Key(_))
    ));
    assert!(matches!(
        f.replace(vec![mk("x", 1), Arc::new(ConfigMap::default())], "0"),
        Err(StoreError::Key(_))
    ));
    // A failed replace changes nothing.
    assert_eq!(f.len(), 2);
}

/// The consumer's cache, as an informer's indexer: updated by the `pop` callback.
#[derive(Default)]
struct Cache(std::sync::Mutex<BTreeMap<ObjectKey, Obj>>);

impl Cache {
    fn map(&self) -> std::sync::MutexGuard<'_, BTreeMap<ObjectKey, Obj>> {
        self.0.lock().unwrap()
    }

    /// Applies popped deltas as client-go's `HandleDeltas` does.
    fn apply(&self, item: &PoppedItem<ConfigMap>) {
        let mut map = self.map();
        for delta in &item.deltas {
            match delta.delta_type {
                Deleted => map.remove(&item.key),
                _ => map.insert(item.key.clone(), delta.object.object().clone()),
            };
        }
    }
}

impl KeyListerGetter<ConfigMap> for Cache {
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.map().keys().cloned().collect()
    }

    fn get_by_key(&self, key: &ObjectKey) -> Option<Obj> {
        self.map().get(key).cloned()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    Update(u8),
    Delete(u8),
    Replace(Vec<u8>),
    Resync,
    Pop,
}

fn op() -> impl proptest::strategy::Strategy<Value = Op> {
    use proptest::prelude::*;
    let key = 0u8..6;
    prop_oneof![
        key.clone().prop_map(Op::Add),
        key.clone().prop_map(Op::Update),
        key.clone().prop_map(Op::Delete),
        proptest::collection::vec(key, 0..6).prop_map(Op::Replace),
        Just(Op::Resync),
        Just(Op::Pop),
        Just(Op::Pop),
    ]
}

fn pop_now(f: &DeltaFifo<ConfigMap>, cache: &Cache) {
    use futures::FutureExt;
    f.pop(|item| cache.apply(&item))
        .now_or_never()
        .expect("an item is ready")
        .expect("fifo open");
}

proptest::proptest! {
    /// Invariants under any sequence of operations, with the consumer's cache as the
    /// known objects: each key is queued once with non-empty deltas, no two
    /// consecutive deletions, `has_synced` never turns back to false; and after a
    /// final relist is drained, the cache holds exactly the relisted keys — no
    /// deletion is lost across a relist.
    #[test]
    fn delta_fifo_invariants_and_relist_converges(
        ops in proptest::collection::vec(op(), 0..40),
        last_list in proptest::collection::vec(0u8..6, 0..6),
    ) {
        let cache = Arc::new(Cache::default());
        let f = DeltaFifo::new(DeltaFifoOptions::default().known_objects(cache.clone()));
        let mut version = 0;
        let mut mk_v = |k: u8| {
            version += 1;
            mk(&format!("k{k}"), version)
        };
        let mut synced = false;
        for op in ops {
            match op {
                Op::Add(k) => f.add(mk_v(k)).unwrap(),
                Op::Update(k) => f.update(mk_v(k)).unwrap(),
                Op::Delete(k) => f.delete(mk_v(k)).unwrap(),
                Op::Replace(ks) => f.replace(ks.into_iter().map(&mut mk_v).collect(), "").unwrap(),
                Op::Resync => f.resync().unwrap(),
                Op::Pop => {
                    if !f.is_empty() {
                        pop_now(&f, &cache);
                    }
                }
            }
            let keys = f.list_keys();
            let unique: std::collections::HashSet<_> = keys.iter().collect();
            proptest::prop_assert_eq!(unique.len(), keys.len());
            proptest::prop_assert_eq!(f.len(), keys.len());
            for key in &keys {
                let ds = f.deltas_by_key(key).expect("queued key has deltas");
                proptest::prop_assert!(!ds.is_empty());
                proptest::prop_assert!(
                    !ds.windows(2).any(|w| w[0].delta_type == Deleted && w[1].delta_type == Deleted),
                    "consecutive deletions: {:?}", ds
                );
            }
            let now = f.has_synced();
            proptest::prop_assert!(now || !synced, "has_synced went back to false");
            synced = now;
        }
        let listed: std::collections::BTreeSet<ObjectKey> =
            last_list.iter().map(|k| ObjectKey::new(None, &format!("k{k}"))).collect();
        f.replace(last_list.into_iter().map(&mut mk_v).collect(), "").unwrap();
        while !f.is_empty() {
            pop_now(&f, &cache);
        }
        let cached: std::collections::BTreeSet<ObjectKey> = cache.map().keys().cloned().collect();
        proptest::prop_assert_eq!(cached, listed);
        proptest::prop_assert!(f.has_synced());
    }
}

/// `wait_synced` returns once the last initial item's callback returned.
#[tokio::test(start_paused = true)]
async fn delta_fifo_wait_synced_wakes_after_last_initial_pop() {
    let f = Arc::new(fifo());
    let waiter = tokio::spawn({
        let f = Arc::clone(&f);
        async move { f.wait_synced().await }
    });
    f.replace(vec![mk("a", 1), mk("b", 2)], "1").unwrap();
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    pop(&f).await;
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    pop(&f).await;
    tokio::time::timeout(Duration::from_secs(1), waiter)
        .await
        .expect("wait_synced returned")
        .unwrap();
    assert!(f.has_synced());
    // Already synced: returns at once.
    f.wait_synced().await;
}

// ---------- the processing lock ----------

/// `add` (and `update`) do not wait for a running `pop` callback: the callback itself
/// can queue (it would deadlock if `add` took the lock the callback runs under).
#[tokio::test(start_paused = true)]
async fn delta_fifo_add_does_not_wait_for_a_running_pop_callback() {
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    let popped = f
        .pop(|item| {
            f.add(mk("b", 2)).unwrap();
            f.update(mk("a", 3)).unwrap();
            item.key.to_string()
        })
        .await
        .unwrap();
    assert_eq!(popped, "a");
    assert_eq!(
        f.list_keys(),
        [ObjectKey::new(None, "b"), ObjectKey::new(None, "a")]
    );
}

/// `replace` waits for a running `pop` callback, so it never sees an item popped
/// but not yet applied to the known objects (it would miss its deletion).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_fifo_replace_waits_for_a_running_pop_callback() {
    use std::sync::atomic::AtomicBool;
    let f = Arc::new(fifo());
    f.add(mk("a", 1)).unwrap();
    let replaced = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let replacer = std::thread::spawn({
        let (f, replaced) = (Arc::clone(&f), Arc::clone(&replaced));
        move || {
            started_rx.recv().unwrap();
            f.replace(vec![mk("b", 2)], "5").unwrap();
            replaced.store(true, Ordering::SeqCst);
        }
    });
    let replaced_during_callback = f
        .pop(|_| {
            started_tx.send(()).unwrap();
            // Long enough for a `replace` that did not wait to finish.
            std::thread::sleep(Duration::from_millis(50));
            replaced.load(Ordering::SeqCst)
        })
        .await
        .unwrap();
    replacer.join().unwrap();
    assert!(
        !replaced_during_callback,
        "replace ran while the callback held the item"
    );
    assert!(replaced.load(Ordering::SeqCst));
}

/// `has_synced` turns true only once the callback of the last initial item returned,
/// even though the callback runs without the queue's lock.
#[tokio::test(start_paused = true)]
async fn delta_fifo_has_synced_waits_for_the_last_callback_to_return() {
    let f = fifo();
    f.replace(vec![mk("a", 1)], "1").unwrap();
    let synced_inside = f.pop(|_| f.has_synced()).await.unwrap();
    assert!(!synced_inside);
    assert!(f.has_synced());
}

// ---------- first lists streamed in page by page ----------

fn streaming_fifo(known: Vec<Obj>) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(
        DeltaFifoOptions::default()
            .known_objects(Arc::new(Literal(known)))
            .emit_delta_type_replaced(true),
    )
}

/// The pages of a first list into an empty FIFO are poppable as they come, each item
/// marked as in the initial list; `has_synced` waits for the list's end and then for
/// every item still queued.
#[tokio::test(start_paused = true)]
async fn delta_fifo_streamed_first_list_pops_before_it_ends() {
    let f = streaming_fifo(vec![]);
    let (a, b, c, e) = (mk("a", 1), mk("b", 2), mk("c", 3), mk("e", 4));
    assert!(f.stream_list_page(&[a.clone(), b.clone()], true).unwrap());
    let first = pop(&f).await;
    assert_eq!(first.key.as_str(), "a");
    assert_eq!(first.deltas, deltas(vec![d(Replaced, &a)]));
    assert!(first.is_in_initial_list);
    assert!(!f.has_synced(), "the list has not ended");
    assert!(f.stream_list_page(std::slice::from_ref(&c), false).unwrap());
    f.finish_list_stream(vec![e.clone()], "9").unwrap();
    assert!(!f.has_synced(), "b, c and e are still queued");
    for (name, obj) in [("b", &b), ("c", &c), ("e", &e)] {
        let item = pop(&f).await;
        assert_eq!(item.key.as_str(), name);
        assert_eq!(item.deltas, deltas(vec![d(Replaced, obj)]));
        assert!(item.is_in_initial_list);
    }
    assert!(f.has_synced());
    assert_nothing_to_pop(&f).await;
}

/// Only a first list into an empty FIFO streams: not after a `replace` or an `add`,
/// not with known objects, not a page whose list's first page was refused.
#[tokio::test(start_paused = true)]
async fn delta_fifo_stream_refused_unless_first_list_into_empty_fifo() {
    let page = [mk("x", 1)];
    let replaced = streaming_fifo(vec![]);
    replaced.replace(vec![], "1").unwrap();
    assert!(!replaced.stream_list_page(&page, true).unwrap());

    let added = streaming_fifo(vec![]);
    added.add(mk("a", 1)).unwrap();
    assert!(!added.stream_list_page(&page, true).unwrap());

    let known = streaming_fifo(vec![mk("k", 1)]);
    assert!(!known.stream_list_page(&page, true).unwrap());

    let no_first_page = streaming_fifo(vec![]);
    assert!(!no_first_page.stream_list_page(&page, false).unwrap());
    assert!(no_first_page.is_empty());

    let closed = streaming_fifo(vec![]);
    closed.close();
    assert_eq!(
        closed.stream_list_page(&page, true),
        Err(StoreError::Closed)
    );
}

/// A streamed list that is abandoned (its next page failed) is reconciled by the
/// next list's `replace`: streamed objects the new list lacks get a tombstone, the
/// ones it has get its version, and the initial population is everything queued.
#[tokio::test(start_paused = true)]
async fn delta_fifo_abandoned_stream_is_reconciled_by_replace() {
    let f = streaming_fifo(vec![]);
    let (a, b) = (mk("a", 1), mk("b", 2));
    assert!(f.stream_list_page(&[a.clone(), b.clone()], true).unwrap());
    // The list starts over; its first page finds the FIFO no longer empty.
    let (b2, c) = (mk("b", 3), mk("c", 4));
    assert!(!f.stream_list_page(&[b2.clone(), c.clone()], true).unwrap());
    f.replace(vec![b2.clone(), c.clone()], "9").unwrap();
    assert_pops(
        &f,
        vec![
            deltas(vec![d(Replaced, &a), tomb("a", &a)]),
            deltas(vec![d(Replaced, &b), d(Replaced, &b2)]),
            deltas(vec![d(Replaced, &c)]),
        ],
    )
    .await;
    assert!(f.has_synced());
}
