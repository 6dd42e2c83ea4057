//! The constructors of a [`Controller`] that make its primary informer themselves,
//! from an [`InformerFactory`], so that `sharded` (feature `sharding`) can remake it
//! with the shard's selector.

use std::fmt::Debug;
#[cfg(feature = "sharding")]
use std::sync::Arc;

use kube::{Api, Client};
use serde::de::DeserializeOwned;

use crate::informer::{InformerFactory, InformerOptions, InformerScope};
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
    /// while decoding). [`for_kind_with`](Self::for_kind_with) tunes that informer.
    #[must_use]
    pub fn for_kind(client: Client) -> Self {
        Self::for_kind_with(client, InformerOptions::default())
    }

    /// A controller of the `K` that `options`' scope selects, its informer made by
    /// an [`InformerFactory`] as `options` say (scope, reflector options, resync,
    /// skipped fields, transform, indexers), the factory's defaults filling the
    /// rest, as kube-runtime's `Controller::new` takes a `watcher::Config`.
    ///
    /// `sharded` (feature `sharding`) remakes this informer with the ring's
    /// selector added to the scope's own label selector (both must match) and every
    /// other option kept.
    ///
    /// # Example
    /// ```no_run
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use reflector::ReflectorOptions;
    /// use reflector::controller::{Action, Controller, Request};
    /// use reflector::informer::{InformerOptions, InformerScope};
    ///
    /// # async fn reconcile(_: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> { Ok(Action::done()) }
    /// # async fn f(client: kube::Client) -> Result<(), reflector::controller::ControllerError> {
    /// let options = InformerOptions::default()
    ///     .scope(InformerScope::default().labels("app=web"))
    ///     .reflector_options(ReflectorOptions::default().page_size(100))
    ///     .resync(Duration::from_secs(300));
    /// Controller::<ConfigMap>::for_kind_with(client, options)
    ///     .shutdown_on_signal()
    ///     .run(reconcile, Arc::new(()))
    ///     .await
    /// # }
    /// ```
    #[must_use]
    pub fn for_kind_with(client: Client, options: InformerOptions<K>) -> Self {
        Self::scoped(InformerFactory::new(client), options)
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
        Self::scoped(
            InformerFactory::new(api.into_client()),
            InformerOptions::default().scope(scope),
        )
    }

    /// A controller of `factory`'s informer made as `options` say, which `sharded`
    /// can remake with the shard's selector.
    #[cfg(not(feature = "sharding"))]
    fn scoped(factory: InformerFactory, options: InformerOptions<K>) -> Self {
        Self::new(factory.scoped::<K>(options))
    }

    /// A controller of `factory`'s informer made as `options` say, which
    /// [`sharded`](Controller::sharded) can remake with the shard's selector.
    #[cfg(feature = "sharding")]
    fn scoped(factory: InformerFactory, options: InformerOptions<K>) -> Self {
        let mut controller = Self::new(factory.scoped::<K>(options.clone()));
        controller.rescope = Some(Arc::new(move |labels: &str| {
            let mut options = options.clone();
            let labels = match options.scope.labels.take() {
                Some(own) => format!("{own},{labels}"),
                None => labels.to_owned(),
            };
            options.scope.labels = Some(labels);
            factory.scoped::<K>(options)
        }));
        controller
    }
}
