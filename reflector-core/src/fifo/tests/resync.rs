//! `resync` (client-go's delta_fifo_test.go): `Sync` only for known keys with
//! nothing pending.

use crate::fifo::DeltaType;

use crate::test_support::*;
use DeltaType::{Deleted, Sync, Updated};

#[test]
fn delta_fifo_resync_non_existing() {
    let f = fifo_known(vec![mk("foo", 5)]);
    f.delete(mk("foo", 10)).unwrap();
    f.resync().unwrap();
    assert_eq!(delta_types(&f, "foo"), [Deleted]);
}

#[test]
fn delta_fifo_resync() {
    let f = fifo_known(vec![mk("foo", 5)]);
    f.resync().unwrap();
    assert_eq!(delta_types(&f, "foo"), [Sync]);
}

#[test]
fn delta_fifo_resync_without_known_objects_does_nothing() {
    let f = fifo();
    f.resync().unwrap();
    assert!(f.is_empty());
}

#[tokio::test(start_paused = true)]
async fn delta_fifo_update_resync_race() {
    let f = fifo_known(vec![mk("foo", 5)]);
    f.update(mk("foo", 6)).unwrap();
    f.resync().unwrap();
    assert_drains("resync", &f, vec![deltas(vec![d(Updated, &mk("foo", 6))])]).await;
}
