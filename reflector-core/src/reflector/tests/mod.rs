//! Ports of client-go's reflector_test.go and reflector_watchlist_test.go, by name,
//! against scripted lister-watchers, one file per behaviour. Time is tokio's
//! paused clock throughout.
//!
//! The behaviours that write into an informer's queue run once per queue: each of
//! their files is compiled into `delta_fifo` and into `in_order`, whose `QUEUE` every
//! queue they build is. Where the two queues legitimately hand over different pops,
//! a test states each queue's exact sequence: the DeltaFifo accumulates every change
//! to an object under its key until the key is popped (one pop per key, a relist
//! reconciled key by key, with tombstones for what it lacks), while the in-order
//! queue hands over every change as its own entry in the order it came, a relist as
//! one whole list after what was queued before it, and the end of a first list
//! streamed page by page as a bookmark at the list's resource version.

/// Declares the behaviour files that write into an informer's queue in the module
/// of one queue, whose `QUEUE` they take.
macro_rules! behaviours {
    () => {
        #[path = "fifo_streaming.rs"]
        mod fifo_streaming;
        #[path = "list_stream.rs"]
        mod list_stream;
        #[path = "watch_list_into_queue.rs"]
        mod watch_list_into_queue;
    };
}

mod delta_fifo;
#[allow(
    clippy::duplicate_mod,
    reason = "the same behaviours, compiled again against the other queue"
)]
mod in_order;
mod list_rv;
mod run_loop;
mod watch_errors;
mod watch_events;
mod watch_list;
