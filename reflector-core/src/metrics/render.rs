//! [`render_metrics`]: a registry in the Prometheus text exposition format.

use prometheus_client::registry::Registry;

/// The content type of [`render_metrics`]' output (OpenMetrics text, which
/// Prometheus scrapes).
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Encodes every metric of `registry` in the text exposition format (ending with
/// `# EOF`).
///
/// # Example
/// ```
/// use prometheus_client::registry::Registry;
/// use reflector::metrics::render_metrics;
///
/// assert_eq!(render_metrics(&Registry::default()), "# EOF\n");
/// ```
#[must_use]
pub fn render_metrics(registry: &Registry) -> String {
    let mut text = String::new();
    // Encoding into a String only fails if a metric's own encoding does; ours don't,
    // and a partial text is still the best answer a scrape can get.
    if let Err(e) = prometheus_client::encoding::text::encode(&mut text, registry) {
        tracing::error!(error = %e, "cannot encode metrics");
    }
    text
}
