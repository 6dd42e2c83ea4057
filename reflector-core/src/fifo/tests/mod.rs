//! The queue's tests, one file per behaviour: client-go's `delta_fifo_test.go`
//! (the per-key mode) and `the_real_fifo_test.go` (the in-order mode) ported test by
//! test with the same expected sequences — the in-order ones start with `in_order_`:
//! `real_fifo.rs` without atomic lists, `atomic.rs` with, `pop_batch.rs` for its
//! batch pops; every test function of client-go's files has its port, named after
//! it (`TestRealFIFO_addUpdate` is `in_order_add_update`; not ported, as client-go
//! comments them out itself: RealFIFO's `requeueOnPop` and `ReplaceDeltaType`) —
//! plus cancel safety, the processing lock, streamed first lists, watch runs and
//! the consumer's watermark in each mode. They live in the crate because they drive
//! the reflector's crate-private hooks (`StoreSink`: `apply_watch_run`,
//! `prepare_listed`, streamed list pages, `handed_over`).

mod atomic;
mod has_synced;
mod invariants;
mod list_lookups;
mod list_lookups_in_order;
mod pop;
mod pop_batch;
mod pop_batch_per_key;
mod queueing;
mod real_fifo;
mod replace;
mod resync;
mod streamed_list;
mod transform;
mod watch_run;
mod watermark;
mod watermark_in_order;
