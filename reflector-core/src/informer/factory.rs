//! [`InformerFactory`]: one shared informer per type, namespace and selectors.

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use kube::core::NamespaceResourceScope;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use serde_field_filter::{FieldFilter, FieldFilterError};

use crate::listwatch::ApiListerWatcher;
use crate::object::Object;
use crate::reflector::ReflectorOptions;

use super::{InformerError, InformerOptions, InformerScope, SharedIndexInformer};
use crate::fifo::QueueMode;

/// Which informer: type and scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct InformerKey {
    type_id: TypeId,
    type_name: &'static str,
    scope: InformerScope,
}

impl InformerKey {
    fn describe(&self) -> String {
        let short = self.type_name.rsplit("::").next().unwrap_or(self.type_name);
        let mut s = short.to_owned();
        if let Some(ns) = &self.scope.namespace {
            s.push_str(&format!(" in {ns}"));
        }
        if let Some(l) = &self.scope.labels {
            s.push_str(&format!(" labels {l}"));
        }
        if let Some(f) = &self.scope.fields {
            s.push_str(&format!(" fields {f}"));
        }
        s
    }
}

/// What the factory needs of an informer without knowing its type.
trait AnyInformer: Send + Sync {
    /// Claims the informer's run at once and returns it (`None`: already started).
    fn start_boxed(&self, cancel: CancellationToken) -> Option<BoxFuture<'static, ()>>;
    fn wait_synced_boxed(&self) -> BoxFuture<'static, Result<(), InformerError>>;
    fn as_any(&self) -> &dyn Any;
}

impl<K: Object> AnyInformer for SharedIndexInformer<K> {
    fn start_boxed(&self, cancel: CancellationToken) -> Option<BoxFuture<'static, ()>> {
        self.start(cancel)
    }
    fn wait_synced_boxed(&self) -> BoxFuture<'static, Result<(), InformerError>> {
        let this = self.clone();
        Box::pin(async move { this.wait_synced().await })
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Guarded by `InformerFactory::state`.
#[derive(Default)]
struct FactoryState {
    informers: BTreeMap<InformerKey, Arc<dyn AnyInformer>>,
    started: HashMap<InformerKey, JoinHandle<()>>,
}

/// Hands out shared informers, one per type and [`InformerScope`], and runs them,
/// as client-go's `SharedInformerFactory`. It owns what it starts: dropping the
/// factory (or [`shutdown`](Self::shutdown)) stops every informer it started.
///
/// By default every informer it makes skips `metadata.managedFields` *while decoding*
/// list bodies and watch events (see [`FieldFilter`]): the field is never allocated,
/// which roughly halves the cache's memory and most of the decode time.
/// [`InformerFactory::keep_managed_fields`] keeps it; [`InformerFactory::skip_fields`]
/// skips more paths. [`InformerFactory::reflector_options`] sets the reflector
/// options of every informer it makes (tests use it to speed every informer up).
/// One informer's own settings (page size, resync, skipped fields, transform,
/// indexers) go in the [`InformerOptions`] it is asked for with: the factory's
/// settings are the defaults of each.
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use reflector::ReflectorOptions;
/// use reflector::informer::{InformerFactory, InformerOptions};
/// # async fn f(client: kube::Client) {
/// let factory = InformerFactory::new(client);
/// let pods = factory.informer::<Pod>();
/// let same = factory.informer::<Pod>(); // the same informer
/// let cms = factory.namespaced::<ConfigMap>("kube-system");
/// let big = factory.scoped::<ConfigMap>(
///     InformerOptions::default().reflector_options(ReflectorOptions::default().page_size(100)),
/// );
/// factory.start();
/// factory.wait_synced().await.unwrap();
/// factory.shutdown().await; // or drop the factory
/// # }
/// ```
pub struct InformerFactory {
    client: Client,
    /// The settings of every informer made from now on, where its own options leave
    /// them unset (only the kind-independent ones: the setters below set them).
    defaults: InformerOptions<()>,
    /// The factory's informers and the tasks running them; never held across an
    /// await.
    state: Mutex<FactoryState>,
    /// Parent of every informer's run token; cancelled by `shutdown` and on drop.
    cancel: CancellationToken,
}

