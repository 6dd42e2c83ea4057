//! [`ReflectorCollector`]: the `reflector_*` counters of informers' reflectors and
//! the `informer_queued_items` gauge, read at scrape time. The informer owns them; the [`metrics`](crate::metrics) bundle
//! holds a handle.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::SharedIndexInformer;
use crate::object::Object;
use crate::reflector::ReflectorStats;

type StatsFn = Arc<dyn Fn() -> ReflectorStats + Send + Sync>;

/// One counter of the `name`-labelled families: metric name (without `_total`),
/// help, and how to read it.
type Simple = (&'static str, &'static str, Read);

const SIMPLE: [Simple; 10] = [
    (
        "reflector_lists",
        "Total number of completed lists (all pages) per reflector",
        |s| s.lists,
    ),
    (
        "reflector_list_pages",
        "Total number of list pages requested per reflector",
        |s| s.list_pages,
    ),
    (
        "reflector_relists",
        "Total number of lists after the first per reflector",
        |s| s.relists,
    ),
    (
        "reflector_watches",
        "Total number of watches started per reflector",
        |s| s.watches,
    ),
    (
        "reflector_short_watches",
        "Total number of very short watches (closed within 1 s with no event) per reflector",
        |s| s.errors_very_short_watch,
    ),
    (
        "reflector_watch_events",
        "Total number of watch events handled per reflector",
        |s| s.events,
    ),
    (
        "reflector_bookmarks",
        "Total number of bookmark events per reflector",
        |s| s.bookmarks,
    ),
    (
        "reflector_unexpected_kind_events",
        "Total number of watch events dropped for an unexpected kind per reflector",
        |s| s.unexpected_kind_events,
    ),
    (
        "reflector_resyncs",
        "Total number of store resyncs per reflector",
        |s| s.resyncs,
    ),
    (
        "reflector_handler_panics",
        "Total number of event handler calls that panicked per informer",
        |s| s.handler_panics,
    ),
];

/// The `reason` label values of `reflector_errors_total`.
/// Reads one counter of a snapshot.
type Read = fn(&ReflectorStats) -> u64;

const ERROR_REASONS: [(&str, Read); 8] = [
    ("expired", |s| s.errors_expired),
    ("too_large_resource_version", |s| {
        s.errors_too_large_resource_version
    }),
    ("too_many_requests", |s| s.errors_too_many_requests),
    ("internal_error", |s| s.errors_internal),
    ("connection_refused", |s| s.errors_connection_refused),
    ("decode", |s| s.errors_decode),
    ("very_short_watch", |s| s.errors_very_short_watch),
    ("other", |s| s.errors_other),
];

/// Exports each added informer's [`ReflectorStats`] as Prometheus counters (and the
/// gauges `store_resource_version` and client-go's `informer_queued_items`, its queue's
/// length), read when the registry is encoded (a `prometheus-client` [`Collector`]), in the spirit
/// of client-go's reflector metrics. Every series is labelled `name` = the label the
/// informer was added under
/// (names: see [`Metrics::informer`](crate::metrics::Metrics::informer)).
///
/// Cloning gives another handle to the same set of informers. Adding under a label
/// already present replaces the earlier source.
#[derive(Clone, Default)]
pub struct ReflectorCollector {
    /// Label → stats reader; guarded by its own mutex, never held across an await
    /// (only while encoding or adding).
    sources: Arc<Mutex<BTreeMap<String, StatsFn>>>,
}

impl fmt::Debug for ReflectorCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorCollector")
            .field("sources", &self.names())
            .finish()
    }
}

