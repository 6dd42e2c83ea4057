//! `#[derive(Reflect)]`: typed list/watch, indexes and index queries for a Kubernetes
//! kind (its events reach a closure through `add_event_fn`, as any kind's). Use it
//! through the `reflector` facade, whose documentation describes what it generates.
//!
//! The crate reads like thiserror-impl and serde_derive: `ast` and `attr` parse
//! the input into plain data that keeps the user's tokens for spans, `valid` checks
//! it and collects every error in a `ctxt::Ctxt`, `expand` writes the tokens. On
//! error it emits every `compile_error!` plus stub items, so the user sees the real
//! messages and not a cascade of "no method named `by_owner`".

#![cfg_attr(docsrs, feature(doc_cfg))]

mod ast;
mod attr;
mod ctxt;
mod expand;
mod shape;
mod valid;

use proc_macro::TokenStream;

/// Derives `reflector::Reflect` and the typed plumbing of a Kubernetes kind; the
/// `reflector` crate documentation has a full example.
///
/// On a CRD spec struct (with kube's `#[derive(CustomResource)]` and
/// `#[kube(kind = "Widget", ..)]`) the root type is `Widget` (or kube's
/// `root = ".."`) and fields are read under `.spec`; on a struct that implements
/// `kube::Resource` itself, the struct is the root type.
///
/// ```text
/// #[reflect(crate = "reflector_core")]                       // runtime path (default ::reflector)
/// #[reflect(index(name = "by_app", label = "app"))]          // a label's value
/// #[reflect(index(name = "by_team", annotation = "a/team"))] // an annotation's value
/// #[reflect(index(name = "by_class", with = class_of))]      // fn(&Widget) -> Vec<String>
/// struct WidgetSpec {
///     #[reflect(index)] owner: String,                       // by_owner
///     #[reflect(index(name = "by_label"))] tags: Vec<String>, // one value per element
/// }
/// ```
///
/// Generated for `Widget`: `impl Reflect for Widget` (its indexers and their names;
/// the trait's provided methods add `Widget::lister_watcher(client)` and
/// `Widget::informer(client)`) and the query trait `WidgetIndexes` with
/// `by_<index>(value)` (the objects) and `by_<index>_keys(value)` (their
/// `ObjectRef<Widget>` keys) per index, each a `Result` that is
/// `StoreError::UnknownIndex` on a cache built without `Widget`'s indexers.
#[proc_macro_derive(Reflect, attributes(reflect))]
pub fn derive_reflect(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