impl std::fmt::Debug for InformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.lock();
        f.debug_struct("InformerFactory")
            .field("defaults", &self.defaults)
            .field(
                "informers",
                &st.informers
                    .keys()
                    .map(InformerKey::describe)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl InformerFactory {
    /// A factory whose informers use `client`.
    #[must_use]
    pub fn new(client: Client) -> Self {
        InformerFactory {
            client,
            defaults: InformerOptions::default(),
            state: Mutex::new(FactoryState::default()),
            cancel: CancellationToken::new(),
        }
    }

    /// [`InformerOptions::resync`] of every informer made from now on (as
    /// `NewSharedInformerFactory(client, resync)`), where its own options set none.
    #[must_use]
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.defaults = std::mem::take(&mut self.defaults).resync(period);
        self
    }

    /// [`InformerOptions::reflector_options`] of every informer made from now on,
    /// where its own options set none. Tests use it to shorten every informer's
    /// backoff at once.
    #[must_use]
    pub fn reflector_options(mut self, options: ReflectorOptions) -> Self {
        self.defaults = std::mem::take(&mut self.defaults).reflector_options(options);
        self
    }

    /// [`InformerOptions::queue`] of every informer made from now on, where its own
    /// options set none.
    #[must_use]
    pub fn queue(mut self, queue: QueueMode) -> Self {
        self.defaults = std::mem::take(&mut self.defaults).queue(queue);
        self
    }

    /// [`InformerOptions::keep_managed_fields`] for every informer made from now on.
    #[must_use]
    pub fn keep_managed_fields(mut self) -> Self {
        self.defaults = std::mem::take(&mut self.defaults).keep_managed_fields();
        self
    }

    /// [`InformerOptions::skip_fields`] for every informer made from now on (besides
    /// the paths its own options skip).
    ///
    /// # Errors
    /// [`FieldFilterError::InvalidPath`] for a path that does not parse; see
    /// [`FieldFilter`] for the syntax.
    pub fn skip_fields<I, S>(mut self, paths: I) -> Result<Self, FieldFilterError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.defaults = std::mem::take(&mut self.defaults).skip_fields(paths)?;
        Ok(self)
    }

    /// The paths skipped while decoding by informers made from now on (those whose
    /// [`InformerOptions`] add none).
    #[must_use]
    pub fn field_filter(&self) -> FieldFilter {
        self.defaults.field_filter()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FactoryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The shared informer for every `K` in every namespace.
    #[must_use]
    pub fn informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: Object + DeserializeOwned + Debug,
        K::DynamicType: Default + Clone + Send + Sync + 'static,
    {
        self.scoped::<K>(InformerScope::default())
    }

    /// The shared informer for `K` in one namespace.
    #[must_use]
    pub fn namespaced<K>(&self, namespace: &str) -> SharedIndexInformer<K>
    where
        K: Object + Resource<Scope = NamespaceResourceScope> + DeserializeOwned + Debug,
        K::DynamicType: Default + Clone + Send + Sync + 'static,
    {
        self.scoped::<K>(InformerScope::default().namespace(namespace))
    }

    /// The shared informer for `K` within a scope (namespace, label and field
    /// selectors): an [`InformerScope`], with the factory's settings, or
    /// [`InformerOptions`], which hold a scope and this informer's own settings.
    /// Asking twice with the same scope returns the same informer, made with the
    /// settings of the first ask.
    ///
    /// `K` = [`PartialObjectMeta<T>`](kube::core::PartialObjectMeta) gives a
    /// metadata-only informer: it lists and watches `PartialObjectMetadata` (see
    /// [`ApiListerWatcher`]) and is another informer than `T`'s.
    ///
    /// A namespace is honoured only for namespaced kinds, by listing the namespace's
    /// URL; use [`InformerFactory::namespaced`] to have that checked at compile time.
    ///
    /// # Example
    /// ```no_run
    /// use k8s_openapi::api::core::v1::Pod;
    /// use reflector::informer::{InformerFactory, InformerScope};
    /// # fn f(factory: InformerFactory) {
    /// let web = factory.scoped::<Pod>(&InformerScope::default().namespace("prod").labels("app=web"));
    /// # let _ = web;
    /// # }
    /// ```
    #[must_use]
    pub fn scoped<K>(&self, options: impl Into<InformerOptions<K>>) -> SharedIndexInformer<K>
    where
        K: Object + DeserializeOwned + Debug,
        K::DynamicType: Default + Clone + Send + Sync + 'static,
    {
        let options = options.into();
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            type_name: std::any::type_name::<K>(),
            scope: options.scope.clone(),
        };
        let mut st = self.lock();
        if let Some(existing) = st.informers.get(&key)
            && let Some(informer) = existing.as_any().downcast_ref::<SharedIndexInformer<K>>()
        {
            if !options.inherits_all() {
                tracing::warn!(
                    informer = %key.describe(),
                    "informer already made: the settings of this ask are not applied"
                );
            }
            return informer.clone();
        }
        let informer = self.make(options);
        st.informers.insert(key, Arc::new(informer.clone()));
        informer
    }

    /// A new informer as `options` say, the factory's settings filling the rest.
    fn make<K>(&self, options: InformerOptions<K>) -> SharedIndexInformer<K>
    where
        K: Object + DeserializeOwned + Debug,
        K::DynamicType: Default + Clone + Send + Sync + 'static,
    {
        let options = options.or(&self.defaults);
        let scope = options.scope.clone();
        let dt = K::DynamicType::default();
        let api: Api<K> = Api::all_with(self.client.clone(), &dt);
        let mut lw = ApiListerWatcher::new_with(api, &dt).in_namespace(scope.namespace.as_deref());
        if let Some(l) = &scope.labels {
            lw = lw.labels(l);
        }
        if let Some(f) = &scope.fields {
            lw = lw.fields(f);
        }
        SharedIndexInformer::build(lw, options, scope.labels)
    }

    /// Starts every informer not yet started, each on its own task owned by the
    /// factory: [`shutdown`](Self::shutdown), or dropping the factory, stops them.
    pub fn start(&self) {
        let mut st = self.lock();
        let to_start: Vec<_> = st
            .informers
            .iter()
            .filter(|(k, _)| !st.started.contains_key(*k))
            .map(|(k, i)| (k.clone(), Arc::clone(i)))
            .collect();
        for (key, informer) in to_start {
            // Claimed here, before the task runs: a controller (or anyone) checking
            // right after `start` returns sees the informer started and leaves it be.
            // One started by someone else is theirs to stop.
            if let Some(run) = informer.start_boxed(self.cancel.child_token()) {
                st.started.insert(key, tokio::spawn(run));
            }
        }
    }

    /// Waits until every started informer has synced, as client-go's
    /// `WaitForCacheSync`, woken by each informer (no polling).
    ///
    /// # Errors
    /// [`InformerError::StoppedBeforeSync`] if one of them stopped first.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes. Put it in a `tokio::time::timeout` for a
    /// deadline.
    pub async fn wait_synced(&self) -> Result<(), InformerError> {
        let started: Vec<_> = {
            let st = self.lock();
            st.informers
                .iter()
                .filter(|(k, _)| st.started.contains_key(*k))
                .map(|(_, i)| i.wait_synced_boxed())
                .collect()
        };
        futures::future::try_join_all(started).await.map(drop)
    }

    /// Stops every informer and returns once all their tasks have ended.
    ///
    /// # Cancel safety
    /// Dropping the future leaves some tasks un-awaited; they still stop, since the
    /// token is cancelled first.
    pub async fn shutdown(&self) {
        self.cancel.cancel();
        let tasks: Vec<JoinHandle<()>> = {
            let mut st = self.lock();
            st.started.drain().map(|(_, t)| t).collect()
        };
        for t in tasks {
            if let Err(e) = t.await
                && e.is_panic()
            {
                tracing::error!("an informer task panicked");
            }
        }
    }
}

