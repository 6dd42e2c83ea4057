//! client-go's `the_real_fifo_test.go`, test by test. Without atomic events
//! (`in_order_per_object`) unless the client-go test turns them on.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::FifoError;
use crate::fifo::{Entry, Fifo};
use crate::object::{KeyError, ObjectKey};
use crate::store::StoreSink;
use crate::test_support::*;

/// basic: two producers at once; each one's objects come out in its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_order_basic() {
    let f = Arc::new(in_order_per_object(vec![]));
    const AMOUNT: usize = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let f = Arc::clone(&f);
            tokio::spawn(async move {
                for i in 0..AMOUNT {
                    f.add(mk(&format!("{prefix}{i}"), i + 1)).unwrap();
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let mut last = [0_usize; 2];
    for _ in 0..AMOUNT * 2 {
        let (name, val) = tokio::time::timeout(
            crate::test_support::PATIENCE,
            f.pop(|e, _| match e {
                Entry::Deltas(ds) => {
                    let o = ds[0].object.object();
                    (o.metadata.name.clone().unwrap(), data(o, "val"))
                }
                other => panic!("unexpected {other:?}"),
            }),
        )
        .await
        .unwrap()
        .unwrap();
        let which = usize::from(name.starts_with('b'));
        let val: usize = val.parse().unwrap();
        assert!(
            val > last[which],
            "{name}={val} out of order after {}",
            last[which]
        );
        last[which] = val;
    }
    for p in producers {
        p.await.unwrap();
    }
    assert_eq!(last, [AMOUNT, AMOUNT]);
}

/// replaceWithDeleteDeltaIn: a listed object whose key ends in a queued deletion
/// still gets its `Replaced` delta, after the deletion.
#[tokio::test(start_paused = true)]
async fn in_order_replace_with_delete_delta_in() {
    let old = mk("foo", 1);
    let f = in_order_per_object(vec![old.clone()]);
    f.delete(old).unwrap();
    f.replace(vec![mk("foo", 2)], "").unwrap();
    assert_eq!(queued(&f), ["Deleted foo=1", "Replaced foo=2"]);
}

/// ReplaceMakesDeletionsForObjectsOnlyInQueue: an object only in the queue gets
/// exactly one deletion from the relists that miss it.
#[tokio::test(start_paused = true)]
async fn in_order_replace_makes_deletions_for_objects_only_in_queue() {
    let obj = mk("foo", 2);
    let obj_v2 = mk("foo", 3);
    type Ops = Box<dyn Fn(&Fifo<ConfigMap>)>;
    let table: Vec<(&str, Ops, Vec<&str>)> = vec![
        (
            "added object is deleted on replace",
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.replace(vec![], "0").unwrap();
                }
            }),
            vec!["Added foo=2", "Deleted~ foo=2"],
        ),
        (
            "deleted object has only its own deletion",
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.delete(obj.clone()).unwrap();
                    f.replace(vec![], "0").unwrap();
                }
            }),
            vec!["Added foo=2", "Deleted foo=2"],
        ),
        (
            "synced object has a single deletion",
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.replace(vec![obj.clone()], "0").unwrap();
                    f.replace(vec![obj.clone()], "0").unwrap();
                    f.replace(vec![], "0").unwrap();
                }
            }),
            vec![
                "Added foo=2",
                "Replaced foo=2",
                "Replaced foo=2",
                "Deleted~ foo=2",
            ],
        ),
        (
            "added object has a single deletion over several replaces",
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.replace(vec![], "0").unwrap();
                    f.replace(vec![], "1").unwrap();
                }
            }),
            vec!["Added foo=2", "Deleted~ foo=2"],
        ),
        (
            "added, deleted and added again is deleted",
            Box::new(move |f| {
                f.add(obj.clone()).unwrap();
                f.delete(obj.clone()).unwrap();
                f.add(obj_v2.clone()).unwrap();
                f.replace(vec![], "0").unwrap();
            }),
            vec![
                "Added foo=2",
                "Deleted foo=2",
                "Added foo=3",
                "Deleted~ foo=3",
            ],
        ),
        (
            "a bookmark is not queued without atomic events",
            Box::new(|f| {
                f.handed_over("123");
                f.replace(vec![], "0").unwrap();
                f.replace(vec![], "1").unwrap();
            }),
            vec![],
        ),
    ];
    for (name, ops, want) in table {
        let f = in_order_per_object(vec![]);
        ops(&f);
        assert_eq!(pop_all_shown(&f).await, want, "{name}");
        assert!(f.is_empty(), "{name}");
    }
}

