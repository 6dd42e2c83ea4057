//! Ports of client-go's reflector_test.go and reflector_watchlist_test.go, by name,
//! against scripted lister-watchers, one file per behaviour. Time is tokio's
//! paused clock throughout.
//!
//! The behaviours that write into an informer's queue (`fifo_streaming`,
//! `list_stream`, `watch_list_into_queue`) run once per queue mode: each test body
//! takes the mode, and `each_queue!` declares its `in_order` and `per_key` tests.
//! Where the two modes legitimately hand over different pops, a test states each
//! mode's exact sequence: per key, every change to an object accumulates under its
//! key until the key is popped (one pop per key, a relist reconciled key by key,
//! with tombstones for what it lacks); in order, every change is its own entry in
//! the order it came, a relist one whole list after what was queued before it, and
//! the end of a first list streamed page by page a bookmark at the list's resource
//! version.

mod fifo_streaming;
mod list_rv;
mod list_stream;
mod run_loop;
mod watch_errors;
mod watch_events;
mod watch_list;
mod watch_list_into_queue;
