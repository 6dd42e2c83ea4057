//! Work-queue metrics: the [`QueueMetrics`] hook (client-go's `queueMetrics`) and
//! [`WorkQueueMetrics`], the `prometheus-client` families with client-go's metric
//! names (client-go's `MetricsProvider`). The work queue owns these; the
//! [`metrics`](crate::metrics) bundle only holds a handle to them.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::Priority;

/// Receives the events of one queue. Every method defaults to doing nothing.
///
/// The queue calls these under its lock, so implementations must be quick
/// and must not call back into the queue.
pub trait QueueMetrics: Send + Sync {
    /// An item became dirty (queued, or marked for re-queue while processing) at
    /// `priority`: depth +1, adds +1.
    fn add(&self, priority: Priority) {
        let _ = priority;
    }
    /// A worker took an item of `priority` that had waited `queued_for`: depth −1.
    fn get(&self, priority: Priority, queued_for: Duration) {
        let _ = (priority, queued_for);
    }
    /// A dirty item's priority was raised from `from` to `to`.
    fn reprioritized(&self, from: Priority, to: Priority) {
        let _ = (from, to);
    }
    /// A worker finished an item after `worked_for`.
    fn done(&self, worked_for: Duration) {
        let _ = worked_for;
    }
    /// An item was added with a delay (`add_after`, `add_rate_limited`).
    fn retry(&self) {}
    /// The summed and the longest running time of the items being processed.
    fn unfinished_work(&self, unfinished: Duration, longest: Duration) {
        let _ = (unfinished, longest);
    }
}

/// The label set of every work-queue metric: the queue's name.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
}

/// The label set of `workqueue_depth`: the queue's name and the items' priority, as
/// controller-runtime's priority queue labels it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DepthLabels {
    name: String,
    priority: String,
}

/// Builds histograms with client-go's buckets: 10 exponential buckets from
/// 10 ns (10⁻⁸ s) to 10 s, factor 10.
#[derive(Clone, Copy, Debug)]
struct DurationBuckets;

impl MetricConstructor<Histogram> for DurationBuckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(1e-8, 10.0, 10))
    }
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// client-go's `workqueue_*` metric families in `prometheus-client`, each series
/// labelled `name` = the queue's name. Shared handles: clones report into the same
/// families.
///
/// A queue reports here once configured with
/// [`QueueConfig::metrics`](super::QueueConfig::metrics), which takes
/// these families or anything holding them: the process-wide
/// [`Metrics`](crate::metrics::Metrics) bundle, usually.
///
/// | metric | type |
/// |---|---|
/// | `workqueue_depth` | gauge, also labelled `priority` (controller-runtime's priority queue) |
/// | `workqueue_adds_total` | counter |
/// | `workqueue_queue_duration_seconds` | histogram, client-go's buckets (10 ns – 10 s, ×10) |
/// | `workqueue_work_duration_seconds` | histogram, the same buckets |
/// | `workqueue_retries_total` | counter |
/// | `workqueue_unfinished_work_seconds` | gauge (float) |
/// | `workqueue_longest_running_processor_seconds` | gauge (float) |
///
/// # Example
/// A queue's metrics without the rest of the bundle:
/// ```
/// use reflector::metrics::{Registry, render_metrics};
/// use reflector::workqueue::{QueueConfig, WorkQueue, WorkQueueMetrics};
///
/// let mut registry = Registry::default();
/// let metrics = WorkQueueMetrics::registered(&mut registry);
/// let queue: WorkQueue<String> = WorkQueue::with_config(
///     std::sync::Arc::new(reflector::workqueue::DefaultRateLimiter::default()),
///     QueueConfig::default().name("widgets").metrics(&metrics),
/// );
/// queue.add("ns/a".to_string());
/// assert!(render_metrics(&registry).contains("workqueue_adds_total{name=\"widgets\"} 1"));
/// ```
#[doc(alias = "MetricsProvider")]
#[derive(Clone, Debug)]
pub struct WorkQueueMetrics {
    depth: Family<DepthLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    queue_duration: Family<QueueLabels, Histogram, DurationBuckets>,
    work_duration: Family<QueueLabels, Histogram, DurationBuckets>,
    retries: Family<QueueLabels, Counter>,
    unfinished_work: Family<QueueLabels, FloatGauge>,
    longest_running: Family<QueueLabels, FloatGauge>,
}

impl Default for WorkQueueMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl AsRef<WorkQueueMetrics> for WorkQueueMetrics {
    fn as_ref(&self) -> &WorkQueueMetrics {
        self
    }
}

impl WorkQueueMetrics {
    /// Empty metric families, not yet registered.
    #[must_use]
    pub fn new() -> Self {
        WorkQueueMetrics {
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(DurationBuckets),
            work_duration: Family::new_with_constructor(DurationBuckets),
            retries: Family::default(),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
        }
    }

    /// New families, registered in `registry`.
    #[must_use]
    pub fn registered(registry: &mut Registry) -> Self {
        let metrics = Self::new();
        metrics.register(registry);
        metrics
    }

