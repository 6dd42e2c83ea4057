//! Ports of client-go's shared_informer_test.go behaviours, by name, against the
//! in-memory `FakeSource`, one file per behaviour. Time is tokio's paused clock
//! unless a test needs real threads.
//!
//! The suite runs once per queue: each behaviour's file is compiled into
//! `delta_fifo` and into `in_order`, whose `QUEUE` every informer it builds gets.

/// Declares the suite's behaviour files in the module of one queue, whose `QUEUE`
/// they take.
macro_rules! behaviours {
    () => {
        #[path = "delivery.rs"]
        mod delivery;
        #[path = "indexing.rs"]
        mod indexing;
        #[path = "lifecycle.rs"]
        mod lifecycle;
        #[path = "registration.rs"]
        mod registration;
        #[path = "relist.rs"]
        mod relist;
        #[path = "resync.rs"]
        mod resync;
        #[path = "waits.rs"]
        mod waits;
    };
}

mod atomic;
mod delta_fifo;
#[allow(
    clippy::duplicate_mod,
    reason = "the same behaviours, compiled again against the other queue"
)]
mod in_order;
