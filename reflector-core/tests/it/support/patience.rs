//! How long the tests over real HTTP wait, and why.
//!
//! A test here waits for something the informer or the embedded server does over a real
//! socket. Each wait ends the moment what it waits for happens (it is woken, or polls a
//! condition nothing notifies every [`POLL`]); the bound only turns a hang into a failure
//! that names what never came.
//!
//! The suites of `it/` use it, and so does `controller_signal.rs` (its own binary), which
//! uses part of it.
#![allow(dead_code)]

use std::time::Duration;

/// Hang detector: the test harness's slow-test mark (libtest reports a test still
/// running after 60 s). A passing run never reaches it, however loaded the machine.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Poll period of a wait on a condition nothing notifies (a store's contents, the
/// server's request log): short against the HTTP round trips awaited, so the wait ends
/// within one period of the condition holding.
pub const POLL: Duration = Duration::from_millis(5);