impl Drop for InformerFactory {
    /// Stops every informer the factory started (their tasks end on their own).
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::listwatch::mock_api::MockApi;

    fn cm_json(name: &str, rv: &str) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}","managedFields":[{{"manager":"kubectl","fieldsV1":{{"f:data":{{}}}}}}]}},"data":{{"k":"v"}}}}"#
        )
    }

    fn api() -> MockApi {
        MockApi::new(
            &format!(
                r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"10"}},"items":[{},{}]}}"#,
                cm_json("a", "3"),
                cm_json("b", "4")
            ),
            &format!("{{\"type\":\"ADDED\",\"object\":{}}}\n", cm_json("c", "11")),
        )
    }

    /// Runs the factory's ConfigMap informer until the watched object `c` is cached;
    /// returns the cached objects.
    async fn cached(factory: InformerFactory) -> Vec<Arc<ConfigMap>> {
        let informer = factory.namespaced::<ConfigMap>("ns");
        factory.start();
        factory.wait_synced().await.unwrap();
        assert!(informer.has_synced());
        let objs = all_three(&informer).await;
        factory.shutdown().await;
        objs
    }

    /// Waits until `informer` caches a and b (listed) and c (watched).
    async fn all_three(informer: &SharedIndexInformer<ConfigMap>) -> Vec<Arc<ConfigMap>> {
        for _ in 0..1000 {
            if informer.indexer().len() == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let objs = informer.indexer().list();
        assert_eq!(objs.len(), 3, "a and b listed, c watched");
        objs
    }

    /// `start` claims each informer before it returns: a controller that looks right
    /// after (before the informer's task first ran) sees it started, so it neither
    /// starts it nor stops it when the controller ends (the race behind a flaky
    /// `deployment_controller_over_http`).
    #[tokio::test]
    async fn start_claims_informers_before_returning() {
        let factory = InformerFactory::new(api().client());
        let informer = factory.namespaced::<ConfigMap>("ns");
        factory.start();
        assert!(informer.has_started());
        assert!(
            informer.start(CancellationToken::new()).is_none(),
            "a second starter gets nothing to run"
        );
        factory.wait_synced().await.unwrap();
        factory.shutdown().await;
        assert!(informer.is_stopped());
    }

    #[tokio::test(start_paused = true)]
    async fn informers_skip_managed_fields_while_decoding_by_default() {
        let objs = cached(InformerFactory::new(api().client())).await;
        assert!(objs.iter().all(|o| o.metadata.managed_fields.is_none()));
        assert!(objs.iter().all(|o| o.data.is_some()));
    }

    #[tokio::test(start_paused = true)]
    async fn keep_managed_fields_keeps_them() {
        let factory = InformerFactory::new(api().client()).keep_managed_fields();
        assert!(factory.field_filter().is_empty());
        let objs = cached(factory).await;
        assert!(objs.iter().all(|o| o.metadata.managed_fields.is_some()));
    }

    #[tokio::test(start_paused = true)]
    async fn skip_fields_adds_user_paths() {
        let factory = InformerFactory::new(api().client())
            .skip_fields(["data"])
            .unwrap();
        assert_eq!(
            factory.field_filter(),
            FieldFilter::parse(["data", "metadata.managedFields"]).unwrap()
        );
        let objs = cached(factory).await;
        assert!(objs.iter().all(|o| o.data.is_none()));
        assert!(objs.iter().all(|o| o.metadata.managed_fields.is_none()));
        let bad = InformerFactory::new(api().client()).skip_fields(["data..x"]);
        assert!(matches!(bad, Err(FieldFilterError::InvalidPath { .. })));
    }

    /// One `managedFields` default: an informer over a lister-watcher of its own
    /// skips them while decoding as a factory's does, unless its options keep them.
    #[tokio::test(start_paused = true)]
    async fn with_options_skips_managed_fields_unless_kept() {
        for keep in [false, true] {
            let lw = ApiListerWatcher::new(Api::<ConfigMap>::namespaced(api().client(), "ns"));
            let mut options = InformerOptions::default();
            if keep {
                options = options.keep_managed_fields();
            }
            let informer = SharedIndexInformer::with_options(lw, options);
            let cancel = CancellationToken::new();
            let run = tokio::spawn({
                let (i, c) = (informer.clone(), cancel.clone());
                async move { i.run(c).await }
            });
            let objs = all_three(&informer).await;
            cancel.cancel();
            run.await.unwrap();
            assert!(
                objs.iter()
                    .all(|o| o.metadata.managed_fields.is_some() == keep),
                "keep_managed_fields: {keep}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn transform_runs_on_top_of_lean_decode() {
        let factory = InformerFactory::new(api().client());
        let api: Api<ConfigMap> = Api::all(api().client());
        let lw = ApiListerWatcher::new(api)
            .in_namespace(Some("ns"))
            .field_filter(factory.field_filter());
        let options = InformerOptions::default().transform(|cm: Arc<ConfigMap>| {
            let mut cm = Arc::unwrap_or_clone(cm);
            cm.metadata
                .labels
                .get_or_insert_default()
                .insert("seen".into(), "yes".into());
            Arc::new(cm)
        });
        let informer = SharedIndexInformer::with_options(lw, options);
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (i, c) = (informer.clone(), cancel.clone());
            async move { i.run(c).await }
        });
        informer.wait_synced().await.unwrap();
        let objs = all_three(&informer).await;
        cancel.cancel();
        run.await.unwrap();
        assert!(objs.iter().all(|o| o.metadata.managed_fields.is_none()));
        assert!(objs.iter().all(|o| {
            o.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l["seen"] == "yes")
        }));
    }
}
