//! `replace` (client-go's delta_fifo_test.go): a relist queues `Sync`/`Replaced`
//! for listed keys and a tombstone for every known or queued key it lacks.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::{DeltaFifo, DeltaType, Deltas};
use crate::store::Store;

use super::support::*;
use DeltaType::{Added, Deleted, Replaced, Sync};

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
            let mut f = DeltaFifo::new().emit_delta_type_replaced(emit_replaced);
            if with_known {
                f = f.known_objects_view(Arc::new(Literal(vec![])));
            }
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
async fn delta_fifo_add_replace() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.replace(vec![mk("foo", 15)], "0").unwrap();
    assert_pops_only(&f, "15").await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_makes_deletions() {
    let known = || vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)];

    // With a pre-existing Delete.
    let f = fifo_known(known());
    f.delete(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_drains(
        &f,
        vec![
            deltas(vec![d(Deleted, &mk("baz", 10))]),
            deltas(vec![d(Sync, &mk("foo", 5))]),
            // bar had no delete and was not listed: a tombstone with the known object.
            deltas(vec![tomb("bar", &mk("bar", 6))]),
        ],
    )
    .await;

    // Starting with an Add instead of a Delete.
    let f = fifo_known(known());
    f.add(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_drains(
        &f,
        vec![
            deltas(vec![d(Added, &mk("baz", 10)), tomb("baz", &mk("baz", 10))]),
            deltas(vec![d(Sync, &mk("foo", 5))]),
            deltas(vec![tomb("bar", &mk("bar", 6))]),
        ],
    )
    .await;

    // Deleted and recreated in the queue, then deleted by a Replace.
    let f = fifo_known(known());
    f.delete(mk("bar", 6)).unwrap();
    f.add(mk("bar", 100)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_drains(
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

    // Synced first: the tombstone uses the latest version.
    let f = fifo_known(known());
    f.replace(vec![mk("bar", 100), mk("foo", 5)], "0").unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_drains(
        &f,
        vec![
            deltas(vec![d(Sync, &mk("bar", 100)), tomb("bar", &mk("bar", 100))]),
            deltas(vec![d(Sync, &mk("foo", 5)), d(Sync, &mk("foo", 5))]),
            deltas(vec![tomb("baz", &mk("baz", 7))]),
        ],
    )
    .await;

    // Without known objects.
    let f = fifo();
    f.add(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_drains(
        &f,
        vec![
            deltas(vec![d(Added, &mk("baz", 10)), tomb("baz", &mk("baz", 10))]),
            deltas(vec![d(Sync, &mk("foo", 5))]),
        ],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_makes_deletions_replaced() {
    let f = fifo_known_replaced(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.delete(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 6)], "0").unwrap();
    assert_drains(
        &f,
        vec![
            deltas(vec![d(Deleted, &mk("baz", 10))]),
            deltas(vec![d(Replaced, &mk("foo", 6))]),
            deltas(vec![tomb("bar", &mk("bar", 6))]),
        ],
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_delta_type() {
    let f = fifo_known_replaced(vec![mk("foo", 5)]);
    f.replace(vec![mk("foo", 5)], "0").unwrap();
    assert_drains(&f, vec![deltas(vec![d(Replaced, &mk("foo", 5))])]).await;
}
