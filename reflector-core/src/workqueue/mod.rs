//! Work queues that feed controller workers: client-go's `util/workqueue`.
//!
//! A controller's event handlers turn every object change into a key and add
//! it to a queue; a few worker tasks take keys from the queue and reconcile
//! them. The queues here give the guarantees that make this safe:
//!
//! - [`WorkQueue`] deduplicates: a key is queued at most once however often it
//!   is added, and a key being processed is never handed to a second worker. If
//!   it is added while a worker holds it, it is queued again when the worker
//!   calls [`done`](WorkQueue::done), so no change is ever missed.
//! - [`add_after`](WorkQueue::add_after) adds a key once a delay has elapsed;
//!   adding it again keeps the earliest time. There is no background task: due
//!   keys are promoted when the queue is used, and an idle getter sleeps until
//!   the earliest ready time.
//! - [`add_rate_limited`](WorkQueue::add_rate_limited) waits as long as the
//!   queue's [`RateLimiter`] says: by default ([`DefaultRateLimiter`])
//!   the maximum of a per-key exponential backoff (5 ms doubling to 1000 s) and
//!   an overall token bucket (10 qps, burst 100). [`forget`](WorkQueue::forget)
//!   resets a key's backoff after a success.
//!
//! The worker loop:
//!
//! ```
//! use reflector::object::ObjectKey;
//! use reflector::workqueue::WorkQueue;
//!
//! # async fn reconcile(_key: &ObjectKey) -> Result<(), ()> { Ok(()) }
//! async fn worker(queue: WorkQueue<ObjectKey>) {
//!     while let Some(key) = queue.get().await {
//!         match reconcile(&key).await {
//!             Ok(()) => queue.forget(&key),
//!             Err(()) => queue.add_rate_limited(key.clone()),
//!         }
//!         queue.done(&key);
//!     }
//! }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! # let queue = WorkQueue::new();
//! # queue.add(ObjectKey::new(Some("ns"), "a"));
//! # queue.shutdown();
//! # worker(queue).await;
//! # }
//! ```
//!
//! Shutdown: [`shutdown`](WorkQueue::shutdown) makes adds no-ops and lets getters
//! drain what is queued, then return `None`;
//! [`shutdown_with_drain`](WorkQueue::shutdown_with_drain) also waits until every
//! key being processed is done.
//!
//! Metrics: none by default; [`QueueConfig::metrics`] reports client-go's
//! `workqueue_*` metrics ([`WorkQueueMetrics`]) to the process's
//! [`Metrics`](crate::metrics::Metrics) bundle, or to the work-queue families alone.

mod metrics;
mod priority;
mod queue;
mod queue_config;
mod queue_state;
mod rate_limiter;

pub use metrics::WorkQueueMetrics;
pub use priority::Priority;
pub use queue::WorkQueue;
pub use queue_config::QueueConfig;
pub use rate_limiter::{
    DefaultRateLimiter, ExponentialBackoff, FastSlowBackoff, MaxOf, RateLimiter, TokenBucket,
    WithMaxWait,
};
