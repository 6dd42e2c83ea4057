//! `#[derive(Reflect)]`: typed list/watch, indexes, index queries and event handlers
//! for a Kubernetes kind. Use it through the `reflector` facade, whose documentation
//! describes what it generates.
//!
//! The crate reads like thiserror-impl and serde_derive: [`ast`] and [`attr`] parse
//! the input into plain data that keeps the user's tokens for spans, [`valid`] checks
//! it and collects every error in a [`ctxt::Ctxt`], [`expand`] writes the tokens. On
//! error it emits every `compile_error!` plus stub items, so the user sees the real
//! messages and not a cascade of "no method named `by_owner`".

mod ast;
mod attr;
mod ctxt;
mod expand;
mod shape;
mod valid;

use proc_macro::TokenStream;

/// Derives `reflector::Reflect`: see the `reflector` crate documentation.
#[proc_macro_derive(Reflect, attributes(reflect))]
pub fn derive_reflect(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(&input).into()
}