    /// Registers the seven families in `registry` (counters get their
    /// `_total` suffix from the encoder). Register once per registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            self.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            self.work_duration.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.retries.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
            self.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            self.longest_running.clone(),
        );
    }

    /// The hook for the queue called `name`.
    #[must_use]
    pub(crate) fn queue_metrics(&self, name: &str) -> Arc<dyn QueueMetrics> {
        let labels = QueueLabels {
            name: name.to_owned(),
        };
        Arc::new(PrometheusQueueMetrics {
            name: name.to_owned(),
            depth: self.depth.clone(),
            adds: self.adds.get_or_create(&labels).clone(),
            queue_duration: self.queue_duration.get_or_create(&labels).clone(),
            work_duration: self.work_duration.get_or_create(&labels).clone(),
            retries: self.retries.get_or_create(&labels).clone(),
            unfinished_work: self.unfinished_work.get_or_create(&labels).clone(),
            longest_running: self.longest_running.get_or_create(&labels).clone(),
        })
    }
}

/// One queue's handles into the families.
struct PrometheusQueueMetrics {
    /// The queue's name, for the depth's per-priority series.
    name: String,
    depth: Family<DepthLabels, Gauge>,
    adds: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    retries: Counter,
    unfinished_work: FloatGauge,
    longest_running: FloatGauge,
}

impl fmt::Debug for PrometheusQueueMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrometheusQueueMetrics")
            .finish_non_exhaustive()
    }
}

impl PrometheusQueueMetrics {
    /// The depth series of `priority`.
    fn depth(&self, priority: Priority) -> Gauge {
        let labels = DepthLabels {
            name: self.name.clone(),
            priority: priority.to_string(),
        };
        self.depth.get_or_create(&labels).clone()
    }
}

impl QueueMetrics for PrometheusQueueMetrics {
    fn add(&self, priority: Priority) {
        self.adds.inc();
        self.depth(priority).inc();
    }

    fn get(&self, priority: Priority, queued_for: Duration) {
        self.depth(priority).dec();
        self.queue_duration.observe(queued_for.as_secs_f64());
    }

    fn reprioritized(&self, from: Priority, to: Priority) {
        self.depth(from).dec();
        self.depth(to).inc();
    }

    fn done(&self, worked_for: Duration) {
        self.work_duration.observe(worked_for.as_secs_f64());
    }

    fn retry(&self) {
        self.retries.inc();
    }

    fn unfinished_work(&self, unfinished: Duration, longest: Duration) {
        self.unfinished_work.set(unfinished.as_secs_f64());
        self.longest_running.set(longest.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus_client::encoding::text::encode;
    use prometheus_client::registry::Registry;
    use tokio::time::advance;

    use crate::metrics::Metrics;
    use std::sync::Arc;

    use crate::workqueue::{DefaultRateLimiter, QueueConfig, WorkQueue};

    #[tokio::test(start_paused = true)]
    async fn prometheus_metrics_follow_adds_gets_and_dones() {
        let mut registry = Registry::default();
        let metrics = Metrics::registered(&mut registry);
        let queue = WorkQueue::with_config(
            Arc::new(DefaultRateLimiter::default()),
            QueueConfig::default().name("test").metrics(&metrics),
        );

        queue.add("a");
        queue.add("b");
        queue.add("a"); // deduplicated: not an add
        advance(Duration::from_secs(1)).await;
        let a = queue.get().await.unwrap(); // waited 1 s
        advance(Duration::from_secs(2)).await;
        queue.done(&a); // worked 2 s
        let b = queue.get().await.unwrap(); // waited 3 s
        queue.add_after("c", Duration::from_secs(60)); // a retry, still waiting
        advance(Duration::from_secs(4)).await;
        queue.update_unfinished_work(); // b running for 4 s

        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        let expected = [
            "# TYPE workqueue_depth gauge",
            "workqueue_depth{name=\"test\",priority=\"0\"} 0",
            "# TYPE workqueue_adds counter",
            "workqueue_adds_total{name=\"test\"} 2",
            "# TYPE workqueue_queue_duration_seconds histogram",
            "workqueue_queue_duration_seconds_sum{name=\"test\"} 4.0",
            "workqueue_queue_duration_seconds_count{name=\"test\"} 2",
            "workqueue_queue_duration_seconds_bucket{le=\"1e-8\",name=\"test\"} 0",
            "workqueue_queue_duration_seconds_bucket{le=\"1.0\",name=\"test\"} 1",
            "workqueue_queue_duration_seconds_bucket{le=\"10.0\",name=\"test\"} 2",
            "workqueue_queue_duration_seconds_bucket{le=\"+Inf\",name=\"test\"} 2",
            "# TYPE workqueue_work_duration_seconds histogram",
            "workqueue_work_duration_seconds_sum{name=\"test\"} 2.0",
            "workqueue_work_duration_seconds_count{name=\"test\"} 1",
            "# TYPE workqueue_retries counter",
            "workqueue_retries_total{name=\"test\"} 1",
            "# TYPE workqueue_unfinished_work_seconds gauge",
            "workqueue_unfinished_work_seconds{name=\"test\"} 4.0",
            "# TYPE workqueue_longest_running_processor_seconds gauge",
            "workqueue_longest_running_processor_seconds{name=\"test\"} 4.0",
        ];
        for line in expected {
            assert!(
                text.lines().any(|l| l == line),
                "missing line {line:?} in:\n{text}"
            );
        }
        // Ten buckets as client-go (1e-8 .. 10) plus +Inf, per histogram.
        let buckets = text
            .lines()
            .filter(|l| l.starts_with("workqueue_work_duration_seconds_bucket"))
            .count();
        assert_eq!(buckets, 11);
        queue.done(&b);
    }
}
