//! The DeltaFifo's tests: client-go's `delta_fifo_test.go` ported test by test with
//! the same expected delta sequences (one file per behaviour), cancel safety, the
//! processing lock, streamed first lists and watch runs. They live in the crate
//! because they drive the reflector's crate-private hooks (`StoreSink`:
//! `apply_watch_run`, `cached_unchanged`, streamed list pages).

mod has_synced;
mod invariants;
mod list_lookups;
mod pop;
mod queueing;
mod replace;
mod resync;
mod streamed_list;
mod transform;
mod watch_run;
mod watermark;
