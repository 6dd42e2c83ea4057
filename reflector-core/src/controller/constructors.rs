//! The constructors of a [`Controller`] that make its primary informer themselves,
//! from an [`InformerFactory`], so that [`sharded`](Controller::sharded) can remake
//! it with the shard's selector.

use std::fmt::Debug;
use std::sync::Arc;

use kube::{Api, Client};
use serde::de::DeserializeOwned;

use crate::informer::{InformerFactory, InformerScope};
use crate::object::Object;

use super::controller::Controller;

impl<K> Controller<K>
where
    K: Object + DeserializeOwned + Debug,
    K::DynamicType: Default + Clone + Send + Sync + 'static,
    K::Scope: 'static,
{
    /// A controller of every `K` the client can see, its informer made by an
    /// [`InformerFactory`] with the factory's defaults (`managedFields` skipped
    /// while decoding).
    #[must_use]
    pub fn for_kind(client: Client) -> Self {
        Self::scoped(InformerFactory::new(client), InformerScope::default())
    }

    /// A controller of the objects `api` reaches (one namespace for
    /// `Api::namespaced`, every namespace for `Api::all`), its informer made by an
    /// [`InformerFactory`] with the factory's defaults.
    #[must_use]
    pub fn for_api(api: Api<K>) -> Self {
        let mut scope = InformerScope::default();
        if let Some(ns) = api.namespace() {
            scope = scope.namespace(ns);
        }
        Self::scoped(InformerFactory::new(api.into_client()), scope)
    }

    /// A controller of `factory`'s informer of `scope`, which
    /// [`sharded`](Controller::sharded) can remake with the shard's selector.
    fn scoped(factory: InformerFactory, scope: InformerScope) -> Self {
        let mut controller = Self::new(factory.scoped::<K>(&scope));
        controller.rescope = Some(Arc::new(move |labels: &str| {
            let labels = match &scope.labels {
                Some(own) => format!("{own},{labels}"),
                None => labels.to_owned(),
            };
            factory.scoped::<K>(&scope.clone().labels(labels))
        }));
        controller
    }
}
