//! client-go's `the_real_fifo_test.go` ported, the atomic cases (`AtomicFIFO`, on by
//! default since 1.36): a relist and a resync are one entry each.

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::Fifo;
use crate::store::StoreSink;
use crate::test_support::*;

/// ReplaceAtomic: with atomic events a relist is one entry with the whole list,
/// in order with the other changes; a bookmark is its own entry.
#[tokio::test(start_paused = true)]
async fn in_order_replace_atomic() {
    let obj = mk("foo", 2);
    type Ops = Box<dyn Fn(&Fifo<ConfigMap>)>;
    let table: Vec<(&str, Ops, Vec<&str>)> = vec![
        (
            "base replace",
            Box::new(|f| f.replace(vec![], "123").unwrap()),
            vec!["ReplacedAll@123 []"],
        ),
        (
            "an added object stays queued before the relist",
            Box::new({
                let obj = obj.clone();
                move |f| {
                    f.add(obj.clone()).unwrap();
                    f.replace(vec![], "123").unwrap();
                }
            }),
            vec!["Added foo=2", "ReplacedAll@123 []"],
        ),
        (
            "several relists run in order",
            Box::new(move |f| {
                f.add(obj.clone()).unwrap();
                f.replace(vec![obj.clone()], "10").unwrap();
                f.replace(vec![obj.clone()], "20").unwrap();
                f.replace(vec![], "56").unwrap();
            }),
            vec![
                "Added foo=2",
                "ReplacedAll@10 [foo=2]",
                "ReplacedAll@20 [foo=2]",
                "ReplacedAll@56 []",
            ],
        ),
        (
            "a bookmark is not part of the relist",
            Box::new(|f| {
                f.handed_over("123");
                f.replace(vec![], "1234").unwrap();
            }),
            vec!["Bookmark@123", "ReplacedAll@1234 []"],
        ),
    ];
    for (name, ops, want) in table {
        let f = in_order(vec![]);
        ops(&f);
        assert_eq!(pop_all_shown(&f).await, want, "{name}");
    }
}

/// ReplaceAtomicPop: the add, then the relist as one entry, then nothing.
#[tokio::test(start_paused = true)]
async fn in_order_replace_atomic_pop() {
    let f = in_order(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.replace(vec![mk("foo", 15)], "20").unwrap();
    assert_eq!(pop_shown(&f).await, "Added foo=10");
    assert_eq!(pop_shown(&f).await, "ReplacedAll@20 [foo=15]");
    assert_nothing_to_pop(&f).await;
}

/// ResyncAtomic: with atomic events a resync is one entry, after what was queued.
#[tokio::test(start_paused = true)]
async fn in_order_resync_atomic() {
    let f = in_order(vec![]);
    f.resync().unwrap();
    assert_eq!(pop_all_shown(&f).await, ["SyncAll"]);

    let f = in_order(vec![]);
    f.add(mk("foo", 2)).unwrap();
    f.resync().unwrap();
    assert_eq!(pop_all_shown(&f).await, ["Added foo=2", "SyncAll"]);
}
