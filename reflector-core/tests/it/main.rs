//! reflector-core's integration tests, one test binary (`cargo test -p reflector-core
//! --test it`): each module is a suite, against in-memory sources or the testkit's
//! embedded API server over real HTTP; a test's name is `suite::test`, so
//! `cargo test -p reflector-core --test it sharding::` runs one suite. `support`,
//! `paused` and `ring` are what the suites share.
//!
//! `controller_signal.rs` beside this folder is a binary of its own: it sends SIGTERM
//! to its process and installs the process's global tracing subscriber.

mod paused;
mod ring;
mod support;

mod controller;
mod controller_e2e;
mod controller_filters;
mod controller_for_kind_with;
mod controller_priority;
mod events;
mod fifo_indexer_model;
mod finalizer;
mod indexer;
mod informer_stuck_handler;
mod leader_election;
mod list_stream;
mod manager_recorded_writes;
mod metadata_informer;
mod metrics_server;
mod sharded_controller;
mod sharding;
mod stale_finalizer;
mod stale_reads;
mod webhook_certificates;
mod webhook_manager;
mod webhook_round_trips;
mod webhook_server;
mod workqueue_delaying_queue;
mod workqueue_priority;
mod workqueue_queue;
mod workqueue_rate_limiters;
mod workqueue_rate_limiting_queue;
