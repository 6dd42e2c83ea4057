//! The recorder's metric: `reflector_events_dropped_total{controller,reason}`.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// Why an Event occurrence was not written: the `reason` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum DropReason {
    /// The per-object spam filter's token bucket was empty.
    SpamFilter,
    /// The recorder's buffer was full.
    BufferFull,
    /// The API server answered the write with an error (not retried).
    Rejected,
    /// Connection errors outlasted the writer's tries.
    RetriesExhausted,
}

impl DropReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DropReason::SpamFilter => "spam_filter",
            DropReason::BufferFull => "buffer_full",
            DropReason::Rejected => "rejected",
            DropReason::RetriesExhausted => "retries_exhausted",
        }
    }
}

impl EncodeLabelValue for DropReason {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        std::fmt::Write::write_str(encoder, self.as_str())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DroppedLabels {
    controller: String,
    reason: DropReason,
}

/// The event recorders' metric family, owned by the recorder:
/// `reflector_events_dropped_total{controller,reason}`, a counter of the Event
/// occurrences a recorder dropped instead of writing; `reason` ∈ `spam_filter`,
/// `buffer_full`, `rejected`, `retries_exhausted`. Shared handles: clones count into
/// the same family.
///
/// Usually registered as part of the process's [`Metrics`](crate::metrics::Metrics)
/// bundle and handed to [`RecorderConfig::metrics`](super::RecorderConfig::metrics)
/// as that bundle; a recorder given none counts into its own, unregistered copy.
///
/// # Example
/// ```
/// use reflector::events::{EventMetrics, RecorderConfig};
/// use reflector::metrics::Registry;
///
/// // A process with recorders but no controller: the recorders' family alone.
/// let mut registry = Registry::default();
/// let metrics = EventMetrics::registered(&mut registry);
/// let config = RecorderConfig::default().metrics(&metrics);
/// # let _ = config;
/// ```
#[derive(Clone, Debug, Default)]
pub struct EventMetrics {
    dropped: Family<DroppedLabels, Counter>,
}

impl AsRef<EventMetrics> for EventMetrics {
    fn as_ref(&self) -> &EventMetrics {
        self
    }
}

impl EventMetrics {
    /// An empty family, not yet registered.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A new family, registered in `registry`.
    #[must_use]
    pub fn registered(registry: &mut Registry) -> Self {
        let metrics = Self::new();
        metrics.register(registry);
        metrics
    }

    /// Registers the family in `registry`. Register once per registry.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "reflector_events_dropped",
            "Event occurrences an event recorder dropped instead of writing, by reason",
            self.dropped.clone(),
        );
    }

    /// Counts `n` dropped occurrences of the events of `controller`.
    pub(crate) fn dropped(&self, controller: &str, reason: DropReason, n: u64) {
        self.dropped
            .get_or_create(&DroppedLabels {
                controller: controller.to_owned(),
                reason,
            })
            .inc_by(n);
    }
}
