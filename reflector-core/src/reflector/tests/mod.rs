//! Ports of client-go's reflector_test.go and reflector_watchlist_test.go, by name,
//! against scripted lister-watchers, one file per behaviour. Time is tokio's
//! paused clock throughout.

mod fifo_streaming;
mod list_rv;
mod list_stream;
mod run_loop;
mod watch_errors;
mod watch_events;
mod watch_list;
