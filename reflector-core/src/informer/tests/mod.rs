//! Ports of client-go's shared_informer_test.go behaviours, by name, against the
//! in-memory `FakeSource`, one file per behaviour. Time is tokio's paused clock
//! unless a test needs real threads.

mod delivery;
mod indexing;
mod lifecycle;
mod registration;
mod resync;
mod waits;
