//! [`Metrics`]: the metric families one process shares among its controllers.

use prometheus_client::registry::Registry;

use crate::events::metrics::EventMetrics;
use crate::workqueue::PrometheusMetricsProvider;

use super::{ReconcileMetrics, ReflectorCollector};

/// Every family a controller reports to: [`ReconcileMetrics`]
/// (`controller_runtime_*`), the work-queue families of
/// [`PrometheusMetricsProvider`] (`workqueue_*`, one queue per controller, named
/// after it), a [`ReflectorCollector`] (`reflector_*`) and the event recorders'
/// `reflector_events_dropped_total{controller,reason}`
/// ([`RecorderConfig::metrics`](crate::events::RecorderConfig::metrics)).
///
/// Register it once per [`Registry`] and hand clones (cheap: shared handles) to every
/// controller with [`Controller::metrics`](crate::controller::Controller::metrics);
/// registering families twice in one registry would make the exposition invalid.
///
/// # Example
/// ```
/// use prometheus_client::registry::Registry;
/// use reflector_core::metrics::{render_metrics, Metrics};
///
/// let mut registry = Registry::default();
/// let metrics = Metrics::registered(&mut registry);
/// metrics.reconcile().init_controller("widgets", 1);
/// assert!(render_metrics(&registry).contains("controller_runtime_active_workers{controller=\"widgets\"} 0"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    reconcile: ReconcileMetrics,
    workqueue: PrometheusMetricsProvider,
    reflectors: ReflectorCollector,
    events: EventMetrics,
}

impl Metrics {
    /// Empty families, not yet registered.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// New families, registered in `registry`.
    #[must_use]
    pub fn registered(registry: &mut Registry) -> Self {
        let metrics = Self::new();
        metrics.register(registry);
        metrics
    }

    /// Registers every family in `registry`. Register once per registry.
    pub fn register(&self, registry: &mut Registry) {
        self.reconcile.register(registry);
        self.workqueue.register(registry);
        self.reflectors.register(registry);
        self.events.register(registry);
    }

    /// The `controller_runtime_*` families.
    #[must_use]
    pub fn reconcile(&self) -> &ReconcileMetrics {
        &self.reconcile
    }

    /// The `workqueue_*` families.
    #[must_use]
    pub fn workqueue(&self) -> &PrometheusMetricsProvider {
        &self.workqueue
    }

    /// The `reflector_*` collector.
    #[must_use]
    pub fn reflectors(&self) -> &ReflectorCollector {
        &self.reflectors
    }

    /// The event recorders' family.
    pub(crate) fn events(&self) -> &EventMetrics {
        &self.events
    }
}
