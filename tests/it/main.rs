//! The facade's integration tests, one test binary (`cargo test --test it`): each
//! module is a suite, most over real HTTP against the testkit's embedded API server;
//! a test's name is `suite::test`, so `cargo test --test it manager::` runs one suite.
//! `support` is what the suites share.
//!
//! `ui.rs` beside this folder is the trybuild suite of compile errors, a binary of its
//! own: it builds its cases with cargo for minutes and needs nothing of these.

mod support;

mod derive_e2e;
mod derive_kinds;
mod derive_widget;
mod informer_factory;
mod manager;
mod manager_rbac;
mod minimal_example;
mod reflector_convergence;
mod reflector_http;
mod relist_after_crd_update;
