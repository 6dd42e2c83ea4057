//! The testkit's integration tests, one test binary (`cargo test -p reflector-testkit
//! --test it`): each module is a suite over real HTTP against the embedded API server
//! (or its standalone binary); a test's name is `suite::test`, so
//! `cargo test -p reflector-testkit --test it watch_semantics::` runs one suite.
//! `support` is what the suites share.
//!
//! `footprint.rs` beside this folder is a binary of its own: it counts the process's
//! heap through its global allocator.

mod support;

mod admission_webhooks;
mod api_round_trips;
mod bad_input;
mod binary;
mod conversion_webhooks;
mod crd_api;
mod crd_fidelity;
mod crd_update;
mod events;
mod faults;
mod fidelity;
mod field_selectors;
mod field_validation;
mod json_patch;
mod kubectl_tables;
mod namespace_lifecycle;
mod openapi;
mod protobuf;
mod real_server_answers;
mod server_side_apply;
mod shared_event_lines;
mod strategic_merge_patch;
mod watch_semantics;
