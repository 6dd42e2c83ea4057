//! Ports of client-go's shared_informer_test.go behaviours, by name, against the
//! in-memory `FakeSource`, one file per behaviour. Time is tokio's paused clock
//! unless a test needs real threads.
//!
//! The suite runs once per queue: each behaviour's file is compiled into
//! `delta_fifo` and into `in_order`, whose `QUEUE` every informer it builds gets.

mod atomic;
mod delta_fifo;
#[allow(
    clippy::duplicate_mod,
    reason = "the same behaviours, compiled again against the other queue"
)]
mod in_order;
