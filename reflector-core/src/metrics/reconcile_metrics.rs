//! [`ReconcileMetrics`]: controller-runtime's `controller_runtime_*` metrics.

use std::fmt::Write as _;
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The buckets of `controller_runtime_reconcile_time_seconds`, as controller-runtime's
/// (5 ms to 60 s).
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The outcome of one reconcile: the `result` label of
/// `controller_runtime_reconcile_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReconcileResult {
    /// `Ok(Action::done())`: `success`.
    Success,
    /// `Err(_)`: `error`.
    Error,
    /// `Ok(Action::requeue_rate_limited())`: `requeue`.
    Requeue,
    /// `Ok(Action::requeue_after(d))`: `requeue_after`.
    RequeueAfter,
}

impl ReconcileResult {
    /// The label value: `success`, `error`, `requeue` or `requeue_after`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ReconcileResult::Success => "success",
            ReconcileResult::Error => "error",
            ReconcileResult::Requeue => "requeue",
            ReconcileResult::RequeueAfter => "requeue_after",
        }
    }

    const ALL: [ReconcileResult; 4] = [
        ReconcileResult::Success,
        ReconcileResult::Error,
        ReconcileResult::Requeue,
        ReconcileResult::RequeueAfter,
    ];
}

impl EncodeLabelValue for ReconcileResult {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: ReconcileResult,
}

#[derive(Clone, Copy, Debug)]
struct ReconcileTimeBuckets;

impl MetricConstructor<Histogram> for ReconcileTimeBuckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(RECONCILE_TIME_BUCKETS)
    }
}

/// controller-runtime's controller metrics in `prometheus-client`, each labelled
/// `controller` = the controller's name
/// (names and types: see [`Metrics`](super::Metrics)).
///
/// Usually reached through [`Metrics`](super::Metrics).
#[derive(Clone, Debug)]
pub struct ReconcileMetrics {
    reconcile_total: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    terminal_errors: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    reconcile_time: Family<ControllerLabels, Histogram, ReconcileTimeBuckets>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active_workers: Family<ControllerLabels, Gauge>,
    stale_sync_skips: Family<ControllerLabels, Counter>,
}

impl Default for ReconcileMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ReconcileMetrics {
    /// Empty families, not yet registered.
    #[must_use]
    pub fn new() -> Self {
        ReconcileMetrics {
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            terminal_errors: Family::default(),
            panics: Family::default(),
            reconcile_time: Family::new_with_constructor(ReconcileTimeBuckets),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
            stale_sync_skips: Family::default(),
        }
    }

    /// Registers the families in `registry` (counters get their `_total` suffix from
    /// the encoder). Register once per registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            self.reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            self.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            self.terminal_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            self.panics.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            self.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            self.max_concurrent.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            self.active_workers.clone(),
        );
        // kube-controller-manager's name (client-go's staleness mitigation).
        registry.register(
            "stale_sync_skips",
            "Total number of reconciles deferred because the cache had not yet seen the controller's own last write",
            self.stale_sync_skips.clone(),
        );
    }

    /// Creates every series of controller `name` at zero (so dashboards see them
    /// before the first reconcile, as controller-runtime's `initMetrics`), sets its
    /// maximum concurrency, and returns its recorder.
    pub fn init_controller(&self, name: &str, max_concurrent: usize) -> ControllerRecorder {
        let labels = ControllerLabels {
            controller: name.to_owned(),
        };
        let results = ReconcileResult::ALL.map(|result| {
            self.reconcile_total
                .get_or_create(&ResultLabels {
                    controller: name.to_owned(),
                    result,
                })
                .clone()
        });
        let max = self.max_concurrent.get_or_create(&labels).clone();
        max.set(i64::try_from(max_concurrent).unwrap_or(i64::MAX));
        ControllerRecorder {
            results,
            errors: self.reconcile_errors.get_or_create(&labels).clone(),
            terminal_errors: self.terminal_errors.get_or_create(&labels).clone(),
            panics: self.panics.get_or_create(&labels).clone(),
            reconcile_time: self.reconcile_time.get_or_create(&labels).clone(),
            active_workers: self.active_workers.get_or_create(&labels).clone(),
            stale_sync_skips: self.stale_sync_skips.get_or_create(&labels).clone(),
        }
    }
}

/// One controller's handles into [`ReconcileMetrics`]; cheap to clone.
#[derive(Clone, Debug)]
pub struct ControllerRecorder {
    /// Indexed as [`ReconcileResult::ALL`].
    results: [Counter; 4],
    errors: Counter,
    terminal_errors: Counter,
    panics: Counter,
    reconcile_time: Histogram,
    active_workers: Gauge,
    stale_sync_skips: Counter,
}

impl ControllerRecorder {
    /// Records one reconcile that took `elapsed` and ended with `result`.
    pub fn reconciled(&self, result: ReconcileResult, elapsed: Duration) {
        let i = match result {
            ReconcileResult::Success => 0,
            ReconcileResult::Error => 1,
            ReconcileResult::Requeue => 2,
            ReconcileResult::RequeueAfter => 3,
        };
        self.results[i].inc();
        if result == ReconcileResult::Error {
            self.errors.inc();
        }
        self.reconcile_time.observe(elapsed.as_secs_f64());
    }

    /// Records an error the error policy chose not to retry.
    pub fn terminal_error(&self) {
        self.terminal_errors.inc();
    }

    /// Records a reconcile that panicked (also recorded as an error by
    /// [`reconciled`](Self::reconciled)).
    pub fn panicked(&self) {
        self.panics.inc();
    }

    /// Records a reconcile deferred until the cache reaches the controller's own
    /// last write (`stale_sync_skips_total`).
    pub fn stale_sync_skipped(&self) {
        self.stale_sync_skips.inc();
    }

    /// A worker entered (`+1`) or left (`-1`) a reconcile.
    pub fn active_workers_add(&self, delta: i64) {
        self.active_workers.inc_by(delta);
    }
}
