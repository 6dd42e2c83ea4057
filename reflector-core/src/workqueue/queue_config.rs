//! [`QueueConfig`]: a work queue's name and metrics.

use std::fmt;

use super::WorkQueueMetrics;

/// Configuration of a work queue.
#[derive(Clone)]
#[non_exhaustive]
pub struct QueueConfig {
    /// The queue's name, used in logs and as the `name` label of metrics.
    /// Default: empty, as client-go's `New()`.
    pub name: String,
    /// Where the queue reports client-go's `workqueue_*` metrics, labelled with its
    /// name. Default: none, which records nothing and reads no clock (as client-go's
    /// `noopMetricsProvider`). Set with [`QueueConfig::metrics`].
    pub(crate) metrics: Option<WorkQueueMetrics>,
    /// Whether a worker takes the highest [`Priority`](super::Priority) first.
    /// Default: true, as controller-runtime's priority queue (its default since
    /// v0.23); false hands items out in the order queued, whatever their priority.
    /// Set with [`QueueConfig::priorities`].
    pub(crate) priorities: bool,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            name: String::new(),
            metrics: None,
            priorities: true,
        }
    }
}

impl QueueConfig {
    /// Sets the queue's name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Reports client-go's `workqueue_*` metrics (`workqueue_depth`,
    /// `workqueue_adds_total`, `workqueue_queue_duration_seconds`, ...; see
    /// [`WorkQueueMetrics`]) to `metrics`, labelled `name="<the queue's name>"`:
    /// the process's [`Metrics`](crate::metrics::Metrics) bundle, or the work-queue
    /// families alone.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use reflector::metrics::{render_metrics, Metrics, Registry};
    /// use reflector::workqueue::{QueueConfig, WorkQueue, DefaultRateLimiter};
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::registered(&mut registry);
    /// let queue: WorkQueue<String> = WorkQueue::with_config(
    ///     Arc::new(DefaultRateLimiter::default()),
    ///     QueueConfig::default().name("widgets").metrics(&metrics),
    /// );
    /// queue.add("ns/a".to_string());
    /// assert!(render_metrics(&registry).contains("workqueue_depth{name=\"widgets\",priority=\"0\"} 1"));
    /// ```
    #[must_use]
    pub fn metrics(mut self, metrics: &impl AsRef<WorkQueueMetrics>) -> Self {
        self.metrics = Some(metrics.as_ref().clone());
        self
    }

    /// Whether a worker takes the highest [`Priority`](super::Priority) first (the
    /// default), or every item in the order queued (`false`: every add counts as
    /// [`Priority::DEFAULT`](super::Priority::DEFAULT)).
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use reflector::workqueue::{DefaultRateLimiter, Priority, QueueConfig, WorkQueue};
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let fifo = WorkQueue::with_config(
    ///     Arc::new(DefaultRateLimiter::default()),
    ///     QueueConfig::default().priorities(false),
    /// );
    /// fifo.add_with_priority("first", Priority::LOW);
    /// fifo.add("second");
    /// assert_eq!(fifo.get().await, Some("first"));
    /// # }
    /// ```
    #[must_use]
    pub fn priorities(mut self, on: bool) -> Self {
        self.priorities = on;
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics", &self.metrics.is_some())
            .field("priorities", &self.priorities)
            .finish()
    }
}
