//! # reflector
//!
//! Kubernetes controllers in async Rust with client-go's semantics — Reflector,
//! Fifo, SharedIndexInformer, Indexer, WorkQueue — on [`kube`] and
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
//! - one active replica: [`leader_election`], [`Controller::leader_elected`](controller::Controller::leader_elected);
//!   several active replicas: `sharding` (the `sharding` feature);
//! - metrics with controller-runtime's names, `/metrics`, `/healthz` and `/readyz`:
//!   [`metrics`] (the server needs the `metrics-server` feature);
//! - typed index queries on a custom resource: `#[derive(Reflect)]`, below.
//!
//! Every part is also usable on its own, in the order of the data path:
//! [`listwatch`] → [`Reflector`] → [`fifo`] → [`informer`] → [`store`] and [`lister`];
//! [`workqueue`] feeds the controller's workers. Test against the embedded API server of
//! [`reflector-testkit`](https://docs.rs/reflector-testkit).
//!
//! Features, all off by default: `metrics-server` (`metrics::MetricsServer`),
//! `sharding` (the `sharding` module and `Controller::sharded`: one controller split
//! across replicas), `testing` (`listwatch::FakeSource`, an in-memory lister-watcher
//! for unit tests). A controller that needs none of them builds none of them.
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
//! ~1.4 KiB (the repository's `BENCHMARKS.md`, "Allocator A/B"; medians of 27 runs on a
//! loaded machine), against kube-runtime's reflector on the same allocator:
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
//! Against a plain `Api::list` of the same objects on the same allocator, a first sync
//! cost 0.43–0.46× its CPU on mimalloc and 0.71–0.81× on glibc; the difference is the
//! kernel faulting in the cache's memory 4 KiB at a time on glibc (our user time was the
//! same on both). A synced informer took MODIFIED events 1.7–1.9× as fast in process on
//! mimalloc (glibc's free of each replaced object is half a MODIFIED event's CPU); ADDED
//! events cost the same on both (`BENCHMARKS.md`, "Half the floor's CPU, on mimalloc" and
//! "On mimalloc").
//!
//! With mimalloc, measure a process that syncs more than once (several informers, or
//! relists): mimalloc asks the kernel for transparent huge pages, and a later 100k sync in
//! the same process cost 1.1–2.7× the first's CPU, the kernel zeroing huge pages;
//! `MIMALLOC_ALLOW_THP=0` in the environment brought it to 1.06×. With glibc a later
//! sync costs what the first did (`BENCHMARKS.md`, "A later informer in one process").
//!
//! glibc (2.35 or later) can be given huge pages without a code change, through its
//! tunables in the environment:
//!
//! ```text
//! GLIBC_TUNABLES=glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864
//! ```
//!
//! `hugetlb=1` marks glibc's heaps for transparent huge pages (where the kernel's
//! `transparent_hugepage/enabled` is `madvise` or `always`) and `top_pad` makes each new
//! heap of a thread's arena writable whole (64 MiB, a thread heap's most), so whole 2 MiB
//! pages fit in it. About a third of a first sync's CPU is the kernel faulting in the
//! cache's memory 4 KiB at a time (~89k faults for 100k ConfigMaps); with the tunables
//! that is ~250 faults. Measured as the table above
//! (`BENCHMARKS.md`, "glibc's tunables"; quiet machine, two runs): the first 100k sync
//! took 0.54–0.68 CPU-s instead of 0.81–0.86 and 0.41–0.48 s instead of 0.55–0.57 s, at
//! 360 MB resident instead of 348; at a million objects it took 4.6 s instead of 6.3 s.
//! The same caveat as mimalloc's applies: a later informer's sync in a process whose
//! first informer still holds its memory cost 0.79× and 2.38× the first's CPU in two
//! runs (the kernel compacting memory to find free huge pages), and a forced relist took
//! 1.91–1.97 s instead of 1.64–1.87 s. Measure your own workload with and without them.
//!
//! `GLIBC_TUNABLES=glibc.malloc.top_pad=67108864` alone has no such caveat measured: by
//! default glibc makes a thread's heap writable a page at a time as it fills, one
//! `mprotect` call per 4 KiB (~70k in a first 100k sync, each taking the lock that page
//! faults wait for); with it, a few hundred. The first 100k sync took 0.57–0.67 CPU-s
//! instead of 0.68–0.75, a later informer as without, a forced relist 3–7% slower
//! (`BENCHMARKS.md`, "`top_pad` alone"). Use exactly 64 MiB: a smaller value keeps the
//! page-by-page growth and turns off glibc's dynamic `mmap` threshold, which cost more
//! than it saved.
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
/// controller and its request, action and stop token; the informer factory, its
/// informers, listers and events; the typed key; `Reflect` (the derive and the
/// trait); leader election (`LeaderElection`, its config, and the `LeaderState` its
/// `state()` and `transitions()` report).
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
    pub use reflector_core::controller::{Action, Controller, Request};
    pub use reflector_core::informer::{Change, InformerFactory, SharedIndexInformer};
    pub use reflector_core::leader_election::{LeaderElection, LeaderElectionConfig, LeaderState};
    pub use reflector_core::lister::Lister;
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
