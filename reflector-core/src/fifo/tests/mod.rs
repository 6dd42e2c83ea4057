//! The DeltaFifo's tests: client-go's `delta_fifo_test.go` ported test by test with
//! the same expected delta sequences (one file per behaviour), cancel safety, the
//! processing lock, streamed first lists and watch runs. They live in the crate
//! because they drive the reflector's crate-private hooks (`StoreSink`:
//! `apply_watch_run`, `cached_unchanged`, streamed list pages).

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

mod has_synced;
mod invariants;
mod pop;
mod queueing;
mod replace;
mod resync;
mod streamed_list;
mod support;
mod transform;
mod watch_run;

/// ConfigMap `ns/cm-{k}` at resource version `version`.
fn cm(k: u8, version: u64) -> Arc<ConfigMap> {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(format!("cm-{k}"));
    c.metadata.namespace = Some("ns".into());
    c.metadata.resource_version = Some(version.to_string());
    Arc::new(c)
}
