//! The reflector's behaviours into an informer's queue, with the DeltaFifo.

const QUEUE: crate::informer::InformerQueue = crate::informer::InformerQueue::DeltaFifo;

#[path = "fifo_streaming.rs"]
mod fifo_streaming;
#[path = "list_stream.rs"]
mod list_stream;
#[path = "watch_list_into_queue.rs"]
mod watch_list_into_queue;
