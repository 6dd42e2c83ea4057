//! The reflector's behaviours into an informer's queue, with the in-order queue.

const QUEUE: crate::informer::InformerQueue = crate::informer::InformerQueue::InOrder;

behaviours!();
