//! What a custom resource's storage does when its CRD changes: objects are read from
//! storage through the new schema (its defaults applied, fields it does not declare
//! pruned), as the real server's storage decoder does, without a new resourceVersion.

use serde_json::{Value, json};

use crate::router::Target;
use crate::server::Shared;
use crate::state::{ResourceId, State};
use crate::status::ApiError;

/// The real 429 a custom resource's collection answers while its new storage
/// initializes: for [`ApiServerBuilder::crd_storage_initialization`] after the CRD's
/// creation or change of spec (never, by default).
///
/// [`ApiServerBuilder::crd_storage_initialization`]: crate::ApiServerBuilder::crd_storage_initialization
pub(crate) fn initializing(shared: &Shared, target: &Target) -> Option<ApiError> {
    let wait = shared.config.crd_storage_initialization;
    let Target::Collection { rid, .. } = target else {
        return None;
    };
    if wait.is_zero() {
        return None;
    }
    let started = shared.state().custom.storage_started_at(*rid)?;
    if tokio::time::Instant::now() >= started + wait {
        return None;
    }
    let mut error = ApiError::new(429, "TooManyRequests", "storage is (re)initializing")
        .with_details(json!({"retryAfterSeconds": 1}));
    error.retry_after = Some(1);
    Some(error)
}

/// Re-reads every stored object of `rid`, and its versions in the event log, through
/// `schema`: its `default`s are applied and fields it does not declare are pruned, as
/// the real server does when it decodes an object read from etcd. The objects keep their
/// resourceVersions and no watch event is sent: only what reads answer changes. A value
/// the schema would reject is served as it is (validation applies to writes only).
pub(super) fn apply_schema_on_read(state: &mut State, rid: ResourceId, schema: &Value) {
    state.rewrite_stored(rid, |value| {
        // Only pruning and defaulting matter here; errors are for writes.
        let _ = crate::schema_validation::admit(schema, value);
    });
}
