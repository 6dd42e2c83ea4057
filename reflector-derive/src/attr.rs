//! `#[reflect(..)]` and `#[kube(..)]` attributes parsed into plain data that keeps
//! the user's tokens (for spans). Syntax errors and unknown keys go to the
//! [`Ctxt`]; meaning is checked in `valid`.

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, LitStr, Path};

use crate::ctxt::Ctxt;

/// Keys allowed directly in a struct's `#[reflect(..)]`.
const STRUCT_KEYS: &[&str] = &["crate", "index"];
/// Keys allowed directly in a field's `#[reflect(..)]`.
const FIELD_KEYS: &[&str] = &["index"];
/// Keys allowed in a struct-level `index(..)`.
const STRUCT_INDEX_KEYS: &[&str] = &["name", "label", "annotation", "with"];
/// Keys allowed in a field-level `index(..)`.
const FIELD_INDEX_KEYS: &[&str] = &["name"];

/// Where an index's values come from, for a struct-level index.
pub enum Source {
    /// `label = "key"`.
    Label(LitStr),
    /// `annotation = "key"`.
    Annotation(LitStr),
    /// `with = path::to::fn`.
    With(Path),
}

/// One `index(..)` (or bare `index`) in a `#[reflect]` attribute.
pub struct IndexAttr {
    /// The `index` keyword, for spans.
    pub span: Span,
    /// `name = ".."`.
    pub name: Option<LitStr>,
    /// `label`/`annotation`/`with`, every one given (validation wants exactly one).
    pub sources: Vec<(Span, Source)>,
    /// Whether it was written with parentheses.
    pub has_args: bool,
    /// Whether a key in it was already reported (unknown or misplaced): then a
    /// missing name or source is that key's fault and not reported again.
    pub reported: bool,
}

/// A struct's `#[reflect(..)]` attributes.
#[derive(Default)]
pub struct StructAttrs {
    /// `crate = "path"`.
    pub krate: Option<Path>,
    /// Struct-level indexes, in order.
    pub indexes: Vec<IndexAttr>,
}

/// A field's `#[reflect(..)]` attributes.
#[derive(Default)]
pub struct FieldAttrs {
    /// `index` or `index(name = ..)`.
    pub index: Option<IndexAttr>,
}

/// What `#[reflect]` reads of kube's `#[kube(..)]`.
pub struct KubeAttrs {
    /// The first `#[kube]` attribute, for spans.
    pub span: Span,
    /// `kind = ".."`.
    pub kind: Option<LitStr>,
    /// `root = ".."`: kube's rename of the root type.
    pub root: Option<LitStr>,
}

fn key_string(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// "unknown key" with a "did you mean" suggestion among `expected`.
fn unknown_key(cx: &Ctxt, path: &Path, what: &str, expected: &[&str]) {
    let key = key_string(path);
    let best = expected
        .iter()
        .map(|e| (strsim::jaro_winkler(&key, e), *e))
        .filter(|(score, _)| *score >= 0.75)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let list = expected
        .iter()
        .map(|e| format!("`{e}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let msg = match best {
        Some((_, e)) => {
            format!("unknown {what} key `{key}`; did you mean `{e}`? (expected one of {list})")
        }
        None => format!("unknown {what} key `{key}` (expected one of {list})"),
    };
    cx.error_spanned_by(path, msg);
}

/// Consumes whatever follows a key (`= expr` or `(..)`) so parsing goes on.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<proc_macro2::TokenStream>()?;
    }
    Ok(())
}

fn set_once<T>(cx: &Ctxt, slot: &mut Option<T>, value: T, path: &Path) {
    if slot.is_some() {
        cx.error_spanned_by(path, format!("duplicate `{}` key", key_string(path)));
    } else {
        *slot = Some(value);
    }
}

