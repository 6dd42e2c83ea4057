//! Sets of field paths, as structured-merge-diff's `fieldpath.Set`: what a field manager
//! owns, and what a write added, changed or removed. Encoded in `managedFields` as the
//! real `FieldsV1` (`f:` field, `k:` list key, `v:` set value, `i:` index, `.` for a path
//! that is itself a member and has members below it).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::status::go_quote;

/// One step of a path. The derived order (fields, keys, values, indices) is the real
/// `PathElement` order, so sets iterate as the real server's do.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PathElement {
    /// A field of an object (`f:name`).
    Field(String),
    /// An item of an associative list, named by its key fields: compact JSON of an object
    /// with sorted keys (`k:{"name":"c"}`).
    Key(String),
    /// An item of a set list, as compact JSON (`v:"a"`).
    Value(String),
    /// An item of a list by position (`i:0`).
    Index(usize),
}

/// A path from the object's root.
pub(crate) type Path = Vec<PathElement>;

/// A set of paths, stored as a tree: each node knows whether the path to it is a member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSet {
    /// Whether the path leading to this node is in the set.
    member: bool,
    /// The paths below this node (never holding an empty node).
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// Whether the set has no paths.
    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Adds `path` (the empty path is not a member of any set).
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        let mut node = self;
        for element in path {
            node = node.children.entry(element.clone()).or_default();
        }
        if !path.is_empty() {
            node.member = true;
        }
    }

    /// The node `path` leads to, if the set has paths there.
    fn node(&self, path: &[PathElement]) -> Option<&Self> {
        path.iter()
            .try_fold(self, |node, element| node.children.get(element))
    }

    /// Whether `path` is a member.
    pub(crate) fn contains(&self, path: &[PathElement]) -> bool {
        !path.is_empty() && self.node(path).is_some_and(|node| node.member)
    }

    /// Removes `path` (only that member; paths below it stay).
    pub(crate) fn remove(&mut self, path: &[PathElement]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if let Some(child) = self.children.get_mut(first) {
            if rest.is_empty() {
                child.member = false;
            } else {
                child.remove(rest);
            }
            if child.is_empty() {
                self.children.remove(first);
            }
        }
    }

    /// The paths in either set.
    pub(crate) fn union(&self, other: &Self) -> Self {
        let mut out = self.clone();
        for path in other.paths() {
            out.insert(&path);
        }
        out
    }

    /// The paths of `self` that are not in `other` (member by member, as the real
    /// `Difference`: removing a path keeps the paths below it).
    pub(crate) fn difference(&self, other: &Self) -> Self {
        let mut out = self.clone();
        for path in other.paths() {
            out.remove(&path);
        }
        out
    }

    /// The paths in both sets.
    pub(crate) fn intersection(&self, other: &Self) -> Self {
        let mut out = Self::default();
        for path in self.paths() {
            if other.contains(&path) {
                out.insert(&path);
            }
        }
        out
    }

    /// Every member path, in the set's order (a path before the paths below it).
    pub(crate) fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (element, child) in &self.children {
            prefix.push(element.clone());
            if child.member {
                out.push(prefix.clone());
            }
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Whether some member path starts with `prefix` (the prefix itself included).
    pub(crate) fn has_prefix(&self, prefix: &[PathElement]) -> bool {
        self.node(prefix).is_some()
    }

    /// The real `FieldsV1` JSON of the set.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        for (element, child) in &self.children {
            let mut encoded = child.to_fields_v1();
            if child.member
                && !child.children.is_empty()
                && let Value::Object(m) = &mut encoded
            {
                m.insert(".".to_owned(), Value::Object(Map::new()));
            }
            map.insert(encode_element(element), encoded);
        }
        Value::Object(map)
    }

    /// Parses `FieldsV1` JSON; the error names what is malformed.
    pub(crate) fn from_fields_v1(value: &Value) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err(format!("expected an object, found {value}"));
        };
        let mut set = Self::default();
        for (key, child) in map {
            if key == "." {
                continue;
            }
            let element = decode_element(key)?;
            let mut node = Self::from_fields_v1(child)?;
            node.member =
                node.children.is_empty() || child.as_object().is_some_and(|m| m.contains_key("."));
            set.children.insert(element, node);
        }
        Ok(set)
    }
}

