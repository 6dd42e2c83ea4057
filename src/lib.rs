//! # reflector
//!
//! Kubernetes controllers in async Rust with client-go's semantics — Reflector, the
//! informer's queue (client-go 1.36's in-order FIFO by default, or per-key deltas as
//! the DeltaFIFO), SharedIndexInformer, Indexer, WorkQueue — on [`kube`] and
//! [`k8s_openapi`].
//!
//! Newcomers start with the [`Controller`](controller::Controller) builder: it
//! builds the shared informers, the work queue and the workers, and calls your
//! `reconcile` with each changed object's typed key and cached state.
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use reflector::prelude::*;
//! use tracing_subscriber::EnvFilter;
//!
//! async fn reconcile(req: Request<ConfigMap>, _ctx: Arc<()>) -> Result<Action, kube::Error> {
//!     match req.object {
//!         Some(cm) => println!("{}: {:?}", req.key, cm.data), // the cached object
//!         None => println!("{}: deleted", req.key),
//!     }
//!     Ok(Action::done())
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Errors are logged through `tracing`: without a subscriber they go unseen.
//!     let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
//!     tracing_subscriber::fmt().with_env_filter(filter).init();
//!     let client = kube::Client::try_default().await?;
//!     Controller::<ConfigMap>::for_kind(client)
//!         .shutdown_on_signal()
//!         .run(reconcile, Arc::new(()))
//!         .await?;
//!     Ok(())
//! }
//! ```
//!
//! As the operator grows (the repository's `examples/operator.rs` has all of it):
//!
//! - owned objects and other watched kinds: [`Controller::owns`](controller::Controller::owns),
//!   [`Controller::watches`](controller::Controller::watches);
//! - cleanup before deletion: [`controller::Finalizer`];
//! - Events (`kubectl events`): [`events::Recorder`];
//! - several controllers in one process, one active replica (leader election),
//!   `/metrics`, `/healthz` and `/readyz`, an ordered shutdown, RBAC and deploy
//!   manifests: the [`Manager`](manager::Manager) (the server needs the
//!   `metrics-server` feature); several active replicas: `sharding` (the
//!   `sharding` feature);
//! - metrics with controller-runtime's names: [`metrics`];
//! - defaulting, validating and conversion webhooks typed from the kind, with
//!   certificates that look after themselves: `webhooks::WebhookServer` (the
//!   `webhooks` feature), run by the manager on every replica;
//! - typed index queries on a custom resource: `#[derive(Reflect)]`, below.
//!
//! Every part is also usable on its own, in the order of the data path:
//! [`listwatch`] → [`Reflector`] → [`fifo`] → [`informer`] → [`store`] and [`lister`];
//! [`workqueue`] feeds the controller's workers. Test against the embedded API server of
//! [`reflector-testkit`](https://docs.rs/reflector-testkit), whose docs open with a guide,
//! "Testing your controller". The repository's `README.md` has the `Cargo.toml` lines,
//! and `docs/cluster.md` the CRD, RBAC and Deployment of an operator on a cluster.
//!
//! Features, all off by default: `metrics-server` (`metrics::MetricsServer`),
//! `sharding` (the `sharding` module and `Controller::sharded`: one controller split
//! across replicas), `webhooks` (the `webhooks` module: admission and conversion
//! webhooks over HTTPS, and `Manager::add_webhooks`), `testing`
//! (`listwatch::FakeSource`, an in-memory lister-watcher for unit tests). A controller that needs none of them builds none of them.
//!
//! # `#[derive(Reflect)]`: typed plumbing for a kind
//!
//! Put `#[derive(Reflect)]` on a CRD spec struct next to kube's
//! `#[derive(CustomResource)]` (it reads `#[kube(kind = "..")]`, or `root = ".."`, to
//! name the root type), or on a struct that implements `kube::Resource` itself (then
//! the struct is the root type and its own fields are indexed). Mark indexes:
//!
//! - `#[reflect(index)]` on a field: index `by_<field>`, one value per object for
//!   strings, integers and any `Display` type, zero or one for `Option<T>`, one per
//!   element for `Vec<T>`, `VecDeque<T>`, `BTreeSet<T>`, `HashSet<T>`, arrays (and an
//!   `Option` of those); `#[reflect(index(name = "by_custom"))]` renames it;
//! - on the struct, `#[reflect(index(name = "by_app", label = "app"))]`,
//!   `annotation = ".."`, or `with = path::to::fn` (a `fn(&Kind) -> Vec<String>`);
//! - `#[reflect(crate = "reflector_core")]` when the runtime is used without this
//!   facade.
//!
//! Index names start with `by_`. For a kind `Widget` the derive generates:
//!
//! - `impl reflect::Reflect for Widget` ([`reflect::Reflect`]): `Widget::indexers()`
//!   and `Widget::INDEX_NAMES`, and through the trait's provided methods
//!   `Widget::lister_watcher(client) -> ApiListerWatcher<Widget>` (every namespace;
//!   `.namespace(..)`, `.labels(..)`, `.fields(..)` narrow it) and
//!   `Widget::informer(client) -> SharedIndexInformer<Widget>` with every index
//!   registered (or `factory.reflected::<Widget>()` for a shared one);
//! - `pub trait WidgetIndexes`, implemented for the `Lister`, the `Indexer` and the
//!   `SharedIndexInformer` of `Widget`: `by_owner(value) -> Result<Vec<Arc<Widget>>, StoreError>`
//!   and `by_owner_keys(value) -> Result<Vec<ObjectRef<Widget>>, StoreError>` per
//!   index, `value` being anything `Display`. **Import the trait** where you query (it
//!   is in scope in the module that defines the kind). On what `Widget::informer(..)`
//!   and `factory.reflected::<Widget>()` build, a query is always `Ok`; on a cache
//!   built without `Widget::indexers()` it fails loudly with
//!   `StoreError::UnknownIndex("by_owner")` rather than answering an empty list that
//!   would read as "no match".
//!
//! The query trait has the struct's visibility. Events reach a closure through
//! `informer.add_event_fn(|ev: Change<Widget>| ..)`, as for any kind.
//!
//! ```
//! use std::sync::Arc;
//! use kube::CustomResource;
//! use reflector::Reflect;
//! use reflector::informer::Change;
//! use reflector::object::ObjectRef;
//! use reflector::store::{Indexers, StoreError, Writer};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//! #[reflect(index(name = "by_app", label = "app"))]
//! pub struct WidgetSpec {
//!     #[reflect(index)] // by_owner
//!     owner: String,
//!     #[reflect(index)] // by_tags: one value per element
//!     tags: Vec<String>,
//!     #[reflect(index)] // by_parent: no value when None
//!     parent: Option<String>,
//!     size: u32,
//! }
//!
//! # fn main() -> Result<(), StoreError> {
//! let mut cache = Writer::new(Widget::indexers());
//! let spec = WidgetSpec { owner: "alice".into(), tags: vec!["blue".into()], parent: None, size: 1 };
//! let mut w = Widget::new("w1", spec);
//! w.metadata.namespace = Some("default".into());
//! cache.add(Arc::new(w)).unwrap();
//! assert_eq!(cache.by_owner("alice")?.len(), 1);
//! assert_eq!(cache.by_owner_keys("alice")?, [ObjectRef::<Widget>::new(Some("default"), "w1")]);
//! assert_eq!(cache.by_tags("blue")?.len(), 1);
//! assert!(cache.by_parent("p")?.is_empty());
//!
//! // A cache built without `Widget::indexers()` fails loudly.
//! let bare = Writer::<Widget>::new(Indexers::new());
//! assert_eq!(bare.by_owner("alice").unwrap_err(), StoreError::UnknownIndex("by_owner".into()));
//! # Ok(()) }
//!
//! # async fn run(client: kube::Client) -> Result<(), StoreError> {
//! let informer = Widget::informer(client);
//! let reg = informer.add_event_fn(|ev: Change<Widget>| match ev {
//!     Change::Added { obj, .. } => println!("new widget of {}", obj.spec.owner),
//!     Change::Updated { new, .. } => println!("widget of {} changed", new.spec.owner),
//!     Change::Deleted(d) => println!("widget of {} gone", d.object().spec.owner),
//! });
//! let alices = informer.by_owner("alice")?;
//! # let _ = (reg, alices);
//! # Ok(()) }
//! ```
//!
//! # Memory and allocators
//!
//! The library sets no global allocator and tunes none: an informer's cache is the
//! typed objects behind `Arc`s, decoded on tokio's blocking pool while the list body is
//! still arriving, with `managedFields` skipped unless asked for
//! ([`InformerFactory::skip_fields`](informer::InformerFactory::skip_fields)). The
//! allocator is the application's choice. Measured on 2 cores syncing 100k ConfigMaps of
//! ~1.4 KiB, against kube-runtime's reflector on the same allocator (the repository's
//! `BENCHMARKS.md`, "Allocators": medians of 27 runs on a loaded machine):
//!
//! | allocator | CPU to synced | RSS after sync |
//! |---|---|---|
//! | glibc's malloc (the default) | 0.93 s (0.65× kube-runtime's) | 348 MB (0.52×) |
//! | glibc with `MALLOC_ARENA_MAX=2` in the environment | 0.86 s (0.69×) | 347 MB (0.52×) |
//! | mimalloc as `#[global_allocator]` | 0.61 s (0.50×) | 455 MB (0.69×) |
//!
//! So: keep glibc's malloc where memory is what the pod is sized by; set
//! `MALLOC_ARENA_MAX=2` (no code change) to cut glibc's per-thread arenas, which lowers
//! CPU without costing memory; choose mimalloc where CPU during syncs and relists matters
//! more than ~30% more resident memory:
//!
//! ```ignore
//! // Cargo.toml: mimalloc = "0.1"
//! #[global_allocator]
//! static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
//! ```
//!
//! Most of the difference is the kernel faulting in the cache's memory: on glibc half of
//! a first sync's CPU is system time (~89k page faults for 100k ConfigMaps); mimalloc maps
//! transparent huge pages, and our CPU to synced fell to 0.43–0.46× that of a plain
//! `Api::list` of the same objects, against 0.71–0.81× on glibc.
//!
//! With mimalloc, measure a process that syncs more than once (several informers, or
//! relists): a later 100k sync in the same process cost 1.1–2.7× the first's CPU, the
//! kernel zeroing huge pages; `MIMALLOC_ALLOW_THP=0` in the environment brought it to
//! 1.06×. With glibc a later sync costs what the first did.
//!
//! glibc (2.35 or later) takes tunables from the environment, no code change:
//!
//! ```text
//! GLIBC_TUNABLES=glibc.malloc.top_pad=67108864
//! ```
//!
//! makes each new heap of a thread's arena writable whole (64 MiB) instead of one
//! `mprotect` call per 4 KiB page as it fills (~780k calls in a benchmark invocation of ten
//! 100k syncs, ~280 with it): a first sync took 0.60–0.67 CPU-s instead of 0.68–0.70, with no
//! caveat measured (use exactly 64 MiB: 1, 4 or 16 MiB made more calls, not fewer). Adding
//! `glibc.malloc.hugetlb=1` (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864`)
//! gives glibc's heaps huge pages too: ~250 page faults instead of ~89k and 0.54–0.68
//! CPU-s instead of 0.81–0.86 for the first sync, with mimalloc's caveat (a later
//! informer's sync cost 0.79× and 2.38× the first's CPU in two runs). Measure your own
//! workload with and without them.
//!
//! [`kube`]: https://docs.rs/kube
//! [`k8s_openapi`]: https://docs.rs/k8s-openapi

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use reflector_core::reflect::Reflect;
pub use reflector_core::*;
pub use reflector_derive::Reflect;
/// The field-skipping decoder behind [`InformerFactory::skip_fields`](informer::InformerFactory::skip_fields)
/// and [`ApiListerWatcher::field_filter`](listwatch::ApiListerWatcher::field_filter).
pub use serde_field_filter;

