//! The reflector's behaviours into an informer's queue, with the DeltaFifo.

const QUEUE: crate::informer::InformerQueue = crate::informer::InformerQueue::DeltaFifo;

behaviours!();