/// addUpdate: every change of one object is its own entry, popped in order.
#[tokio::test(start_paused = true)]
async fn in_order_add_update() {
    let f = in_order_per_object(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();
    assert_eq!(
        queued(&f),
        ["Added foo=10", "Updated foo=12", "Deleted foo=15"]
    );
    assert_eq!(
        pop_all_shown(&f).await,
        ["Added foo=10", "Updated foo=12", "Deleted foo=15"]
    );
    assert_nothing_to_pop(&f).await;
}

/// transformer: the transform runs once on every object coming in, never on the
/// tombstones a relist makes (they carry the transformed object).
#[tokio::test(start_paused = true)]
async fn in_order_transformer() {
    let f = in_order_per_object(vec![]).transform(|o: Arc<ConfigMap>| {
        let mut o = Arc::unwrap_or_clone(o);
        let times = o
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .entry("xfrm".to_owned())
            .or_default();
        times.push('+');
        Arc::new(o)
    });
    transformer_writes(&f);
    let want = [
        "Added foo=10",
        "Added bar=11",
        "Updated foo=12",
        "Deleted foo=15",
        "Deleted~ bar=11",
        "Added bar=16",
        "Deleted~ bar=16",
    ];
    assert_eq!(queued(&f), want);
    for entry in f.entries() {
        let Entry::Deltas(ds) = entry else {
            panic!("a delta")
        };
        let d = &ds[0];
        let times = d.object.object().metadata.annotations.as_ref().unwrap()["xfrm"].clone();
        assert_eq!(times, "+", "transformed exactly once: {d:?}");
    }
    assert_eq!(pop_all_shown(&f).await, want);
}

/// enqueueingNoLister: everything is queued, a deletion of an unknown object too.
#[tokio::test(start_paused = true)]
async fn in_order_enqueueing_no_lister() {
    let f = in_order_per_object(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("bar", 15)).unwrap();
    f.add(mk("qux", 17)).unwrap();
    f.delete(mk("qux", 18)).unwrap();
    f.delete(mk("baz", 20)).unwrap();
    let vals: Vec<String> = pop_all_shown(&f)
        .await
        .iter()
        .map(|s| s.rsplit('=').next().unwrap().to_owned())
        .collect();
    assert_eq!(vals, ["10", "15", "17", "18", "20"]);
}

/// enqueueingWithLister: a deletion of a known object is queued.
#[tokio::test(start_paused = true)]
async fn in_order_enqueueing_with_lister() {
    let f = in_order_per_object(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("bar", 15)).unwrap();
    f.delete(mk("baz", 20)).unwrap();
    assert_eq!(
        pop_all_shown(&f).await,
        ["Added foo=10", "Updated bar=15", "Deleted baz=20"]
    );
}

/// addReplace: an add then a relist of the same object: both, in order.
#[tokio::test(start_paused = true)]
async fn in_order_add_replace() {
    let f = in_order_per_object(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.replace(vec![mk("foo", 15)], "0").unwrap();
    assert_eq!(pop_all_shown(&f).await, ["Added foo=10", "Replaced foo=15"]);
    assert_nothing_to_pop(&f).await;
}

/// ResyncNonExisting: a resync skips a key with a queued change.
#[tokio::test(start_paused = true)]
async fn in_order_resync_non_existing() {
    let f = in_order_per_object(vec![mk("foo", 5)]);
    f.delete(mk("foo", 10)).unwrap();
    f.resync().unwrap();
    assert_eq!(queued(&f), ["Deleted foo=10"]);
}

/// Resync: a known object with nothing queued gets a `Sync` delta.
#[tokio::test(start_paused = true)]
async fn in_order_resync() {
    let f = in_order_per_object(vec![mk("foo", 5)]);
    f.resync().unwrap();
    assert_eq!(queued(&f), ["Sync foo=5"]);
}

/// UpdateResyncRace: a resync after an update of the same key adds nothing.
#[tokio::test(start_paused = true)]
async fn in_order_update_resync_race() {
    let f = in_order_per_object(vec![mk("foo", 5)]);
    f.update(mk("foo", 6)).unwrap();
    f.resync().unwrap();
    assert_eq!(pop_all_shown(&f).await, ["Updated foo=6"]);
}

/// DeleteExistingNonPropagated: an add then a delete are both queued, the
/// deletion last.
#[tokio::test(start_paused = true)]
async fn in_order_delete_existing_non_propagated() {
    let f = in_order_per_object(vec![]);
    f.add(mk("foo", 5)).unwrap();
    f.delete(mk("foo", 6)).unwrap();
    assert_eq!(queued(&f), ["Added foo=5", "Deleted foo=6"]);
}

/// ReplaceMakesDeletions: tombstones for everything queued or known and not
/// listed, before the listed objects, with the newest object queued.
#[tokio::test(start_paused = true)]
async fn in_order_replace_makes_deletions() {
    let known = || vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)];

    let f = in_order_per_object(known());
    f.delete(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_eq!(
        pop_all_shown(&f).await,
        ["Deleted baz=10", "Deleted~ bar=6", "Replaced foo=5"]
    );

    let f = in_order_per_object(known());
    f.add(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_eq!(
        pop_all_shown(&f).await,
        [
            "Added baz=10",
            "Deleted~ baz=10",
            "Deleted~ bar=6",
            "Replaced foo=5"
        ]
    );

    let f = in_order_per_object(known());
    f.delete(mk("bar", 6)).unwrap();
    f.add(mk("bar", 100)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_eq!(
        pop_all_shown(&f).await,
        [
            "Deleted bar=6",
            "Added bar=100",
            "Deleted~ bar=100",
            "Deleted~ baz=7",
            "Replaced foo=5"
        ]
    );

    let f = in_order_per_object(known());
    f.replace(vec![mk("bar", 100), mk("foo", 5)], "0").unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_eq!(
        pop_all_shown(&f).await,
        [
            "Deleted~ baz=7",
            "Replaced bar=100",
            "Replaced foo=5",
            "Deleted~ bar=100",
            "Replaced foo=5"
        ]
    );

    let f = in_order_per_object(vec![]);
    f.add(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_eq!(
        pop_all_shown(&f).await,
        ["Added baz=10", "Deleted~ baz=10", "Replaced foo=5"]
    );
}

/// ReplaceMakesDeletionsReplaced: the listed objects come as `Replaced` deltas.
#[tokio::test(start_paused = true)]
async fn in_order_replace_makes_deletions_replaced() {
    let f = in_order_per_object(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.delete(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 6)], "0").unwrap();
    assert_eq!(
        pop_all_shown(&f).await,
        ["Deleted baz=10", "Deleted~ bar=6", "Replaced foo=6"]
    );
}

/// HasSyncedCorrectOnDeletion: the tombstones of the first relist are part of the
/// initial list; synced only once the last is popped.
#[tokio::test(start_paused = true)]
async fn in_order_has_synced_correct_on_deletion() {
    let f = in_order_per_object(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    for want in ["Deleted~ bar=6", "Deleted~ baz=7", "Replaced foo=5"] {
        assert!(!f.has_synced());
        let (got, initial) = f.pop(|e, initial| (show(&e), initial)).await.unwrap();
        assert_eq!(got, want);
        assert!(initial, "{got} is in the initial list");
    }
    assert!(f.has_synced());
}

/// detectLineJumpers: an object changed again does not jump ahead of others.
#[tokio::test(start_paused = true)]
async fn in_order_detect_line_jumpers() {
    let f = in_order_per_object(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.add(mk("bar", 1)).unwrap();
    f.add(mk("foo", 11)).unwrap();
    f.add(mk("foo", 13)).unwrap();
    f.add(mk("zab", 30)).unwrap();
    assert_eq!(pop_shown(&f).await, "Added foo=10");
    f.add(mk("foo", 14)).unwrap();
    let rest = pop_all_shown(&f).await;
    assert_eq!(
        rest,
        [
            "Added bar=1",
            "Added foo=11",
            "Added foo=13",
            "Added zab=30",
            "Added foo=14"
        ]
    );
}

/// HasSynced: after a write before any list, after an empty list, and only once
/// every listed entry is popped (a key listed twice is popped twice).
#[tokio::test(start_paused = true)]
async fn in_order_has_synced() {
    type Step = fn(&Fifo<ConfigMap>);
    let replace_ab: Step = |f| f.replace(vec![mk("a", 1), mk("b", 2)], "0").unwrap();
    let cases: Vec<(Vec<Step>, usize, bool)> = vec![
        (vec![], 0, false),
        (vec![|f| f.add(mk("a", 1)).unwrap()], 0, true),
        (vec![|f| f.replace(vec![], "0").unwrap()], 0, true),
        (vec![replace_ab], 0, false),
        (vec![replace_ab], 1, false),
        (vec![replace_ab], 2, true),
        (
            vec![|f| f.replace(vec![mk("a", 1), mk("a", 2)], "0").unwrap()],
            2,
            true,
        ),
    ];
    for (i, (steps, pops, want)) in cases.into_iter().enumerate() {
        let f = in_order_per_object(vec![]);
        for step in steps {
            step(&f);
        }
        for _ in 0..pops {
            pop_shown(&f).await;
        }
        assert_eq!(f.has_synced(), want, "case {i}");
    }
}

/// KeyOf: every popped per-object entry carries its object's key, computed by the
/// key function, except a tombstone, whose key is its own (the key it was cached
/// under); whole lists, resyncs and bookmarks carry none. (client-go's `keyOf` also
/// takes a `Deltas`; an entry here is one delta, so its key is the delta's.)
#[tokio::test(start_paused = true)]
async fn in_order_key_of() {
    let prefixed = |o: &ConfigMap| -> Result<ObjectKey, KeyError> {
        let name = o.metadata.name.as_deref().ok_or(KeyError::MissingName)?;
        Ok(ObjectKey::new(None, &format!("k-{name}")))
    };
    let f = in_order_per_object(vec![mk("B", 1)]).key_func(prefixed);
    f.add(mk("A", 2)).unwrap();
    f.replace(vec![mk("C", 3)], "").unwrap();
    assert!(matches!(
        f.add(Arc::new(ConfigMap::default())),
        Err(FifoError::Key(KeyError::MissingName))
    ));
    let atomic = in_order(vec![]).key_func(prefixed);
    atomic.replace(vec![mk("D", 4)], "5").unwrap();
    atomic.resync().unwrap();
    atomic.handed_over("6");
    let mut keys = Vec::new();
    for f in [&f, &atomic] {
        while !f.is_empty() {
            let popped = f
                .pop_batch(1, |entries, _| {
                    entries
                        .iter()
                        .map(|p| (show(&p.entry), p.key.as_ref().map(ObjectKey::to_string)))
                        .collect::<Vec<_>>()
                })
                .await
                .unwrap();
            keys.extend(popped);
        }
    }
    let owned = |(s, k): (&str, Option<&str>)| (s.to_owned(), k.map(str::to_owned));
    let want: Vec<(String, Option<String>)> = [
        ("Added A=2", Some("k-A")),
        ("Deleted~ A=2", Some("k-A")),
        ("Deleted~ B=1", Some("B")),
        ("Replaced C=3", Some("k-C")),
        ("ReplacedAll@5 [D=4]", None),
        ("SyncAll", None),
        ("Bookmark@6", None),
    ]
    .into_iter()
    .map(owned)
    .collect();
    assert_eq!(keys, want);
}