/// What an operator author needs, in one `use reflector::prelude::*;`: the
/// controller and its request, action and stop token; the manager and its tasks;
/// the informer factory, its informers, listers and events; the typed key;
/// `Reflect` (the derive and the trait); leader election (`LeaderElection`, its
/// config, and the `LeaderState` its `state()` and `transitions()` report).
///
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::prelude::*;
///
/// async fn reconcile(req: Request<ConfigMap>, _: Arc<()>) -> Result<Action, kube::Error> {
///     println!("{}: {}", req.key, if req.object.is_some() { "present" } else { "deleted" });
///     Ok(Action::done())
/// }
///
/// # async fn f(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// Controller::<ConfigMap>::for_kind(client)
///     .shutdown_on_signal()
///     .run(reconcile, Arc::new(()))
///     .await?;
/// # Ok(()) }
/// ```
pub mod prelude {
    pub use reflector_core::controller::{Action, Controller, EventFilter, Request};
    pub use reflector_core::informer::{Change, InformerFactory, SharedIndexInformer};
    pub use reflector_core::leader_election::{LeaderElection, LeaderElectionConfig, LeaderState};
    pub use reflector_core::lister::Lister;
    pub use reflector_core::manager::{Manager, Task};
    pub use reflector_core::object::ObjectRef;
    pub use reflector_core::reflect::Reflect;
    pub use reflector_derive::Reflect;
    pub use tokio_util::sync::CancellationToken;
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../MIGRATING.md")]
struct MigratingDoctests;