fn encode_element(element: &PathElement) -> String {
    match element {
        PathElement::Field(name) => format!("f:{name}"),
        PathElement::Key(key) => format!("k:{key}"),
        PathElement::Value(value) => format!("v:{value}"),
        PathElement::Index(index) => format!("i:{index}"),
    }
}

fn decode_element(encoded: &str) -> Result<PathElement, String> {
    let json = |s: &str| {
        serde_json::from_str::<Value>(s)
            .map(|v| v.to_string())
            .map_err(|e| format!("{encoded:?}: {e}"))
    };
    match encoded.split_at_checked(2) {
        Some(("f:", name)) => Ok(PathElement::Field(name.to_owned())),
        Some(("k:", key)) => Ok(PathElement::Key(json(key)?)),
        Some(("v:", value)) => Ok(PathElement::Value(json(value)?)),
        Some(("i:", index)) => index
            .parse()
            .map(PathElement::Index)
            .map_err(|e| format!("{encoded:?}: {e}")),
        _ => Err(format!("unknown path element {encoded:?}")),
    }
}

/// A path as the real `fieldpath.Path.String()`: `.spec.containers[name="c"].image`,
/// `.metadata.finalizers[="f"]`, `.items[0]`.
pub(crate) fn path_string(path: &[PathElement]) -> String {
    let mut out = String::new();
    for element in path {
        match element {
            PathElement::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            PathElement::Key(key) => {
                let fields = serde_json::from_str::<Map<String, Value>>(key).unwrap_or_default();
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={}", go_value_string(value)))
                    .collect();
                let _ = write!(out, "[{}]", parts.join(","));
            }
            PathElement::Value(value) => {
                let value = serde_json::from_str(value).unwrap_or(Value::Null);
                let _ = write!(out, "[={}]", go_value_string(&value));
            }
            PathElement::Index(index) => {
                let _ = write!(out, "[{index}]");
            }
        }
    }
    out
}

/// A value as the real `value.ToString`: strings quoted, numbers and booleans bare.
fn go_value_string(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_value_string).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}={}", go_value_string(v)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_owned())
    }

    #[test]
    fn fields_v1_round_trips_with_dot_for_members_that_have_children() {
        let encoded = json!({
            "f:data": {".": {}, "f:a": {}},
            "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}}}},
            "f:metadata": {"f:finalizers": {"v:\"x\"": {}}},
        });
        let set = FieldSet::from_fields_v1(&encoded).unwrap();
        assert!(set.contains(&[field("data")]));
        assert!(set.contains(&[field("data"), field("a")]));
        assert!(!set.contains(&[field("spec")]));
        assert!(set.contains(&[
            field("spec"),
            field("containers"),
            PathElement::Key(r#"{"name":"c"}"#.to_owned())
        ]));
        assert_eq!(set.to_fields_v1(), encoded);
    }

    #[test]
    fn difference_is_member_wise_and_paths_print_as_the_real_server() {
        let mut a = FieldSet::default();
        a.insert(&[field("data")]);
        a.insert(&[field("data"), field("a")]);
        let mut b = FieldSet::default();
        b.insert(&[field("data")]);
        let left = a.difference(&b);
        assert_eq!(left.paths(), vec![vec![field("data"), field("a")]]);
        assert!(a.intersection(&b).contains(&[field("data")]));
        assert_eq!(a.union(&b), a);
        let path = [
            field("spec"),
            field("containers"),
            PathElement::Key(r#"{"name":"c","port":80}"#.to_owned()),
            field("image"),
        ];
        assert_eq!(
            path_string(&path),
            r#".spec.containers[name="c",port=80].image"#
        );
        assert_eq!(
            path_string(&[field("f"), PathElement::Value("\"x\"".to_owned())]),
            r#".f[="x"]"#
        );
    }

    #[test]
    fn malformed_fields_v1_is_an_error() {
        assert!(FieldSet::from_fields_v1(&json!({"x:a": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"k:{oops": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!([])).is_err());
    }
}
