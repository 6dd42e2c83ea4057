//! [`Shape`]: how an indexed field's type turns into index values.

use syn::{GenericArgument, PathArguments, Type};

/// What the supported set is, for error messages.
pub const SUPPORTED: &str = "supported: strings, integers, `bool`, `char` or any other `Display` type; \
`Option<T>` (zero or one value); `Vec<T>`, `VecDeque<T>`, `BTreeSet<T>`, `HashSet<T>` and arrays \
(one value per element); `Option` of those collections";

/// How a field's values are read. The `Type` is the value type, which must be
/// `Display` (checked by the compiler, with a message of ours).
#[derive(Clone, Copy)]
pub enum Shape<'a> {
    /// One value: `field.to_string()`.
    One(&'a Type),
    /// `Option<T>`: zero or one value.
    Optional(&'a Type),
    /// A collection: one value per element.
    Many(&'a Type),
    /// `Option` of a collection.
    OptionalMany(&'a Type),
    /// Not indexable by `#[reflect(index)]`; says what it is ("a map").
    Unsupported(&'static str),
}

const COLLECTIONS: &[&str] = &["Vec", "VecDeque", "BTreeSet", "HashSet"];
const MAPS: &[&str] = &["HashMap", "BTreeMap", "IndexMap"];

/// The single generic type argument of a path's last segment, if exactly one.
fn single_arg(ty: &syn::TypePath) -> Option<&Type> {
    let last = ty.path.segments.last()?;
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let first = types.next()?;
    types.next().is_none().then_some(first)
}

/// Classifies a field type.
pub fn classify(ty: &Type) -> Shape<'_> {
    match ty {
        Type::Paren(p) => classify(&p.elem),
        Type::Group(g) => classify(&g.elem),
        Type::Tuple(t) if t.elems.is_empty() => Shape::Unsupported("the unit type `()`"),
        Type::Tuple(_) => Shape::Unsupported("a tuple"),
        Type::Array(a) => match classify(&a.elem) {
            Shape::One(t) => Shape::Many(t),
            _ => Shape::Unsupported("an array of collections or options"),
        },
        Type::Slice(_) => Shape::Unsupported("a slice"),
        Type::Reference(_) => Shape::Unsupported("a reference"),
        Type::Ptr(_) => Shape::Unsupported("a raw pointer"),
        Type::BareFn(_) => Shape::Unsupported("a function pointer"),
        Type::TraitObject(_) | Type::ImplTrait(_) => Shape::Unsupported("a trait object"),
        Type::Never(_) => Shape::Unsupported("the never type"),
        Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else {
                return Shape::One(ty);
            };
            let name = last.ident.to_string();
            if MAPS.contains(&name.as_str()) {
                return Shape::Unsupported("a map");
            }
            if name == "Option" {
                return match single_arg(p).map(classify) {
                    Some(Shape::One(t)) => Shape::Optional(t),
                    Some(Shape::Many(t)) => Shape::OptionalMany(t),
                    Some(Shape::Unsupported(what)) => Shape::Unsupported(what),
                    Some(_) => Shape::Unsupported("an `Option` of an `Option`"),
                    None => Shape::Unsupported("an `Option` without its type argument"),
                };
            }
            if COLLECTIONS.contains(&name.as_str()) {
                return match single_arg(p).map(classify) {
                    Some(Shape::One(t)) => Shape::Many(t),
                    Some(Shape::Unsupported(what)) => Shape::Unsupported(what),
                    Some(_) => Shape::Unsupported("a collection of collections or options"),
                    None => Shape::Unsupported("a collection without its element type"),
                };
            }
            Shape::One(ty)
        }
        _ => Shape::Unsupported("this kind of type"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(src: &str) -> String {
        let ty: Type = syn::parse_str(src).expect("a type");
        let name = |t: &Type| quote::quote!(#t).to_string().replace(' ', "");
        match classify(&ty) {
            Shape::One(t) => format!("one {}", name(t)),
            Shape::Optional(t) => format!("optional {}", name(t)),
            Shape::Many(t) => format!("many {}", name(t)),
            Shape::OptionalMany(t) => format!("optional many {}", name(t)),
            Shape::Unsupported(what) => format!("unsupported: {what}"),
        }
    }

    #[test]
    fn classify_scalars_options_and_collections() {
        assert_eq!(shape_of("String"), "one String");
        assert_eq!(shape_of("u32"), "one u32");
        assert_eq!(shape_of("my::Id"), "one my::Id");
        assert_eq!(shape_of("Option<String>"), "optional String");
        assert_eq!(shape_of("std::option::Option<i64>"), "optional i64");
        assert_eq!(shape_of("Vec<String>"), "many String");
        assert_eq!(shape_of("BTreeSet<u8>"), "many u8");
        assert_eq!(shape_of("std::collections::HashSet<String>"), "many String");
        assert_eq!(shape_of("VecDeque<char>"), "many char");
        assert_eq!(shape_of("[u16; 4]"), "many u16");
        assert_eq!(shape_of("Option<Vec<String>>"), "optional many String");
    }

    #[test]
    fn classify_rejects_what_has_no_index_value() {
        assert_eq!(shape_of("HashMap<String, String>"), "unsupported: a map");
        assert_eq!(shape_of("BTreeMap<String, u8>"), "unsupported: a map");
        assert_eq!(shape_of("(String, u32)"), "unsupported: a tuple");
        assert_eq!(shape_of("()"), "unsupported: the unit type `()`");
        assert_eq!(shape_of("&'static str"), "unsupported: a reference");
        assert_eq!(
            shape_of("Vec<Vec<String>>"),
            "unsupported: a collection of collections or options"
        );
        assert_eq!(
            shape_of("Option<Option<String>>"),
            "unsupported: an `Option` of an `Option`"
        );
        assert_eq!(
            shape_of("Option<HashMap<String, String>>"),
            "unsupported: a map"
        );
    }
}
