//! Checks the parsed input's meaning, records every error, and builds the [`Model`]
//! expansion works from. Invalid indexes become [`Read::Stub`] so the generated query
//! methods still exist and the user sees only the real errors.

use std::collections::BTreeMap;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Path, Visibility};

use crate::ast::Input;
use crate::attr::Source;
use crate::ctxt::Ctxt;
use crate::shape::{self, Shape};

/// What expansion needs, validated.
pub struct Model<'a> {
    /// Path to the runtime (`::reflector` unless `#[reflect(crate = "..")]`).
    pub krate: Path,
    /// The root type: the kube kind (`Widget`) or the struct itself.
    pub target: Ident,
    /// Whether fields live under `.spec` (a CRD spec struct) or on the target.
    pub is_spec: bool,
    /// Visibility of generated items.
    pub vis: &'a Visibility,
    /// The indexes, struct-level first, then fields in order.
    pub indexes: Vec<Index<'a>>,
}

/// One index.
pub struct Index<'a> {
    /// Its name, a valid method name starting with `by_`.
    pub name: String,
    /// Where the user wrote it (the `name` literal, or the field's name).
    pub span: Span,
    /// How it reads an object.
    pub read: Read<'a>,
}

/// How an index reads an object.
pub enum Read<'a> {
    /// A field of the spec (or of the struct).
    Field {
        /// The field.
        ident: &'a Ident,
        /// Its shape (never `Unsupported`).
        shape: Shape<'a>,
    },
    /// A label's value.
    Label(LitStr),
    /// An annotation's value.
    Annotation(LitStr),
    /// A user function `fn(&Kind) -> Vec<String>`.
    With(Path),
    /// An index whose declaration had an error: always empty.
    Stub,
}

fn default_krate() -> Path {
    syn::parse_quote!(::reflector)
}

/// Whether `name` can be an index (and so a method) name.
fn check_name(cx: &Ctxt, name: &str, span: Span) -> bool {
    if syn::parse_str::<Ident>(name).is_err() {
        cx.error_at(
            span,
            format!(
                "index name `{name}` is not a Rust identifier: it becomes the query method's name"
            ),
        );
        return false;
    }
    if !name.starts_with("by_") || name.len() == 3 {
        cx.error_at(
            span,
            format!(
                "index name `{name}` must start with `by_` (e.g. `by_{}`), so its query methods never collide with `Lister`'s own",
                name.trim_start_matches('_')
            ),
        );
        return false;
    }
    true
}

/// The root type named by `#[kube]`, or the struct; `None` with errors recorded.
fn target(cx: &Ctxt, input: &Input<'_>) -> Option<(Ident, bool)> {
    let Some(kube) = &input.kube else {
        if !input.generics.params.is_empty() || input.generics.where_clause.is_some() {
            cx.error_at(
                input.generics.span(),
                "`#[derive(Reflect)]` does not support generic structs: a Kubernetes kind is one concrete type",
            );
            return None;
        }
        return Some((input.ident.clone(), false));
    };
    let Some(lit) = kube.root.as_ref().or(kube.kind.as_ref()) else {
        cx.error_at(
            kube.span,
            "`#[kube(..)]` names no `kind`: `#[derive(Reflect)]` needs `kind = \"..\"` to find the root type",
        );
        return None;
    };
    match lit.parse::<Ident>() {
        Ok(mut id) => {
            id.set_span(lit.span());
            Some((id, true))
        }
        Err(_) => {
            cx.error_spanned_by(lit, "the kind is not a Rust identifier");
            None
        }
    }
}

