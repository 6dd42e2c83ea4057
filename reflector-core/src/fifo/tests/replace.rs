//! `replace` (client-go's delta_fifo_test.go): a relist queues `Sync`/`Replaced`
//! for listed keys and a tombstone for every known or queued key it lacks.

use std::sync::Arc;

use crate::fifo::{DeltaType, Fifo, QueueMode};

use crate::test_support::*;
use DeltaType::{Added, Deleted, Replaced, Sync};

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_with_delete_delta_in() {
    let f = fifo_known(vec![mk("foo", 1)]);
    apply(&f, "delete foo 1, replace foo:2");
    assert_eq!(
        pop(&f).await.deltas,
        deltas(vec![d(Deleted, &mk("foo", 1)), d(Sync, &mk("foo", 2))])
    );
}

/// Each case runs a script on a FIFO that emits `Replaced` or not, with and without
/// (empty) known objects, and pops the one key's deltas.
#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_makes_deletions_for_objects_only_in_queue() {
    let obj = mk("foo", 2);
    let obj_v2 = mk("foo", 3);
    let cases = [
        (
            "Added object should be deleted on Replace",
            false,
            "add foo 2, replace@0",
            vec![d(Added, &obj), tomb("foo", &obj)],
        ),
        (
            "Replaced object should have only a single Delete",
            true,
            "add foo 2, replace@0 foo:2, replace@0",
            vec![d(Added, &obj), d(Replaced, &obj), tomb("foo", &obj)],
        ),
        (
            "Deleted object should have only a single Delete",
            false,
            "add foo 2, delete foo 2, replace@0",
            vec![d(Added, &obj), d(Deleted, &obj)],
        ),
        (
            "Synced objects should have a single delete",
            false,
            "add foo 2, replace@0 foo:2, replace@0 foo:2, replace@0",
            vec![
                d(Added, &obj),
                d(Sync, &obj),
                d(Sync, &obj),
                tomb("foo", &obj),
            ],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            false,
            "add foo 2, replace@0, replace@1",
            vec![d(Added, &obj), tomb("foo", &obj)],
        ),
        (
            "Added and deleted and added object should be deleted",
            false,
            "add foo 2, delete foo 2, add foo 3, replace@0",
            vec![
                d(Added, &obj),
                d(Deleted, &obj),
                d(Added, &obj_v2),
                tomb("foo", &obj_v2),
            ],
        ),
    ];
    for (name, emit_replaced, script, expected) in cases {
        for with_known in [true, false] {
            let mut f = Fifo::new(QueueMode::PerKey).emit_replaced(emit_replaced);
            if with_known {
                f = f.cache_view(Arc::new(Literal(vec![])));
            }
            apply(&f, script);
            let case = format!("{name} (known objects: {with_known})");
            assert_drains(&case, &f, vec![deltas(expected.clone())]).await;
        }
    }
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_add_replace() {
    let f = fifo();
    apply(&f, "add foo 10, replace@0 foo:15");
    assert_pops_only(&f, "15").await;
}

/// Each case runs a script on a FIFO knowing foo 5, bar 6 and baz 7 (or nothing),
/// then drains it.
#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_makes_deletions() {
    let known = Some(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    let cases = [
        (
            "with a pre-existing Delete",
            known.clone(),
            "delete baz 10, replace@0 foo:5",
            vec![
                deltas(vec![d(Deleted, &mk("baz", 10))]),
                deltas(vec![d(Sync, &mk("foo", 5))]),
                // bar had no delete and was not listed: a tombstone with the known object.
                deltas(vec![tomb("bar", &mk("bar", 6))]),
            ],
        ),
        (
            "starting with an Add instead of a Delete",
            known.clone(),
            "add baz 10, replace@0 foo:5",
            vec![
                deltas(vec![d(Added, &mk("baz", 10)), tomb("baz", &mk("baz", 10))]),
                deltas(vec![d(Sync, &mk("foo", 5))]),
                deltas(vec![tomb("bar", &mk("bar", 6))]),
            ],
        ),
        (
            "deleted and recreated in the queue, then deleted by a Replace",
            known.clone(),
            "delete bar 6, add bar 100, replace@0 foo:5",
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
        ),
        (
            "synced first: the tombstone uses the latest version",
            known.clone(),
            "replace@0 bar:100 foo:5, replace@0 foo:5",
            vec![
                deltas(vec![d(Sync, &mk("bar", 100)), tomb("bar", &mk("bar", 100))]),
                deltas(vec![d(Sync, &mk("foo", 5)), d(Sync, &mk("foo", 5))]),
                deltas(vec![tomb("baz", &mk("baz", 7))]),
            ],
        ),
        (
            "without known objects",
            None,
            "add baz 10, replace@0 foo:5",
            vec![
                deltas(vec![d(Added, &mk("baz", 10)), tomb("baz", &mk("baz", 10))]),
                deltas(vec![d(Sync, &mk("foo", 5))]),
            ],
        ),
    ];
    for (name, known, script, expected) in cases {
        let f = known.map_or_else(fifo, fifo_known);
        apply(&f, script);
        assert_drains(name, &f, expected).await;
    }
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_makes_deletions_replaced() {
    let f = fifo_known_replaced(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    apply(&f, "delete baz 10, replace@0 foo:6");
    let expected = vec![
        deltas(vec![d(Deleted, &mk("baz", 10))]),
        deltas(vec![d(Replaced, &mk("foo", 6))]),
        deltas(vec![tomb("bar", &mk("bar", 6))]),
    ];
    assert_drains("replaced", &f, expected).await;
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_replace_delta_type() {
    let f = fifo_known_replaced(vec![mk("foo", 5)]);
    apply(&f, "replace@0 foo:5");
    let expected = vec![deltas(vec![d(Replaced, &mk("foo", 5))])];
    assert_drains("replace delta type", &f, expected).await;
}
