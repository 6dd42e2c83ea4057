//! The in-order FIFO's tests: client-go's `the_real_fifo_test.go` ported test by
//! test with the same expected sequences (`real_fifo.rs`, its atomic cases in
//! `atomic.rs`, its batch pops in `pop_batch.rs`; the name of each starts with
//! `in_order_`), the consumer's watermark (`watermark.rs`), and whether a list may find
//! its objects in the cache (`list_lookups.rs`).
//!
//! Every test function of client-go's file has its port, named after it
//! (`TestRealFIFO_addUpdate` is `in_order_add_update`). Not ported, as client-go
//! comments them out itself: `requeueOnPop` and `ReplaceDeltaType` (the RealFIFO has
//! neither a requeue nor a choice of delta type for listed objects).

mod atomic;
mod list_lookups;
mod pop_batch;
mod real_fifo;
mod watermark;

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::fifo::InOrderFifo;
use crate::test_support::show;

/// Nothing more comes out within a second (of the paused clock).
async fn assert_nothing_to_pop_in_order(f: &InOrderFifo<ConfigMap>) {
    let popped = tokio::time::timeout(Duration::from_secs(1), f.pop(|e, _| show(&e))).await;
    assert!(popped.is_err(), "popped {popped:?}");
}
