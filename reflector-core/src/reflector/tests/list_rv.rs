//! Which resource version each list asks for, and what the reflector does with the
//! answer (client-go's reflector_test.go): tables of list request → answer, run
//! for N rounds.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::reflector::ReflectorOptions;
use crate::store::{Indexers, Writer};
use crate::test_support::*;

/// TestReflectorResyncWithResourceVersion: the relist asks for the last resource
/// version seen: list RVs ["0", "10"].
#[tokio::test(start_paused = true)]
async fn reflector_resync_with_resource_version() {
    let rows = vec![
        ("rv=0 limit=500", Ok(pod_list("10", None, pods(4)))),
        ("rv=10", Ok(pod_list("11", None, pods(8)))),
    ];
    let table = ListTable::new(ReflectorOptions::default(), rows);
    table.assert_rounds([4, 8]).await;
}

/// TestReflectorExpiredExactResourceVersion: a 410 on the exact-RV relist is
/// retried at once from "": list RVs ["0", "10", ""].
#[tokio::test(start_paused = true)]
async fn reflector_expired_exact_resource_version() {
    let rows = vec![
        ("rv=0 limit=500", Ok(pod_list("10", None, pods(4)))),
        ("rv=10", Err(expired())),
        ("rv=", Ok(pod_list("11", None, pods(8)))),
    ];
    let table = ListTable::new(ReflectorOptions::default(), rows);
    table.assert_rounds([4, 8]).await;
}

/// TestReflectorFullListIfExpired: an expired continue token falls back to one
/// unpaginated list at the original RV: list RVs ["0", "10", "", "10"].
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_expired() {
    let table = ListTable::new(
        ReflectorOptions::default().page_size(4),
        vec![
            ("rv=0 limit=4", Ok(pod_list("10", None, pods(4)))),
            ("rv=10 limit=4", Ok(pod_list("11", Some("C1"), pods(4)))),
            ("rv= limit=4 continue=C1", Err(expired())),
            ("rv=10", Ok(pod_list("11", None, pods(8)))),
        ],
    );
    table.assert_rounds([4, 8]).await;
}

/// TestReflectorFullListIfTooLarge: each form of "too large resource version"
/// (cause, cause message, status message) relists from "":
/// ["0", "20", "", "30", "", "40", ""].
#[tokio::test(start_paused = true)]
async fn reflector_full_list_if_too_large() {
    let message = "too large resource version";
    let empty = |rv| Ok(pod_list(rv, None, vec![]));
    let table = ListTable::new(
        ReflectorOptions::default(),
        vec![
            ("rv=0 limit=500", empty("20")),
            (
                "rv=20",
                Err(too_large("ResourceVersionTooLarge", "", message)),
            ),
            ("rv=", empty("30")),
            (
                "rv=30",
                Err(too_large("", "Too large resource version", message)),
            ),
            ("rv=", empty("40")),
            (
                "rv=40",
                Err(too_large("", "", "Too large resource version")),
            ),
            ("rv=", empty("50")),
        ],
    );
    table.assert_rounds([0; 4]).await;
    assert_eq!(table.reflector.stats().errors_too_large_resource_version, 3);
}

/// TestReflectorWatchListPageSize: an explicit page size is used even at an exact
/// RV, and the pages are followed by their continue tokens.
#[tokio::test(start_paused = true)]
async fn reflector_watch_list_page_size() {
    let all = pods(10);
    let table = ListTable::new(
        ReflectorOptions::default().page_size(4),
        vec![
            (
                "rv=10 limit=4",
                Ok(pod_list("10", Some("C1"), all[..4].to_vec())),
            ),
            (
                "rv= limit=4 continue=C1",
                Ok(pod_list("10", Some("C2"), all[4..8].to_vec())),
            ),
            (
                "rv= limit=4 continue=C2",
                Ok(pod_list("10", None, all[8..].to_vec())),
            ),
        ],
    );
    table.reflector.set_resource_version("10");
    table.assert_rounds([10]).await;
}

/// TestReflectorNotPaginatingNotConsistentReads: relisting at an exact RV asks for
/// no limit, so the server can answer from its watch cache.
#[tokio::test(start_paused = true)]
async fn reflector_not_paginating_not_consistent_reads() {
    let rows = vec![("rv=10", Ok(pod_list("10", None, pods(10))))];
    let table = ListTable::new(ReflectorOptions::default(), rows);
    table.reflector.set_resource_version("10");
    table.assert_rounds([10]).await;
}

/// TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled: once the first
/// "0" list came back paginated, relists at an exact RV keep a limit of 500.
#[tokio::test(start_paused = true)]
async fn reflector_paginating_non_consistent_reads_if_watch_cache_disabled() {
    let paged = |first: &'static str| -> [ListRow; 3] {
        let all = pods(10);
        [
            (first, Ok(pod_list("10", Some("C1"), all[..4].to_vec()))),
            (
                "rv= limit=500 continue=C1",
                Ok(pod_list("10", Some("C2"), all[4..8].to_vec())),
            ),
            (
                "rv= limit=500 continue=C2",
                Ok(pod_list("10", None, all[8..].to_vec())),
            ),
        ]
    };
    let rows = paged("rv=0 limit=500")
        .into_iter()
        .chain(paged("rv=10 limit=500"));
    let table = ListTable::new(ReflectorOptions::default(), rows.collect());
    table.assert_rounds([10, 10]).await;
}

/// A relist hands the store the cached object for every key whose resourceVersion
/// did not change (the decoded duplicate is dropped as its page arrives), and the
/// decoded object for every changed or new key.
#[tokio::test(start_paused = true)]
async fn relist_reuses_cached_objects_whose_resource_version_is_unchanged() {
    let writer = Writer::<Pod>::new(Indexers::new());
    let cache = writer.reader();
    let table = ListTable::with_cache(
        writer,
        ReflectorOptions::default(),
        vec![
            (
                "rv=0 limit=500",
                Ok(pod_list("10", None, vec![pod("a", "1"), pod("b", "2")])),
            ),
            (
                "rv=10",
                Ok(pod_list(
                    "20",
                    None,
                    vec![pod("a", "1"), pod("b", "12"), pod("c", "13")],
                )),
            ),
        ],
    );
    table.run_rounds(1).await;
    let before = cached(&cache);
    table.run_rounds(1).await;
    let after = cached(&cache);
    assert_eq!(after.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
    assert!(
        Arc::ptr_eq(&before["a"], &after["a"]),
        "unchanged: cached copy"
    );
    assert!(!Arc::ptr_eq(&before["b"], &after["b"]), "changed: new copy");
    assert_eq!(after["b"].metadata.resource_version.as_deref(), Some("12"));
}
