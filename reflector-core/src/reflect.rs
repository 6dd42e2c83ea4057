//! What `#[derive(Reflect)]` builds on: the [`Reflect`] trait and typed index queries.
//!
//! `#[derive(Reflect)]` (from the `reflector` facade) sits on a CRD spec struct next
//! to kube's `#[derive(CustomResource)]`, or on any struct that implements
//! `kube::Resource` itself. For the root type — say `Widget` — it generates:
//!
//! - `impl Reflect for Widget`: [`Reflect::indexers`] holds one index function per
//!   `#[reflect(index ..)]`, and [`Reflect::INDEX_NAMES`] their names; the trait's
//!   provided methods then give `Widget::lister_watcher(client)` and
//!   `Widget::informer(client)` (every declared index registered);
//! - `pub trait WidgetIndexes`, implemented for the [`Lister`](crate::lister::Lister),
//!   the [`Indexer`](crate::store::Indexer) and the [`SharedIndexInformer`] of
//!   `Widget`: `by_owner(value)` returns the matching objects and `by_owner_keys(value)`
//!   their typed keys ([`ObjectRef<Widget>`](crate::object::ObjectRef)). Import the
//!   trait where you query.
//!   (Queries by an index name string: [`Lister::by_index`](crate::lister::Lister::by_index) and
//!   [`Lister::index_keys`](crate::lister::Lister::index_keys).)
//!
//! [`InformerFactory::reflected`](crate::informer::InformerFactory::reflected) returns
//! the factory's shared informer with the kind's indexes added.
//!
//! A typed query answers `Result<_, StoreError>`: on a cache built without the kind's
//! indexers (an [`Indexer`](crate::store::Indexer) or informer made with other
//! [`Indexers`]) it is [`StoreError::UnknownIndex`](crate::store::StoreError::UnknownIndex)
//! naming the index, never an empty answer that reads as "no match". On what
//! `Widget::informer(..)` and `factory.reflected::<Widget>()` build it is always `Ok`
//! (they register every declared index, and an index is never removed).

use std::fmt::Debug;

use kube::{Api, Client};
use serde::de::DeserializeOwned;

use crate::informer::{InformerOptions, SharedIndexInformer};
use crate::listwatch::ApiListerWatcher;
use crate::object::Object;
use crate::store::Indexers;

mod index_query;
mod reflected_informer;

/// A Kubernetes kind whose indexes are declared with `#[derive(Reflect)]`.
///
/// Implemented by the derive; implementing it by hand is allowed (an [`Indexers`]
/// builder and the names it holds). The provided methods build what every kind
/// needs from those: a lister-watcher and an informer with the declared indexes.
/// Bring the trait into scope to call them (`use reflector::Reflect;` imports the
/// derive and the trait at once).
///
/// # Example
/// ```
/// use reflector::reflect::Reflect;
/// use reflector::store::Writer;
///
/// /// A cache with every index `K` declares.
/// fn cache<K: Reflect>() -> Writer<K> {
///     Writer::new(K::indexers())
/// }
///
/// /// Whether `K` declares the index `name`.
/// fn declares<K: Reflect>(name: &str) -> bool {
///     K::INDEX_NAMES.contains(&name)
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no declared indexes: it does not derive `Reflect`",
    note = "put `#[derive(Reflect)]` on `{Self}`'s spec struct (next to `#[derive(CustomResource)]`) or on `{Self}` itself"
)]
pub trait Reflect: Object {
    /// The names of the declared indexes, in declaration order (struct-level
    /// indexes first, then fields).
    const INDEX_NAMES: &'static [&'static str];

    /// One index function per declared index, under its name.
    fn indexers() -> Indexers<Self>;

    /// Lists and watches every `Self` in every namespace; narrow it with
    /// [`ApiListerWatcher::namespace`], [`ApiListerWatcher::labels`] and
    /// [`ApiListerWatcher::fields`].
    ///
    /// # Example
    /// ```no_run
    /// # use reflector::reflect::Reflect;
    /// # fn f<Widget: Reflect + serde::de::DeserializeOwned + std::fmt::Debug>(client: kube::Client)
    /// # where Widget::DynamicType: Default + Clone {
    /// let lw = Widget::lister_watcher(client).labels("app=web");
    /// # let _ = lw;
    /// # }
    /// ```
    #[must_use]
    fn lister_watcher(client: Client) -> ApiListerWatcher<Self>
    where
        Self: DeserializeOwned + Debug,
        Self::DynamicType: Default + Clone,
    {
        ApiListerWatcher::new(Api::all(client))
    }

    /// A new (unshared, not started) informer over every `Self` in every
    /// namespace, with every declared index and no handler resync. For an informer
    /// shared with other controllers use
    /// [`InformerFactory::reflected`](crate::informer::InformerFactory::reflected).
    ///
    /// # Example
    /// ```no_run
    /// # use reflector::reflect::Reflect;
    /// # fn f<Widget: Reflect + serde::de::DeserializeOwned + std::fmt::Debug>(client: kube::Client)
    /// # where Widget::DynamicType: Default + Clone + Send + Sync + 'static {
    /// let widgets = Widget::informer(client);
    /// # let _ = widgets;
    /// # }
    /// ```
    #[must_use]
    fn informer(client: Client) -> SharedIndexInformer<Self>
    where
        Self: DeserializeOwned + Debug,
        Self::DynamicType: Default + Clone + Send + Sync + 'static,
    {
        SharedIndexInformer::with_options(
            Self::lister_watcher(client),
            InformerOptions::default().indexers(Self::indexers()),
        )
    }
}

