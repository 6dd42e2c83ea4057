//! Ports of client-go's shared_informer_test.go behaviours, by name, against the
//! in-memory `FakeSource`, one file per behaviour. Time is tokio's paused clock
//! unless a test needs real threads.
//!
//! Each behaviour runs once per queue mode: its test body takes the mode, which
//! every informer it builds gets, and `each_queue!` declares its `in_order` and
//! `per_key` tests.

mod atomic;
mod delivery;
mod indexing;
mod lifecycle;
mod registration;
mod relist;
mod resync;
mod waits;
