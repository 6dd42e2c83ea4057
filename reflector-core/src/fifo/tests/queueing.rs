//! Queueing (client-go's delta_fifo_test.go): each key queued once, in order,
//! deltas accumulated, keys of objects, tombstones and delta lists.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::FifoError;
use crate::fifo::{Delta, DeltaType, Deltas};
use crate::object::{KeyError, MaybeTombstone, ObjectKey, deletion_handling_key};

use crate::test_support::*;
use DeltaType::{Added, Deleted, Sync};

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
        let item = tokio::time::timeout(crate::test_support::PATIENCE, f.pop_item())
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
async fn delta_fifo_add_update() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();
    assert_eq!(f.list(), vec![mk("foo", 15)]);
    assert_eq!(f.list_keys(), vec![ObjectKey::new(None, "foo")]);

    assert_pops_only(&f, "15").await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_enqueueing_no_lister() {
    let f = fifo();
    // baz does not exist: its deletion queues nothing.
    apply(
        &f,
        "add foo 10, update bar 15, add qux 17, delete qux 18, delete baz 20",
    );
    assert_eq!(pop_vals(&f, 3).await, ["10", "15", "18"]);
    assert_nothing_to_pop(&f).await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_enqueueing_with_lister() {
    let f = fifo_known(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    // baz is known: its deletion is queued.
    apply(&f, "add foo 10, update bar 15, delete baz 20");
    assert_eq!(pop_vals(&f, 3).await, ["10", "15", "20"]);
    assert_nothing_to_pop(&f).await;
}

#[test]
fn delta_fifo_delete_existing_non_propagated() {
    let f = fifo_known(vec![]);
    f.add(mk("foo", 5)).unwrap();
    f.delete(mk("foo", 6)).unwrap();
    assert_eq!(delta_types(&f, "foo"), [Added, Deleted]);
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_detect_line_jumpers() {
    let f = fifo();
    apply(
        &f,
        "add foo 10, add bar 1, add foo 11, add foo 13, add zab 30",
    );
    assert_eq!(pop_vals(&f, 1).await, ["13"]);
    // foo must not jump back in line.
    f.add(mk("foo", 14)).unwrap();
    assert_eq!(pop_vals(&f, 3).await, ["1", "30", "14"]);
}

#[test]
fn delta_fifo_key_of() {
    let f = fifo();
    let nobody = Arc::new(ConfigMap::default());
    let t = |name: &str| -> MaybeTombstone<ConfigMap> {
        MaybeTombstone::DeletedFinalStateUnknown {
            key: ObjectKey::new(None, name),
            obj: nobody.clone(),
        }
    };
    // client-go's `KeyOf` of a tombstone and of a `Deltas` is
    // `deletion_handling_key` of the tombstone, or of the newest delta's object.
    let key_of_deltas = |ds: &Deltas<ConfigMap>| deletion_handling_key(&ds.newest()?.object).ok();
    assert_eq!(f.key_of(&mk("A", "")).unwrap().as_str(), "A");
    assert_eq!(deletion_handling_key(&t("B")).unwrap().as_str(), "B");
    let c = deltas(vec![Delta::new(Sync, mk("C", ""))]);
    assert_eq!(key_of_deltas(&c).unwrap().as_str(), "C");
    let dd = deltas(vec![Delta::new(Deleted, t("D"))]);
    assert_eq!(key_of_deltas(&dd).unwrap().as_str(), "D");
    assert_eq!(key_of_deltas(&Deltas::new()), None);
    assert!(matches!(f.key_of(&nobody), Err(KeyError::MissingName)));
}

#[test]
fn delta_fifo_store_getters_return_newest_object() {
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    f.update(mk("a", 2)).unwrap();
    f.add(mk("b", 3)).unwrap();
    assert_eq!(f.get_object(&mk("a", "")).unwrap(), Some(mk("a", 2)));
    assert_eq!(f.get(&ObjectKey::new(None, "b")), Some(mk("b", 3)));
    assert_eq!(f.get(&ObjectKey::new(None, "c")), None);
    assert_eq!(f.list(), vec![mk("a", 2), mk("b", 3)]);
    assert_eq!(f.len(), 2);
    assert!(matches!(
        f.add(Arc::new(ConfigMap::default())),
        Err(FifoError::Key(_))
    ));
    assert!(matches!(
        f.replace(vec![mk("x", 1), Arc::new(ConfigMap::default())], "0"),
        Err(FifoError::Key(_))
    ));
    // A failed replace changes nothing.
    assert_eq!(f.len(), 2);
}