/// Support for the code `#[derive(Reflect)]` generates. Not a public API: it changes
/// with the derive.
#[doc(hidden)]
pub mod __private {
    use std::fmt::Display;

    pub use super::index_query::IndexQuery;
    pub use kube::{Client, Resource};
    pub use serde::de::DeserializeOwned;

    /// The static assertion the derive emits for a struct with no `#[kube]`
    /// attribute: the struct itself must be the resource.
    #[diagnostic::on_unimplemented(
        message = "`#[derive(Reflect)]` has no Kubernetes resource to attach to: `{Self}` does not implement `kube::Resource`",
        label = "neither a `#[kube(kind = \"..\")]` attribute nor a `kube::Resource` impl",
        note = "on a CRD spec struct, derive `CustomResource` with `#[kube(group = \"..\", version = \"..\", kind = \"..\")]`; otherwise implement `kube::Resource` for `{Self}`"
    )]
    pub trait ReflectTarget: crate::object::Object {}

    impl<T: crate::object::Object> ReflectTarget for T {}

    /// Asserts `T` is a resource (compiles to nothing).
    pub const fn assert_target<T: ReflectTarget>() {}

    /// What a `#[reflect(index)]` field (or its elements) must be.
    #[diagnostic::on_unimplemented(
        message = "`#[reflect(index)]` cannot index a field of type `{Self}`: it does not implement `Display`",
        label = "not an index value",
        note = "index values are strings, integers, `bool`, `char` or any `Display` type; `Option<T>` gives zero or one value, `Vec<T>`, `BTreeSet<T>` and `HashSet<T>` one per element",
        note = "for anything else, write `#[reflect(index(name = \"by_..\", with = path::to::fn))]` on the struct with `fn(&Kind) -> Vec<String>`"
    )]
    pub trait IndexValue: Display {}

    impl<T: Display + ?Sized> IndexValue for T {}

    /// One value.
    pub fn one<T: IndexValue + ?Sized>(v: &T) -> Vec<String> {
        vec![v.to_string()]
    }

    /// One value per element.
    pub fn each<'a, T: IndexValue + ?Sized + 'a>(
        it: impl IntoIterator<Item = &'a T>,
    ) -> Vec<String> {
        it.into_iter().map(ToString::to_string).collect()
    }

    /// The value of label `key`, if set.
    pub fn label<K: kube::Resource>(obj: &K, key: &str) -> Vec<String> {
        obj.meta()
            .labels
            .as_ref()
            .and_then(|m| m.get(key))
            .cloned()
            .into_iter()
            .collect()
    }

    /// The value of annotation `key`, if set.
    pub fn annotation<K: kube::Resource>(obj: &K, key: &str) -> Vec<String> {
        obj.meta()
            .annotations
            .as_ref()
            .and_then(|m| m.get(key))
            .cloned()
            .into_iter()
            .collect()
    }
}
