//! Whether a list starting now may find its objects among the known objects
//! (`may_cache_listed`): the reflector looks none up when it may not.

use crate::store::StoreSink;

use crate::test_support::*;

/// Only known objects, or a queued item the consumer may yet add to them, let a
/// list's lookups find anything; without known objects none ever does.
#[tokio::test(start_paused = true)]
async fn delta_fifo_may_cache_listed_only_with_known_or_queued_objects() {
    assert!(!fifo().may_cache_listed(), "no known objects");
    let f = fifo_known(vec![]);
    assert!(!f.may_cache_listed(), "nothing known, nothing queued");
    f.add(mk("a", 1)).unwrap();
    assert!(f.may_cache_listed(), "a is queued");
    pop(&f).await;
    assert!(!f.may_cache_listed(), "a was popped into no cache");
    assert!(
        fifo_known(vec![mk("b", 1)]).may_cache_listed(),
        "b is known"
    );
    let f = fifo();
    f.add(mk("a", 1)).unwrap();
    assert!(!f.may_cache_listed(), "queued, but no known objects");
}