fn struct_index_read(
    cx: &Ctxt,
    sources: Vec<(Span, Source)>,
    at: Span,
    reported: bool,
) -> Read<'static> {
    let mut it = sources.into_iter();
    let Some((_, first)) = it.next() else {
        if reported {
            return Read::Stub;
        }
        cx.error_at(
            at,
            "a struct-level index needs one of `label = \"..\"`, `annotation = \"..\"` or `with = path::to::fn`",
        );
        return Read::Stub;
    };
    let mut ok = true;
    for (span, _) in it {
        cx.error_at(
            span,
            "an index reads one source: give only one of `label`, `annotation` or `with`",
        );
        ok = false;
    }
    match first {
        Source::Label(l) | Source::Annotation(l) if l.value().is_empty() => {
            cx.error_spanned_by(&l, "the label or annotation key is empty");
            Read::Stub
        }
        _ if !ok => Read::Stub,
        Source::Label(l) => Read::Label(l),
        Source::Annotation(l) => Read::Annotation(l),
        Source::With(p) => Read::With(p),
    }
}

/// Validates `input`, recording every error in `cx`. Returns the model to expand
/// (with stubs where something was wrong) unless there is no root type to attach to.
pub fn check<'a>(cx: &Ctxt, input: Input<'a>) -> Option<Model<'a>> {
    let target = target(cx, &input);
    let mut indexes: Vec<Index<'a>> = Vec::new();

    for idx in input.attrs.indexes {
        if !idx.has_args {
            cx.error_at(
                idx.span,
                "a struct-level `index` needs a name and a source, e.g. `#[reflect(index(name = \"by_app\", label = \"app\"))]`; to index a field, put `#[reflect(index)]` on the field",
            );
            continue;
        }
        let Some(name) = idx.name else {
            if !idx.reported {
                cx.error_at(idx.span, "a struct-level index needs `name = \"by_..\"`");
            }
            // Still check its source, to report every error at once.
            let _ = struct_index_read(cx, idx.sources, idx.span, idx.reported);
            continue;
        };
        let read = struct_index_read(cx, idx.sources, idx.span, idx.reported);
        indexes.push(Index {
            name: name.value(),
            span: name.span(),
            read,
        });
    }

    for field in &input.fields {
        let Some(idx) = &field.attrs.index else {
            continue;
        };
        let (name, span) = match &idx.name {
            Some(lit) => (lit.value(), lit.span()),
            None => {
                let field_name = field.ident.to_string();
                let field_name = field_name.trim_start_matches("r#");
                (format!("by_{field_name}"), field.ident.span())
            }
        };
        let read = match field.shape {
            Shape::Unsupported(what) => {
                cx.error_spanned_by(
                    field.ty,
                    format!(
                        "`#[reflect(index)]` cannot index {what}; {}; for anything else write `#[reflect(index(name = \"by_..\", with = path::to::fn))]` on the struct",
                        shape::SUPPORTED
                    ),
                );
                Read::Stub
            }
            shape => Read::Field {
                ident: field.ident,
                shape,
            },
        };
        indexes.push(Index { name, span, read });
    }

    // Names: valid, unique, and no `by_x` next to `by_x_keys`.
    let mut seen: BTreeMap<String, ()> = BTreeMap::new();
    indexes.retain(|idx| {
        if !check_name(cx, &idx.name, idx.span) {
            return false;
        }
        if seen.insert(idx.name.clone(), ()).is_some() {
            cx.error_at(
                idx.span,
                format!(
                    "duplicate index name `{}`: every index needs its own name",
                    idx.name
                ),
            );
            return false;
        }
        true
    });
    indexes.retain(|idx| {
        let Some(base) = idx.name.strip_suffix("_keys") else {
            return true;
        };
        if !seen.contains_key(base) {
            return true;
        }
        cx.error_at(
            idx.span,
            format!(
                "index name `{}` is also the name of the key-only query of index `{base}`; rename one of them",
                idx.name
            ),
        );
        false
    });

    let (target, is_spec) = target?;
    Some(Model {
        krate: input.attrs.krate.unwrap_or_else(default_krate),
        target,
        is_spec,
        vis: input.vis,
        indexes,
    })
}
