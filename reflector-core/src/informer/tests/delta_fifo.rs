//! The informer suite with the DeltaFifo.

const QUEUE: crate::informer::InformerQueue = crate::informer::InformerQueue::DeltaFifo;

behaviours!();