impl ReflectorCollector {
    /// Registers the collector in `registry`; informers added later are exported too.
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(self.clone()));
    }

    /// Exports `informer`'s reflector counters under `name` (all zero until it starts).
    pub fn add<K: Object>(&self, name: &str, informer: &SharedIndexInformer<K>) {
        let informer = informer.clone();
        self.add_source(name, move || informer.reflector_stats());
    }

    /// Exports the counters `stats` returns under `name`.
    pub fn add_source(
        &self,
        name: &str,
        stats: impl Fn() -> ReflectorStats + Send + Sync + 'static,
    ) {
        self.lock().insert(name.to_owned(), Arc::new(stats));
    }

    /// Stops exporting `name`.
    #[cfg(test)]
    pub fn remove(&self, name: &str) {
        self.lock().remove(name);
    }

    /// The labels exported, sorted.
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, StatsFn>> {
        self.sources.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The gauges, as (name, help, read).
const GAUGES: [(&str, &str, Read); 2] = [
    (
        "store_resource_version",
        "The resource version the informer's cache has reached (0 before the first list)",
        |s| s.store_resource_version,
    ),
    (
        "informer_queued_items",
        "Number of items currently queued in the informer's FIFO",
        |s| s.queued_items,
    ),
];

impl Collector for ReflectorCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        // Read every source once, outside of the encoding of any family.
        let snapshot: Vec<(String, ReflectorStats)> = {
            let sources: Vec<(String, StatsFn)> = self
                .lock()
                .iter()
                .map(|(n, f)| (n.clone(), Arc::clone(f)))
                .collect();
            sources.into_iter().map(|(n, f)| (n, f())).collect()
        };
        for (metric, help, read) in SIMPLE {
            let mut family = encoder.encode_descriptor(metric, help, None, MetricType::Counter)?;
            for (name, stats) in &snapshot {
                let labels = [("name", name.as_str())];
                let series = family.encode_family(&labels)?;
                ConstCounter::new(read(stats)).encode(series)?;
            }
        }
        // Gauges; `store_resource_version` is KCM's name and `informer_queued_items`
        // client-go's (both label by group, version and resource there; here by the
        // `name` every informer series carries).
        for (metric, help, read) in GAUGES {
            let mut family = encoder.encode_descriptor(metric, help, None, MetricType::Gauge)?;
            for (name, stats) in &snapshot {
                let labels = [("name", name.as_str())];
                let series = family.encode_family(&labels)?;
                ConstGauge::new(i64::try_from(read(stats)).unwrap_or(i64::MAX)).encode(series)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "reflector_errors",
            "Total number of list and watch errors per reflector and reason",
            None,
            MetricType::Counter,
        )?;
        for (name, stats) in &snapshot {
            for (reason, read) in ERROR_REASONS {
                let labels = [("name", name.as_str()), ("reason", reason)];
                let series = family.encode_family(&labels)?;
                ConstCounter::new(read(stats)).encode(series)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::registry::Registry;

    use super::ReflectorCollector;
    use crate::metrics::render_metrics;
    use crate::reflector::ReflectorStats;

    fn stats(lists: u64, expired: u64) -> ReflectorStats {
        ReflectorStats {
            lists,
            errors_expired: expired,
            store_resource_version: 40 + lists,
            queued_items: lists * 10,
            ..ReflectorStats::default()
        }
    }

    #[test]
    fn collector_reads_sources_at_scrape_time_and_replaces_by_name() {
        let mut registry = Registry::default();
        let collector = ReflectorCollector::default();
        collector.register(&mut registry);
        collector.add_source("a", || stats(2, 1));
        collector.add_source("b", || stats(5, 0));
        let text = render_metrics(&registry);
        assert!(text.contains("# TYPE reflector_lists counter"), "{text}");
        assert!(
            text.contains("reflector_lists_total{name=\"a\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("reflector_lists_total{name=\"b\"} 5"),
            "{text}"
        );
        assert!(text.contains("reflector_errors_total{name=\"a\",reason=\"expired\"} 1"));
        assert!(text.contains("reflector_errors_total{name=\"a\",reason=\"other\"} 0"));
        assert!(
            text.contains("# TYPE store_resource_version gauge"),
            "{text}"
        );
        assert!(
            text.contains("store_resource_version{name=\"b\"} 45"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE informer_queued_items gauge"),
            "{text}"
        );
        assert!(
            text.contains("informer_queued_items{name=\"b\"} 50"),
            "{text}"
        );

        collector.add_source("a", || stats(7, 0));
        collector.remove("b");
        let text = render_metrics(&registry);
        assert!(
            text.contains("reflector_lists_total{name=\"a\"} 7"),
            "{text}"
        );
        assert!(!text.contains("name=\"b\""), "{text}");
        assert_eq!(collector.names(), vec!["a".to_owned()]);
    }
}
