//! [`Footprint`]: what a controller reads and writes — the kind of each informer it
//! watches and what it does with it — for the RBAC a
//! [`Manager`](crate::manager::Manager) derives, and the readiness check of each
//! informer.

use std::fmt;

use crate::informer::SharedIndexInformer;
use crate::metrics::Health;
use crate::object::{Object, short_type_name};

use super::group_resource::GroupResource;
use super::kind_key::ResourceScope;

/// The kind `informer` lists, read from its list URL; `None` for an informer that does
/// not list through the API server (a `FakeSource`), which needs no RBAC.
fn listed_by<O: Object>(informer: &SharedIndexInformer<O>) -> Option<GroupResource> {
    ResourceScope::from_url(informer.api_url()?).map(ResourceScope::into_group_resource)
}

/// What a controller does with a kind it watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum KindUse {
    /// Its primary: read, and written (finalizers, status).
    Primary,
    /// Children it owns (`owns`): read, created, changed and deleted.
    Owned,
    /// Another watched kind (`watches`): read only.
    Watched,
}

/// Registers one informer's readiness check, labelled after the controller.
type ReadinessCheck = Box<dyn FnOnce(&Health, &str) + Send + Sync>;

/// The kinds one controller watches and how it uses each, with the readiness check
/// of each informer (ready once it synced).
#[derive(Default)]
pub(crate) struct Footprint {
    /// In the order the informers were given: the primary first.
    pub(crate) kinds: Vec<(GroupResource, KindUse)>,
    readiness: Vec<ReadinessCheck>,
}

impl fmt::Debug for Footprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Footprint")
            .field("kinds", &self.kinds)
            .finish_non_exhaustive()
    }
}

impl Footprint {
    /// Adds `informer`, of kind `O`, used as `used`: its kind as its list URL names it
    /// (any Rust type: `K`, `PartialObjectMeta<K>`, `DynamicObject`), or for an informer
    /// that lists through no URL none (a `FakeSource` needs no RBAC).
    pub(crate) fn add<O: Object>(&mut self, informer: &SharedIndexInformer<O>, used: KindUse) {
        self.add_kind(listed_by(informer), informer, used);
    }

    /// As [`add`](Self::add), with `O`'s own kind for an informer without a URL.
    pub(crate) fn add_typed<O>(&mut self, informer: &SharedIndexInformer<O>, used: KindUse)
    where
        O: Object,
        O::DynamicType: Default,
    {
        let kind = listed_by(informer)
            .unwrap_or_else(|| GroupResource::of::<O>(&O::DynamicType::default()));
        self.add_kind(Some(kind), informer, used);
    }

    fn add_kind<O: Object>(
        &mut self,
        kind: Option<GroupResource>,
        informer: &SharedIndexInformer<O>,
        used: KindUse,
    ) {
        self.kinds.extend(kind.map(|kind| (kind, used)));
        let informer = informer.clone();
        self.readiness.push(Box::new(move |health, controller| {
            let label = format!("{controller}/{}", short_type_name::<O>());
            health.informer(&label, &informer);
        }));
    }

    /// Registers the readiness check of every informer in `health`, labelled
    /// `<controller>/<Kind>` (as the informers' metrics are).
    pub(crate) fn register_readiness(&mut self, health: &Health, controller: &str) {
        for register in self.readiness.drain(..) {
            register(health, controller);
        }
    }
}
