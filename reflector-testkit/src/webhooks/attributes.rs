//! A write as its webhooks are matched against it and told of it (the real
//! `admission.Attributes`): the resource and kind the client wrote, and the kind of the
//! objects the admission point holds.

use kube::core::{GroupVersionKind, GroupVersionResource};

use super::capture::Seen;
use super::equivalent::Equivalents;
use crate::resource::ResourceInfo;
use crate::state::{ResourceId, State};

/// What a write's webhooks are matched against and sent besides its objects.
#[derive(Debug, Clone)]
pub(crate) struct Attributes {
    /// The resource the client wrote (`requestResource`).
    pub resource: GroupVersionResource,
    /// The kind the client wrote (`requestKind`; `autoscaling/v1` `Scale` for `scale`).
    pub kind: GroupVersionKind,
    /// The kind of the objects at the admission point: the request's, but for a CRD
    /// converted by webhook written in another version, whose body reaches admission
    /// already in the storage version.
    pub object_kind: GroupVersionKind,
    /// The resources equivalent to `resource`, and how objects convert between them.
    pub equivalents: Equivalents,
    /// The resource the client wrote, as registered here.
    pub info: ResourceInfo,
}

impl Attributes {
    /// The attributes of the write `seen`, made through `requested` (the version the
    /// client named, when it is not the one whose handlers ran).
    pub(crate) fn of(state: &State, seen: &Seen, requested: Option<ResourceId>) -> Self {
        let rid = requested.unwrap_or(seen.rid);
        let info = state.resources[rid].clone();
        let kind_of = |info: &ResourceInfo| match seen.kind {
            Some([group, version, kind]) => GroupVersionKind::gvk(group, version, kind),
            None => GroupVersionKind::gvk(&info.group, &info.version, &info.kind),
        };
        Self {
            resource: GroupVersionResource::gvr(&info.group, &info.version, &info.plural),
            kind: kind_of(&info),
            object_kind: kind_of(&state.resources[seen.rid]),
            equivalents: Equivalents::of(state, rid, seen.subresource),
            info,
        }
    }
}
