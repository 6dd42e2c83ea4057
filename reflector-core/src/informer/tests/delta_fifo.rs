//! The informer suite with the DeltaFifo.

const QUEUE: crate::informer::InformerQueue = crate::informer::InformerQueue::DeltaFifo;

#[path = "delivery.rs"]
mod delivery;
#[path = "indexing.rs"]
mod indexing;
#[path = "lifecycle.rs"]
mod lifecycle;
#[path = "registration.rs"]
mod registration;
#[path = "resync.rs"]
mod resync;
#[path = "waits.rs"]
mod waits;
