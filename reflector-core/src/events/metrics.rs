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

/// The recorder's families; shared handles, cheap to clone. Registered through
/// [`Metrics`](crate::metrics::Metrics); a recorder given no `Metrics` counts into its
/// own, unregistered copy.
#[derive(Clone, Debug, Default)]
pub(crate) struct EventMetrics {
    dropped: Family<DroppedLabels, Counter>,
}

impl EventMetrics {
    pub(crate) fn register(&self, registry: &mut Registry) {
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
