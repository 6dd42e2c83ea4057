//! Writes the tokens: the `Reflect` impl, the inherent constructors, the event alias
//! and the `<Kind>Indexes` query trait. Every path is fully qualified; impls sit in
//! `const _: () = { .. };` blocks.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{DeriveInput, Ident};

use crate::ast::Input;
use crate::ctxt::Ctxt;
use crate::shape::Shape;
use crate::valid::{self, Index, Model, Read};

/// The derive: every error as `compile_error!`, plus the expansion (with stub
/// indexes where declarations were wrong) whenever there is a root type.
pub fn derive(node: &DeriveInput) -> TokenStream {
    let cx = Ctxt::new();
    let model = Input::from_syn(&cx, node).and_then(|input| valid::check(&cx, input));
    let errors = cx.finish().map(|e| e.to_compile_error());
    let items = model.map(|m| expand(&m));
    quote! {
        #errors
        #items
    }
}

/// Where the field is read from, for docs: `spec.owner` or `owner`.
fn field_path(model: &Model<'_>, ident: &Ident) -> String {
    let name = ident.to_string();
    let name = name.trim_start_matches("r#");
    if model.is_spec {
        format!("spec.{name}")
    } else {
        name.to_owned()
    }
}

/// "whose `spec.owner` is `value`" and friends.
fn describe(model: &Model<'_>, idx: &Index<'_>) -> String {
    match &idx.read {
        Read::Field { ident, shape } => {
            let f = field_path(model, ident);
            match shape {
                Shape::One(_) => format!("whose `{f}` is `value`"),
                Shape::Optional(_) => {
                    format!("whose `{f}` is set to `value` (unset matches nothing)")
                }
                Shape::Many(_) => format!("with `value` among `{f}` (one index value per element)"),
                Shape::OptionalMany(_) => {
                    format!(
                        "with `value` among `{f}` (one index value per element; unset matches nothing)"
                    )
                }
                Shape::Unsupported(_) => String::new(),
            }
        }
        Read::Label(l) => format!("whose label `{}` is `value`", l.value()),
        Read::Annotation(a) => format!("whose annotation `{}` is `value`", a.value()),
        Read::With(p) => format!(
            "for which `{}` returns `value`",
            quote!(#p).to_string().replace(' ', "")
        ),
        Read::Stub => "(the index declaration has errors)".to_owned(),
    }
}

/// The index function: `|obj: &Kind| -> Vec<String> { .. }`.
fn index_fn(model: &Model<'_>, idx: &Index<'_>) -> TokenStream {
    let krate = &model.krate;
    let kind = &model.target;
    let private = quote!(#krate::reflect::__private);
    let body = match &idx.read {
        Read::Field { ident, shape } => {
            let access = if model.is_spec {
                quote!(obj.spec.#ident)
            } else {
                quote!(obj.#ident)
            };
            match shape {
                Shape::One(t) => quote_spanned!(t.span()=> #private::one::<#t>(&#access)),
                Shape::Optional(t) | Shape::Many(t) => {
                    quote_spanned!(t.span()=> #private::each::<#t>(#access.iter()))
                }
                Shape::OptionalMany(t) => {
                    quote_spanned!(t.span()=> #private::each::<#t>(#access.iter().flatten()))
                }
                Shape::Unsupported(_) => quote!(::std::vec::Vec::new()),
            }
        }
        Read::Label(l) => quote!(#private::label::<#kind>(obj, #l)),
        Read::Annotation(a) => quote!(#private::annotation::<#kind>(obj, #a)),
        Read::With(p) => quote_spanned! {p.span()=>
            {
                let f: fn(&#kind) -> ::std::vec::Vec<::std::string::String> = #p;
                f(obj)
            }
        },
        Read::Stub => quote!({
            let _ = obj;
            ::std::vec::Vec::new()
        }),
    };
    quote! {
        |obj: &#kind| -> ::std::vec::Vec<::std::string::String> { #body }
    }
}

/// The two query methods of one index.
fn query_methods(model: &Model<'_>, idx: &Index<'_>) -> TokenStream {
    let krate = &model.krate;
    let kind = &model.target;
    let name = &idx.name;
    let method = Ident::new(name, idx.span);
    let method_keys = format_ident!("{}_keys", method);
    let desc = describe(model, idx);
    let doc = format!(" The `{kind}`s {desc}: index `{name}`.");
    let doc_keys = format!(" The keys (sorted) of the `{kind}`s {desc}: index `{name}`.");
    let errors = format!(
        " # Errors\n `StoreError::UnknownIndex(\"{name}\")` when the cache was built without \
         `{kind}`'s indexers (`{kind}::informer(..)` and `factory.reflected::<{kind}>()` register them)."
    );
    let store_error = quote!(#krate::store::StoreError);
    quote! {
        #[doc = #doc]
        #[doc = ""]
        #[doc = #errors]
        fn #method(
            &self,
            value: impl ::core::fmt::Display,
        ) -> ::core::result::Result<::std::vec::Vec<::std::sync::Arc<#kind>>, #store_error> {
            <Self as #krate::reflect::__private::IndexQuery<#kind>>::query_index(
                self,
                #name,
                &::std::string::ToString::to_string(&value),
            )
        }

        #[doc = #doc_keys]
        #[doc = ""]
        #[doc = #errors]
        fn #method_keys(
            &self,
            value: impl ::core::fmt::Display,
        ) -> ::core::result::Result<::std::vec::Vec<#krate::object::ObjectRef<#kind>>, #store_error> {
            <Self as #krate::reflect::__private::IndexQuery<#kind>>::query_index_keys(
                self,
                #name,
                &::std::string::ToString::to_string(&value),
            )
        }
    }
}

fn expand(model: &Model<'_>) -> TokenStream {
    let krate = &model.krate;
    let kind = &model.target;
    let vis = model.vis;
    let span = kind.span();
    let indexes_trait = format_ident!("{}Indexes", kind);

    // A struct without `#[kube]` must itself be the resource: assert it once with a
    // readable message, and bound every generated item on it so nothing else errors.
    let (assertion, object_bound) = if model.is_spec {
        Default::default()
    } else {
        let private = quote!(#krate::reflect::__private);
        (
            quote_spanned!(span=> const _: () = #private::assert_target::<#kind>();),
            quote!(for<'__r> #kind: #krate::object::Object,),
        )
    };

    let names: Vec<&str> = model.indexes.iter().map(|i| i.name.as_str()).collect();
    let registrations = model.indexes.iter().map(|idx| {
        let name = &idx.name;
        let f = index_fn(model, idx);
        quote!(.with(#name, #f))
    });
    let methods = model.indexes.iter().map(|idx| query_methods(model, idx));

    let index_list = if names.is_empty() {
        "none".to_owned()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let trait_doc = format!(
        " Typed index queries on `{kind}`s (indexes: {index_list}), generated by `#[derive(Reflect)]`.\n\n\
         Implemented for the `Lister`, the `Indexer` and the `SharedIndexInformer` \
         of `{kind}`; bring the trait into scope to query. Each index has a method returning the matching \
         objects and a `_keys` method returning their typed keys (`ObjectRef<{kind}>`). Query values are anything \
         `Display` (`&str`, `String`, integers). A query on a cache built without `{kind}`'s indexers is \
         `StoreError::UnknownIndex` naming the index, not an empty answer."
    );
    quote! {
        #[doc = #trait_doc]
        #[allow(dead_code)]
        #vis trait #indexes_trait: #krate::reflect::__private::IndexQuery<#kind> {
            #(#methods)*
        }

        #[automatically_derived]
        impl<__Q: ?::core::marker::Sized + #krate::reflect::__private::IndexQuery<#kind>> #indexes_trait for __Q {}

        const _: () = {
            #assertion

            #[automatically_derived]
            impl #krate::reflect::Reflect for #kind where #object_bound {
                const INDEX_NAMES: &'static [&'static str] = &[#(#names),*];

                fn indexers() -> #krate::store::Indexers<Self> {
                    #krate::store::Indexers::new()
                        #(#registrations)*
                }
            }

        };
    }
}