/// Parses `index` / `index(..)` at `meta`.
fn parse_index(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    struct_level: bool,
) -> syn::Result<IndexAttr> {
    let mut index = IndexAttr {
        span: meta.path.span(),
        name: None,
        sources: Vec::new(),
        has_args: false,
        reported: false,
    };
    if meta.input.peek(syn::Token![=]) {
        cx.error_spanned_by(
            &meta.path,
            "`index` takes a list, not a value: write `index(name = \"by_..\")`",
        );
        return skip_value(meta).map(|()| index);
    }
    if !meta.input.peek(syn::token::Paren) {
        return Ok(index);
    }
    index.has_args = true;
    meta.parse_nested_meta(|inner| {
        let p = &inner.path;
        if p.is_ident("name") {
            let lit: LitStr = inner.value()?.parse()?;
            set_once(cx, &mut index.name, lit, p);
        } else if p.is_ident("label") || p.is_ident("annotation") || p.is_ident("with") {
            if !struct_level {
                cx.error_spanned_by(
                    p,
                    format!(
                        "`{}` belongs on a struct-level index: `#[reflect(index(name = \"by_..\", {} = ..))]` on the struct; a field index reads the field",
                        key_string(p),
                        key_string(p)
                    ),
                );
                index.reported = true;
                return skip_value(&inner);
            }
            let src = if p.is_ident("with") {
                Source::With(inner.value()?.parse()?)
            } else {
                let lit: LitStr = inner.value()?.parse()?;
                if p.is_ident("label") {
                    Source::Label(lit)
                } else {
                    Source::Annotation(lit)
                }
            };
            index.sources.push((p.span(), src));
        } else {
            let keys = if struct_level { STRUCT_INDEX_KEYS } else { FIELD_INDEX_KEYS };
            unknown_key(cx, p, "`index`", keys);
            index.reported = true;
            skip_value(&inner)?;
        }
        Ok(())
    })?;
    Ok(index)
}

/// Parses a struct's `#[reflect(..)]` attributes.
pub fn struct_attrs(cx: &Ctxt, attrs: &[Attribute]) -> StructAttrs {
    let mut out = StructAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("reflect")) {
        let res = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let lit: LitStr = meta.value()?.parse()?;
                match lit.parse::<Path>() {
                    Ok(path) => set_once(cx, &mut out.krate, path, &meta.path),
                    Err(_) => cx.error_spanned_by(
                        &lit,
                        "`crate` must be a path, e.g. `crate = \"reflector\"`",
                    ),
                }
            } else if meta.path.is_ident("index") {
                out.indexes.push(parse_index(cx, &meta, true)?);
            } else {
                unknown_key(cx, &meta.path, "`reflect`", STRUCT_KEYS);
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = res {
            cx.syn_error(e);
        }
    }
    out
}

/// Parses a field's `#[reflect(..)]` attributes.
pub fn field_attrs(cx: &Ctxt, attrs: &[Attribute]) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident("reflect")) {
        let res = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("index") {
                let idx = parse_index(cx, &meta, false)?;
                if out.index.is_some() {
                    cx.error_spanned_by(&meta.path, "duplicate `index` on this field");
                } else {
                    out.index = Some(idx);
                }
            } else {
                unknown_key(cx, &meta.path, "`reflect`", FIELD_KEYS);
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(e) = res {
            cx.syn_error(e);
        }
    }
    out
}

/// Reads `kind` and `root` from `#[kube(..)]` attributes; `None` when there is none.
/// Anything else kube accepts is skipped, and syntax errors are left to kube.
pub fn kube_attrs(attrs: &[Attribute]) -> Option<KubeAttrs> {
    let mut out: Option<KubeAttrs> = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("kube")) {
        let k = out.get_or_insert_with(|| KubeAttrs {
            span: attr.span(),
            kind: None,
            root: None,
        });
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("kind") {
                k.kind = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("root") {
                k.root = Some(meta.value()?.parse()?);
            } else {
                skip_value(&meta)?;
            }
            Ok(())
        });
    }
    out
}
