//! Work queues that feed controller workers: client-go's `util/workqueue`.
//!
//! A controller's event handlers turn every object change into a key and add
//! it to a queue; a few worker tasks take keys from the queue and reconcile
//! them. The queues here give the guarantees that make this safe:
//!
//! - [`Queue`] deduplicates: a key is queued at most once however often it is
//!   added, and a key being processed is never handed to a second worker. If it
//!   is added while a worker holds it, it is queued again when the worker calls
//!   [`done`](Queue::done), so no change is ever missed.
//! - [`DelayingQueue`] adds [`add_after`](DelayingQueue::add_after): the key is
//!   added once the delay has elapsed; adding it again keeps the earliest time.
//!   There is no background task: due keys are promoted when the queue is used,
//!   and an idle getter sleeps until the earliest ready time.
//! - [`RateLimitingQueue`] adds [`add_rate_limited`](RateLimitingQueue::add_rate_limited)
//!   on top of a [`RateLimiter`]: by default ([`default_controller_rate_limiter`])
//!   the maximum of a per-key exponential backoff (5 ms doubling to 1000 s) and
//!   an overall token bucket (10 qps, burst 100). [`forget`](RateLimitingQueue::forget)
//!   resets a key's backoff after a success.
//!
//! The worker loop:
//!
//! ```
//! use reflector_core::object::ObjectKey;
//! use reflector_core::workqueue::RateLimitingQueue;
//!
//! # async fn reconcile(_key: &ObjectKey) -> Result<(), ()> { Ok(()) }
//! async fn worker(queue: RateLimitingQueue<ObjectKey>) {
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
//! # let queue = RateLimitingQueue::new();
//! # queue.add(ObjectKey::new(Some("ns"), "a"));
//! # queue.shut_down();
//! # worker(queue).await;
//! # }
//! ```
//!
//! Shutdown: [`shut_down`](Queue::shut_down) makes adds no-ops and lets getters
//! drain what is queued, then return `None`;
//! [`shut_down_with_drain`](Queue::shut_down_with_drain) also waits until every
//! key being processed is done.
//!
//! Metrics go through the [`QueueMetrics`] hook (none by default);
//! [`PrometheusMetricsProvider`] exports client-go's `workqueue_*` metrics.

mod delaying_queue;
mod metrics;
mod queue;
mod rate_limiter;
mod rate_limiting_queue;

pub use delaying_queue::DelayingQueue;
pub use metrics::{NoopQueueMetrics, PrometheusMetricsProvider, QueueMetrics};
pub use queue::{Queue, QueueConfig, QueueItem};
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
};
pub use rate_limiting_queue::RateLimitingQueue;
