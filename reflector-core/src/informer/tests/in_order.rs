//! The informer suite with the in-order queue.

const QUEUE: crate::informer::InformerQueue = crate::informer::InformerQueue::InOrder;

behaviours!();
