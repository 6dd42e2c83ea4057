//! Which resources CRD objects serve, and each one's storage: schema, scale paths,
//! selectable fields, when its storage (and watch cache) began and when earlier ones
//! ended.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::scale::ScalePaths;
use crate::state::ResourceId;

/// How one served custom resource version is checked, and where its scale lives.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    /// Name of the CRD that serves it (`widgets.example.com`).
    pub crd: String,
    /// The version's `openAPIV3Schema` (None: no pruning or validation).
    pub schema: Option<Arc<Value>>,
    /// The version's `scale` subresource.
    pub scale: Option<ScalePaths>,
    /// The JSON paths of the version's `selectableFields` (`.spec.size`).
    pub selectable_fields: Vec<String>,
    /// For a version other than the storage version of a CRD converted by webhook: how
    /// (its objects live in the storage version's store and are converted on the way).
    pub conversion: Option<Arc<crate::webhooks::conversion::Conversion>>,
}

/// Resources served from CRD objects. Lives in `State` (guarded by `Shared::state`).
#[derive(Debug, Default)]
pub(crate) struct CustomResources {
    /// Served custom resource versions, by resource id.
    served: BTreeMap<ResourceId, Served>,
    /// Resource ids no longer served (their CRD or version went away). Ids are never
    /// reused for another resource, so the event log's ids stay valid.
    retired: BTreeSet<ResourceId>,
    /// The resourceVersions at which each id's storage was torn down, oldest first: its
    /// CRD was deleted, the version stopped being served, or the CRD's spec changed. A
    /// watch of the resource ends there, as the real server's watches end when a CRD's
    /// storage is torn down.
    storage_ends: BTreeMap<ResourceId, Vec<u64>>,
    /// The resourceVersion and the time at which each id's current storage (and so its
    /// watch cache) began: the CRD's creation or its last change of spec. A watch from
    /// before it is 410, as the real watch cache's history starts there.
    storage_since: BTreeMap<ResourceId, (u64, tokio::time::Instant)>,
}

impl CustomResources {
    /// Whether `rid` stopped being served.
    pub(crate) fn is_retired(&self, rid: ResourceId) -> bool {
        self.retired.contains(&rid)
    }

    /// Serves `rid` as `served` says.
    pub(super) fn serve(&mut self, rid: ResourceId, served: Served) {
        self.served.insert(rid, served);
    }

    /// Serves `rid` again (a CRD came back).
    pub(crate) fn revive(&mut self, rid: ResourceId) {
        self.retired.remove(&rid);
    }

    /// How `rid` is served, if it comes from a CRD.
    pub(crate) fn served(&self, rid: ResourceId) -> Option<&Served> {
        self.served.get(&rid)
    }

    /// The scale paths of `rid`, if it has a `scale` subresource.
    pub(crate) fn scale(&self, rid: ResourceId) -> Option<&ScalePaths> {
        self.served.get(&rid)?.scale.as_ref()
    }

    /// The ids served by the CRD `crd`.
    pub(super) fn of_crd(&self, crd: &str) -> Vec<ResourceId> {
        self.served
            .iter()
            .filter(|(_, s)| s.crd == crd)
            .map(|(rid, _)| *rid)
            .collect()
    }

    /// The first resourceVersion after `since` at which the storage of `rid` was
    /// torn down (the CRD deleted or changed, the version no longer served).
    pub(crate) fn storage_ended_since(&self, rid: ResourceId, since: u64) -> Option<u64> {
        self.storage_ends
            .get(&rid)?
            .iter()
            .copied()
            .find(|rv| *rv > since)
    }

    /// The resourceVersion at which the current storage of `rid` began, if it comes from
    /// a CRD: watches from before it are 410.
    pub(crate) fn storage_since(&self, rid: ResourceId) -> Option<u64> {
        self.storage_since.get(&rid).map(|(rv, _)| *rv)
    }

    /// When the current storage of `rid` began, if it comes from a CRD.
    pub(crate) fn storage_started_at(&self, rid: ResourceId) -> Option<tokio::time::Instant> {
        self.storage_since.get(&rid).map(|(_, at)| *at)
    }

    /// Stops serving `rid` after the write at resourceVersion `rv`.
    pub(super) fn retire(&mut self, rid: ResourceId, rv: u64) {
        self.served.remove(&rid);
        self.retired.insert(rid);
        self.storage_since.remove(&rid);
        self.storage_ends.entry(rid).or_default().push(rv);
    }

    /// Starts a new storage for `rid` at resourceVersion `rv`, ending the one it had (its
    /// open watches end there).
    pub(super) fn restart_storage(&mut self, rid: ResourceId, rv: u64) {
        let started = (rv, tokio::time::Instant::now());
        if self.storage_since.insert(rid, started).is_some() {
            self.storage_ends.entry(rid).or_default().push(rv);
        }
    }
}
