//! The reflector's behaviours into an informer's queue, with the in-order queue.

const QUEUE: crate::informer::InformerQueue = crate::informer::InformerQueue::InOrder;

#[path = "fifo_streaming.rs"]
mod fifo_streaming;
#[path = "list_stream.rs"]
mod list_stream;
#[path = "watch_list_into_queue.rs"]
mod watch_list_into_queue;
