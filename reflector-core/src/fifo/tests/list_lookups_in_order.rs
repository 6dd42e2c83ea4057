//! Whether a list starting now may find its objects in the cache
//! (`may_cache_listed`): the reflector looks none up when it may not.

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::{Fifo, QueueMode};
use crate::store::StoreSink;
use crate::test_support::*;

/// Only cached objects, or an entry queued or being applied (which the consumer may
/// yet add to the cache), let a list's lookups find anything; without a cache none
/// ever does.
#[tokio::test(start_paused = true)]
async fn in_order_may_cache_listed_only_with_cached_queued_or_applied_objects() {
    assert!(
        !Fifo::<ConfigMap>::new(QueueMode::InOrder).may_cache_listed(),
        "no cache"
    );
    let f = in_order(vec![]);
    assert!(!f.may_cache_listed(), "nothing cached, nothing queued");
    f.add(mk("a", 1)).unwrap();
    assert!(f.may_cache_listed(), "a is queued");
    let while_applied = f.pop(|_, _| f.may_cache_listed()).await.unwrap();
    assert!(while_applied, "a is being applied");
    assert!(!f.may_cache_listed(), "a was applied to no cache");
    assert!(in_order(vec![mk("b", 1)]).may_cache_listed(), "b is cached");
    let f = Fifo::<ConfigMap>::new(QueueMode::InOrder);
    f.add(mk("a", 1)).unwrap();
    assert!(!f.may_cache_listed(), "queued, but no cache");
}
