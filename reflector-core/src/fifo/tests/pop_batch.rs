//! client-go's `the_real_fifo_test.go` ported, the batch pops (`PopBatch`, the
//! `InOrderInformersBatchProcess` feature): what one batch holds, where it splits.
//!
//! `PopBrokenItemsInBatch` cannot apply as written: client-go keys an item when it
//! pops it, so an item whose key function fails sits in the queue and closes the
//! batch it lands in. This FIFO keys every object when it is written, so such an
//! object is refused there with [`StoreError::Key`] and never queued; the port
//! asserts that, and that the batches hold the other items as client-go's do.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::Fifo;
use crate::fifo::FifoError;
use crate::object::ObjectKey;
use crate::test_support::*;

/// Pops batches of up to `size` until the FIFO is empty: each batch's entries shown,
/// and every entry popped as part of the initial list.
async fn pop_batches(f: &Fifo<ConfigMap>, size: usize) -> (Vec<Vec<String>>, Vec<String>) {
    let (mut batches, mut initial) = (Vec::new(), Vec::new());
    while !f.is_empty() {
        let batch = f
            .pop_batch(size, |entries, _| {
                entries
                    .iter()
                    .map(|p| (show(&p.entry), p.is_in_initial_list))
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap();
        initial.extend(batch.iter().filter(|(_, i)| *i).map(|(s, _)| s.clone()));
        batches.push(batch.into_iter().map(|(s, _)| s).collect());
    }
    (batches, initial)
}

/// PopMultipleDeltaInBatch: a batch holds at most the size asked for, never mixes
/// entries of the first list with later ones, and never holds two changes to one
/// object (the second starts the next batch).
#[tokio::test(start_paused = true)]
async fn in_order_pop_multiple_deltas_in_batch() {
    let (o1, o2, o3, o4) = (mk("foo1", 5), mk("foo2", 5), mk("foo3", 5), mk("foo4", 5));
    const UNLIMITED: usize = 999_999;
    /// Name, listed, updated after, batch size, the batches.
    type Case<'a> = (&'a str, Vec<Obj>, Vec<Obj>, usize, Vec<Vec<&'a str>>);
    let cases: Vec<Case<'_>> = vec![
        (
            "non-split: unique items",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![],
            UNLIMITED,
            vec![vec![
                "Replaced foo1=5",
                "Replaced foo2=5",
                "Replaced foo3=5",
            ]],
        ),
        (
            "split at the end of the initial list",
            vec![o1.clone(), o2.clone()],
            vec![o3.clone(), o4.clone()],
            2,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5"],
                vec!["Updated foo3=5", "Updated foo4=5"],
            ],
        ),
        (
            "split at a repeated key: one object updated twice",
            vec![o1.clone()],
            vec![o1.clone(), o1.clone()],
            UNLIMITED,
            vec![
                vec!["Replaced foo1=5"],
                vec!["Updated foo1=5"],
                vec!["Updated foo1=5"],
            ],
        ),
        (
            "split at a repeated key: the repeat at the end",
            vec![o1.clone(), o2.clone()],
            vec![o2.clone(), o3.clone()],
            UNLIMITED,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5"],
                vec!["Updated foo2=5", "Updated foo3=5"],
            ],
        ),
        (
            "split at a repeated key: the repeat in the middle",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![o2.clone()],
            UNLIMITED,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5", "Replaced foo3=5"],
                vec!["Updated foo2=5"],
            ],
        ),
        (
            "split by size within the initial list",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![],
            2,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5"],
                vec!["Replaced foo3=5"],
            ],
        ),
        (
            "split by size after the initial list",
            vec![],
            vec![o1.clone(), o2.clone(), o3.clone()],
            2,
            vec![
                vec!["Updated foo1=5", "Updated foo2=5"],
                vec!["Updated foo3=5"],
            ],
        ),
        (
            "split by size and at the end of the initial list",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![o4.clone()],
            2,
            vec![
                vec!["Replaced foo1=5", "Replaced foo2=5"],
                vec!["Replaced foo3=5"],
                vec!["Updated foo4=5"],
            ],
        ),
    ];
    for (name, initial, updates, size, want) in cases {
        let f = in_order_per_object(initial.clone());
        f.replace(initial.clone(), "123").unwrap();
        for u in updates {
            f.update(u).unwrap();
        }
        let (got, got_initial) = pop_batches(&f, size).await;
        assert_eq!(got, want, "{name}");
        let want_initial: Vec<String> = initial
            .iter()
            .map(|o| format!("Replaced {}=5", o.metadata.name.as_deref().unwrap()))
            .collect();
        assert_eq!(got_initial, want_initial, "{name}");
    }
}

/// PopBrokenItemsInBatch (see the module's docs): an object whose key cannot be
/// computed is refused when written; the others are queued and batched as if it
/// had never come.
#[tokio::test(start_paused = true)]
async fn in_order_pop_broken_items_in_batch() {
    let (ok1, ok2) = (mk("foo1", 5), mk("foo2", 5));
    let (broken3, broken4) = (mk("foo3", 5), mk("foo4", 5));
    /// Name, the objects added, the batches.
    type Case<'a> = (&'a str, Vec<&'a Obj>, Vec<Vec<&'a str>>);
    let cases: Vec<Case<'_>> = vec![
        ("the first item is broken", vec![&broken3], vec![]),
        (
            "the nth item is broken",
            vec![&ok1, &ok2, &broken3],
            vec![vec!["Added foo1=5", "Added foo2=5"]],
        ),
        (
            "several nth items are broken",
            vec![&ok1, &ok2, &broken3, &broken4],
            vec![vec!["Added foo1=5", "Added foo2=5"]],
        ),
        (
            "the first and an nth item are broken",
            vec![&broken3, &ok1, &broken4],
            vec![vec!["Added foo1=5"]],
        ),
    ];
    for (name, added, want) in cases {
        let f = in_order_per_object(vec![]).key_func(|o: &ConfigMap| {
            match o.metadata.name.as_deref() {
                Some(n @ ("foo1" | "foo2")) => Ok(ObjectKey::new(None, n)),
                _ => Err(crate::object::KeyError::MissingName),
            }
        });
        for obj in added {
            let written = f.add(Arc::clone(obj));
            let broken = Arc::ptr_eq(obj, &broken3) || Arc::ptr_eq(obj, &broken4);
            assert_eq!(
                matches!(written, Err(FifoError::Key(_))),
                broken,
                "{name}: {written:?}"
            );
        }
        let (got, _) = pop_batches(&f, 999_999).await;
        assert_eq!(got, want, "{name}");
    }
}
