//! `managedFields` of a custom object written through its `scale` subresource, as the real
//! apiextensions-apiserver keeps them: the object's entries are seen from the Scale (an
//! owner of the replicas path owns the Scale's `spec.replicas`), the write is recorded
//! there as the writer's `Update` of `autoscaling/v1` with `subresource: scale`, and the
//! result is carried back to the object, at the replicas path of the version written.
//!
//! The real server names an entry by manager, operation, subresource and, for `Update`
//! entries only, apiVersion. Seen from the Scale, an `Update` entry's apiVersion is
//! `autoscaling/v1`, so it is never the object's entry of the same manager: carried back,
//! the object's entry loses the replicas path and the Scale's comes back as an entry of
//! its own, without a `time`. An `Apply` entry is the same on both sides and keeps the
//! path (and its time) while its value stands.

use crate::field_set::{FieldSet, Path};
use crate::managed_fields::{Entry, Operation};

/// The Scale's apiVersion: the apiVersion of `Update` entries seen from the Scale.
const SCALE_API_VERSION: &str = "autoscaling/v1";

/// The replicas path of each version of a CRD (`None`: that version has no `scale`).
pub(super) type ReplicasPaths = Vec<(String, Option<Path>)>;

/// An entry's name as the real manager identifier: manager, operation, apiVersion
/// (`Update` only) and subresource.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    manager: String,
    operation: Operation,
    api_version: String,
    subresource: String,
}

impl Identity {
    fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        let api_version = match operation {
            Operation::Apply => "",
            Operation::Update => api_version,
        };
        Self {
            manager: manager.to_owned(),
            operation,
            api_version: api_version.to_owned(),
            subresource: subresource.to_owned(),
        }
    }

    fn of(entry: &Entry) -> Self {
        Self::new(
            &entry.manager,
            entry.operation,
            &entry.api_version,
            &entry.subresource,
        )
    }
}

/// The object's `managedFields` after `writer` wrote the Scale of version `api_version`
/// (`changed`: whether the replicas value changed). `entries` are the stored object's;
/// `paths` the replicas path of every version of its CRD (an entry of a version the CRD
/// no longer has is dropped, as the real `ToParent` drops it).
pub(super) fn after_scale_write(
    entries: Vec<Entry>,
    paths: &ReplicasPaths,
    api_version: &str,
    writer: &str,
    changed: bool,
) -> Vec<Entry> {
    let path_of = |version: &str| paths.iter().find(|(v, _)| v == version).map(|(_, p)| p);
    // The entries owning the Scale's `spec.replicas`, as named on the Scale.
    let mut scale_owners: Vec<Identity> = entries
        .iter()
        .filter(|e| matches!(path_of(&e.api_version), Some(Some(p)) if e.set.contains(p)))
        .map(|e| Identity::new(&e.manager, e.operation, SCALE_API_VERSION, &e.subresource))
        .collect();
    if changed {
        // An update takes a field it changes from every other manager.
        scale_owners = vec![Identity::new(
            writer,
            Operation::Update,
            SCALE_API_VERSION,
            "scale",
        )];
    }
    let mut out = Vec::with_capacity(entries.len() + 1);
    for mut entry in entries {
        let Some(path) = path_of(&entry.api_version) else {
            continue;
        };
        let Some(path) = path.as_ref().filter(|p| entry.set.contains(p)) else {
            out.push(entry);
            continue;
        };
        let identity = Identity::of(&entry);
        if let Some(i) = scale_owners.iter().position(|o| *o == identity) {
            scale_owners.remove(i);
            out.push(entry);
        } else {
            entry.set.remove(path);
            if !entry.set.is_empty() {
                out.push(entry);
            }
        }
    }
    let Some(Some(path)) = path_of(api_version) else {
        return out;
    };
    for owner in scale_owners {
        let mut set = FieldSet::default();
        set.insert(path);
        out.push(Entry {
            manager: owner.manager,
            operation: owner.operation,
            api_version: api_version.to_owned(),
            subresource: owner.subresource,
            time: None,
            set,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::field_set::PathElement;

    fn replicas() -> Path {
        vec![
            PathElement::Field("spec".to_owned()),
            PathElement::Field("replicas".to_owned()),
        ]
    }

    fn entry(manager: &str, operation: Operation, fields: serde_json::Value) -> Entry {
        Entry {
            manager: manager.to_owned(),
            operation,
            api_version: "example.com/v1".to_owned(),
            subresource: String::new(),
            time: Some(json!("2026-01-01T00:00:00Z")),
            set: FieldSet::from_fields_v1(&fields).unwrap(),
        }
    }

    fn paths() -> ReplicasPaths {
        vec![("example.com/v1".to_owned(), Some(replicas()))]
    }

    #[test]
    fn an_unchanged_value_stays_with_an_applier_and_leaves_an_updater() {
        let fields = json!({"f:spec": {"f:replicas": {}, "f:size": {}}});
        let entries = vec![
            entry("applier", Operation::Apply, fields.clone()),
            entry("updater", Operation::Update, fields),
        ];
        let out = after_scale_write(entries, &paths(), "example.com/v1", "scaler", false);
        let summary: Vec<_> = out
            .iter()
            .map(|e| (e.manager.as_str(), e.set.to_fields_v1(), e.time.is_some()))
            .collect();
        let both = json!({"f:spec": {"f:replicas": {}, "f:size": {}}});
        assert_eq!(
            summary,
            [
                ("applier", both, true),
                ("updater", json!({"f:spec": {"f:size": {}}}), true),
                ("updater", json!({"f:spec": {"f:replicas": {}}}), false),
            ]
        );
    }

    #[test]
    fn entries_of_versions_the_crd_lacks_are_dropped() {
        let mut old = entry("old", Operation::Update, json!({"f:spec": {"f:size": {}}}));
        old.api_version = "example.com/v0".to_owned();
        let out = after_scale_write(vec![old], &paths(), "example.com/v1", "scaler", true);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].manager.as_str(), out[0].subresource.as_str()),
            ("scaler", "scale")
        );
    }
}
