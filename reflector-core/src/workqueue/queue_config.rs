//! [`QueueConfig`]: a work queue's name and metrics.

use std::fmt;

use super::WorkQueueMetrics;

/// Configuration of a work queue.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct QueueConfig {
    /// The queue's name, used in logs and as the `name` label of metrics.
    /// Default: empty, as client-go's `New()`.
    pub name: String,
    /// Where the queue reports client-go's `workqueue_*` metrics, labelled with its
    /// name. Default: none, which records nothing and reads no clock (as client-go's
    /// `noopMetricsProvider`). Set with [`QueueConfig::metrics`].
    pub(crate) metrics: Option<WorkQueueMetrics>,
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
    /// assert!(render_metrics(&registry).contains("workqueue_depth{name=\"widgets\"} 1"));
    /// ```
    #[must_use]
    pub fn metrics(mut self, metrics: &impl AsRef<WorkQueueMetrics>) -> Self {
        self.metrics = Some(metrics.as_ref().clone());
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}
