//! What a custom resource's storage does when its CRD changes: objects are read from
//! storage through the new schema (its defaults applied, fields it does not declare
//! pruned), as the real server's storage decoder does, without a new resourceVersion.

use serde_json::Value;

use crate::state::{ResourceId, State};

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
