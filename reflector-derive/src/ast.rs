//! The derive input as plain data: the struct, its fields and their attributes,
//! keeping the `syn` nodes for spans.

use syn::{Data, DeriveInput, Fields, Generics, Ident, Type, Visibility};

use crate::attr::{self, FieldAttrs, KubeAttrs, StructAttrs};
use crate::ctxt::Ctxt;
use crate::shape::{self, Shape};

/// A struct with named fields deriving `Reflect`.
pub struct Input<'a> {
    /// The struct's name.
    pub ident: &'a Ident,
    /// The struct's visibility, given to the generated trait, alias and methods.
    pub vis: &'a Visibility,
    /// The struct's generics (rejected by validation).
    pub generics: &'a Generics,
    /// `#[reflect(..)]` on the struct.
    pub attrs: StructAttrs,
    /// `#[kube(..)]` on the struct, if any.
    pub kube: Option<KubeAttrs>,
    /// The named fields.
    pub fields: Vec<Field<'a>>,
}

/// One named field.
pub struct Field<'a> {
    /// Its name.
    pub ident: &'a Ident,
    /// Its type, as written.
    pub ty: &'a Type,
    /// How its values are read, if indexed.
    pub shape: Shape<'a>,
    /// `#[reflect(..)]` on the field.
    pub attrs: FieldAttrs,
}

impl<'a> Input<'a> {
    /// Parses the input; `None` (with an error recorded) when it is not a struct
    /// with named fields.
    pub fn from_syn(cx: &Ctxt, node: &'a DeriveInput) -> Option<Self> {
        let named = match &node.data {
            Data::Struct(s) => match &s.fields {
                Fields::Named(named) => named,
                Fields::Unnamed(_) | Fields::Unit => {
                    cx.error_spanned_by(
                        &node.ident,
                        "`#[derive(Reflect)]` needs a struct with named fields: a tuple or unit struct has no fields to index by name",
                    );
                    return None;
                }
            },
            Data::Enum(e) => {
                cx.error_spanned_by(
                    e.enum_token,
                    "`#[derive(Reflect)]` works on structs only (a CRD spec or a `kube::Resource` struct), not on enums",
                );
                return None;
            }
            Data::Union(u) => {
                cx.error_spanned_by(
                    u.union_token,
                    "`#[derive(Reflect)]` works on structs only, not on unions",
                );
                return None;
            }
        };
        let fields = named
            .named
            .iter()
            .filter_map(|f| {
                let ident = f.ident.as_ref()?;
                Some(Field {
                    ident,
                    ty: &f.ty,
                    shape: shape::classify(&f.ty),
                    attrs: attr::field_attrs(cx, &f.attrs),
                })
            })
            .collect();
        Some(Input {
            ident: &node.ident,
            vis: &node.vis,
            generics: &node.generics,
            attrs: attr::struct_attrs(cx, &node.attrs),
            kube: attr::kube_attrs(&node.attrs),
            fields,
        })
    }
}
