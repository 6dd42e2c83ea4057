//! serde-field-filter: JSON fields skipped *while* decoding, never materialized.
//!
//! A filter is a set of paths into a JSON document — `metadata.managedFields`,
//! `data`, `status.conditions[*].message` — and a [`Deserializer`] adapter that wraps
//! any serde deserializer. When the adapter meets a map key whose path is in the set,
//! it consumes the value with [`IgnoredAny`] and hides the key from the type being
//! decoded: the skipped subtree is parsed (it must still be valid JSON) but never
//! allocated (as with serde_json's own skipping of unknown fields, strings inside a
//! skipped subtree are not checked for valid UTF-8). Keys are compared after
//! unescaping, so `"man\u0061gedFields"` is `managedFields`. Only exact paths match:
//! a `managedFields` key anywhere but under `metadata` is left alone.
//!
//! Off the filtered paths the adapter steps aside: a value none of whose descendants is
//! filtered is handed to the type with the inner deserializer itself, so decoding it
//! costs what plain serde_json costs.
//!
//! The path syntax is described on [`FieldFilter`].

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::{Deserialize, forward_to_deserialize_any};

/// Errors of building a [`FieldFilter`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldFilterError {
    /// A path does not follow the path syntax. Not retryable: the path must be fixed.
    #[error("invalid field path {path:?} at byte {at}: {problem}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Byte offset of the problem in `path`.
        at: usize,
        /// What is wrong there.
        problem: &'static str,
    },
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// A map key.
    Key(String),
    /// Every element of a sequence.
    Items,
}

/// A node of the path trie: what happens at one position of the document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Node {
    /// The value here is skipped entirely.
    skip: bool,
    /// Map keys with something filtered at or under them (few: searched linearly).
    fields: Vec<(Box<str>, Node)>,
    /// What applies to every element when the value here is a sequence.
    items: Option<Box<Node>>,
}

impl Node {
    fn field(&self, key: &str) -> Option<&Node> {
        self.fields
            .iter()
            .find(|(k, _)| k.as_ref() == key)
            .map(|(_, n)| n)
    }

    fn insert(&mut self, path: &[Segment]) {
        let Some((first, rest)) = path.split_first() else {
            self.skip = true;
            return;
        };
        let child = match first {
            Segment::Key(k) => {
                let pos = match self.fields.iter().position(|(f, _)| f.as_ref() == k) {
                    Some(pos) => pos,
                    None => {
                        self.fields.push((k.as_str().into(), Node::default()));
                        self.fields.len() - 1
                    }
                };
                &mut self.fields[pos].1
            }
            Segment::Items => self.items.get_or_insert_with(Box::default),
        };
        child.insert(rest);
    }

    fn merge(&mut self, other: &Node) {
        self.skip |= other.skip;
        for (key, theirs) in &other.fields {
            match self.fields.iter_mut().find(|(k, _)| k == key) {
                Some((_, ours)) => ours.merge(theirs),
                None => self.fields.push((key.clone(), theirs.clone())),
            }
        }
        if let Some(theirs) = &other.items {
            self.items.get_or_insert_with(Box::default).merge(theirs);
        }
    }

    /// Nothing at or under this node is filtered.
    fn is_empty(&self) -> bool {
        !self.skip && self.fields.is_empty() && self.items.is_none()
    }
}

/// A set of JSON paths skipped while decoding, and the [`Deserializer`] adapter that
/// skips them ([`FieldFilter::wrap`], [`FieldFilter::deserialize`],
/// [`FieldFilter::seed`], [`from_slice`]).
///
/// A skipped value is consumed with [`IgnoredAny`]: it must be valid JSON but is
/// never allocated. Keys are compared after unescaping (`"man\u0061gedFields"` is
/// `managedFields`) and only exact paths match: `managedFields` anywhere but under
/// `metadata` is left alone. Off the filtered paths the adapter steps aside and
/// values decode at plain serde_json cost.
///
/// # Path syntax
/// Segments joined by `.`: a bare key (`metadata`), `[*]` for every element of a
/// sequence (`status.conditions[*].message`), or a quoted key for keys holding `.`,
/// `[`, `]` or `"` (`metadata.labels["app.kubernetes.io/name"]`, with `\"` and `\\`
/// escapes). A path ending in `[*]` drops every element of that sequence.
///
/// Skipping a field the type requires (one without a default) makes decoding fail
/// with the type's "missing field" error; Kubernetes types default every field.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use serde_field_filter::{FieldFilter, from_slice};
///
/// let filter = FieldFilter::managed_fields().skip("data").unwrap();
/// let json = br#"{"apiVersion":"v1","kind":"ConfigMap",
///     "metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]},
///     "data":{"big":"..."}}"#;
/// let cm: ConfigMap = from_slice(json, &filter).unwrap();
/// assert_eq!(cm.metadata.name.as_deref(), Some("a"));
/// assert!(cm.metadata.managed_fields.is_none());
/// assert!(cm.data.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldFilter {
    root: Node,
    /// The paths as given, for display.
    paths: Vec<String>,
}

/// The path of server-side apply bookkeeping: `metadata.managedFields`.
pub const MANAGED_FIELDS_PATH: &str = "metadata.managedFields";

impl FieldFilter {
    /// A filter that skips nothing.
    #[must_use]
    pub fn new() -> Self {
        FieldFilter::default()
    }

    /// A filter that skips `metadata.managedFields`.
    #[must_use]
    pub fn managed_fields() -> Self {
        let mut f = FieldFilter::new();
        f.insert_segments(
            &[
                Segment::Key("metadata".into()),
                Segment::Key("managedFields".into()),
            ],
            MANAGED_FIELDS_PATH,
        );
        f
    }

    /// A filter skipping every path of `paths`.
    ///
    /// # Errors
    /// [`FieldFilterError::InvalidPath`] for the first path that does not parse.
    pub fn parse<I, S>(paths: I) -> Result<Self, FieldFilterError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut f = FieldFilter::new();
        for p in paths {
            f.add(p.as_ref())?;
        }
        Ok(f)
    }

    /// This filter, also skipping `path`.
    ///
    /// # Errors
    /// [`FieldFilterError::InvalidPath`] when `path` does not parse.
    pub fn skip(mut self, path: &str) -> Result<Self, FieldFilterError> {
        self.add(path)?;
        Ok(self)
    }

    /// Also skips `path`.
    ///
    /// # Errors
    /// [`FieldFilterError::InvalidPath`] when `path` does not parse; the filter is
    /// then unchanged.
    pub fn add(&mut self, path: &str) -> Result<(), FieldFilterError> {
        let segments = parse_path(path)?;
        self.insert_segments(&segments, path);
        Ok(())
    }

    /// Also skips every path of `other`.
    pub fn merge(&mut self, other: &FieldFilter) {
        self.root.merge(&other.root);
        for p in &other.paths {
            if !self.paths.contains(p) {
                self.paths.push(p.clone());
            }
        }
    }

    fn insert_segments(&mut self, segments: &[Segment], path: &str) {
        self.root.insert(segments);
        if !self.paths.iter().any(|p| p == path) {
            self.paths.push(path.to_owned());
        }
    }

    /// The paths skipped, as given.
    #[must_use]
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// Whether the filter skips nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.root.is_empty()
    }

    /// The same paths, each under `prefix`: `FieldFilter::managed_fields().within("items[*]")`
    /// skips `managedFields` in every item of a list; `within("object")` in a watch
    /// event's object.
    ///
    /// # Errors
    /// [`FieldFilterError::InvalidPath`] when `prefix` does not parse.
    pub fn within(&self, prefix: &str) -> Result<FieldFilter, FieldFilterError> {
        let segments = parse_path(prefix)?;
        Ok(self.within_segments(&segments, prefix))
    }

    fn within_segments(&self, prefix: &[Segment], prefix_text: &str) -> FieldFilter {
        let mut root = self.root.clone();
        for seg in prefix.iter().rev() {
            let mut parent = Node::default();
            if !root.is_empty() {
                match seg {
                    Segment::Key(k) => parent.fields.push((k.as_str().into(), root)),
                    Segment::Items => parent.items = Some(Box::new(root)),
                }
            }
            root = parent;
        }
        let paths = self
            .paths
            .iter()
            .map(|p| {
                if p.starts_with('[') {
                    format!("{prefix_text}{p}")
                } else {
                    format!("{prefix_text}.{p}")
                }
            })
            .collect();
        FieldFilter { root, paths }
    }

    /// The filter for a Kubernetes list body: each path under `items[*]`, the
    /// infallible form of `within("items[*]")`.
    ///
    /// # Example
    /// ```
    /// use serde_field_filter::FieldFilter;
    /// let f = FieldFilter::managed_fields();
    /// assert_eq!(f.for_list_items().paths(), ["items[*].metadata.managedFields"]);
    /// ```
    #[must_use]
    pub fn for_list_items(&self) -> FieldFilter {
        self.within_segments(&[Segment::Key("items".into()), Segment::Items], "items[*]")
    }

    /// The filter for a Kubernetes watch event: each path under `object`, the
    /// infallible form of `within("object")`.
    ///
    /// # Example
    /// ```
    /// use serde_field_filter::FieldFilter;
    /// let f = FieldFilter::managed_fields();
    /// assert_eq!(f.for_watch_object().paths(), ["object.metadata.managedFields"]);
    /// ```
    #[must_use]
    pub fn for_watch_object(&self) -> FieldFilter {
        self.within_segments(&[Segment::Key("object".into())], "object")
    }

    /// Wraps `deserializer` so that decoding through it skips this filter's paths.
    #[must_use]
    pub fn wrap<'de, D: Deserializer<'de>>(&self, deserializer: D) -> FilteredDeserializer<'_, D> {
        FilteredDeserializer {
            de: deserializer,
            node: &self.root,
        }
    }

    /// Decodes a `T` from `deserializer`, skipping this filter's paths.
    ///
    /// # Errors
    /// Whatever the deserializer or `T` report; never panics on bad input.
    pub fn deserialize<'de, T, D>(&self, deserializer: D) -> Result<T, D::Error>
    where
        T: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        T::deserialize(self.wrap(deserializer))
    }

    /// A [`DeserializeSeed`] decoding a `T` with this filter.
    #[must_use]
    pub fn seed<T>(&self) -> FilteredSeed<'_, T> {
        FilteredSeed {
            node: &self.root,
            _t: PhantomData,
        }
    }
}

/// Decodes a `T` from JSON `bytes`, skipping `filter`'s paths; trailing non-whitespace
/// is an error, as with [`serde_json::from_slice`].
///
/// # Errors
/// serde_json's error for malformed JSON or a document that is not a `T`.
pub fn from_slice<'a, T>(bytes: &'a [u8], filter: &FieldFilter) -> serde_json::Result<T>
where
    T: Deserialize<'a>,
{
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = filter.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Parses one path into segments.
fn parse_path(path: &str) -> Result<Vec<Segment>, FieldFilterError> {
    let err = |at: usize, problem: &'static str| FieldFilterError::InvalidPath {
        path: path.to_owned(),
        at,
        problem,
    };
    if path.is_empty() {
        return Err(err(0, "empty path"));
    }
    let bytes = path.as_bytes();
    let mut segments = Vec::new();
    let mut i = 0;
    // Whether the next segment may be a bare key (at the start, or after a dot).
    let mut expect_key = true;
    while i < bytes.len() {
        match bytes[i] {
            b'[' => {
                let rest = &path[i..];
                if rest.starts_with("[*]") {
                    segments.push(Segment::Items);
                    i += 3;
                } else if let Some(quoted) = rest.strip_prefix("[\"") {
                    let (key, used) =
                        parse_quoted(quoted).map_err(|(off, p)| err(i + 2 + off, p))?;
                    segments.push(Segment::Key(key));
                    i += 2 + used;
                    if bytes.get(i) != Some(&b']') {
                        return Err(err(i, "expected `]` after a quoted key"));
                    }
                    i += 1;
                } else {
                    return Err(err(i, "expected `[*]` or `[\"key\"]`"));
                }
                expect_key = false;
            }
            b'.' => {
                if expect_key {
                    return Err(err(i, "empty key"));
                }
                expect_key = true;
                i += 1;
                if i == bytes.len() {
                    return Err(err(i, "path ends with `.`"));
                }
            }
            b']' | b'"' => return Err(err(i, "unexpected character outside brackets")),
            _ => {
                if !expect_key {
                    return Err(err(i, "expected `.` or `[` between segments"));
                }
                let start = i;
                while i < bytes.len() && !matches!(bytes[i], b'.' | b'[' | b']' | b'"') {
                    i += 1;
                }
                segments.push(Segment::Key(path[start..i].to_owned()));
                expect_key = false;
            }
        }
    }
    Ok(segments)
}

/// Parses the inside of a quoted key up to (and including) its closing quote; returns
/// the key and the bytes used.
fn parse_quoted(s: &str) -> Result<(String, usize), (usize, &'static str)> {
    let mut key = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                if key.is_empty() {
                    return Err((i, "empty quoted key"));
                }
                return Ok((key, i + 1));
            }
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => key.push(e),
                Some((j, _)) => return Err((j, "only `\\\"` and `\\\\` escapes are allowed")),
                None => return Err((i + 1, "unterminated quoted key")),
            },
            c => key.push(c),
        }
    }
    Err((s.len(), "unterminated quoted key"))
}

/// A [`DeserializeSeed`] decoding a `T` through a [`FieldFilter`]; made by
/// [`FieldFilter::seed`].
pub struct FilteredSeed<'f, T> {
    node: &'f Node,
    _t: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for FilteredSeed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteredSeed").finish_non_exhaustive()
    }
}

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for FilteredSeed<'_, T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize(FilteredDeserializer {
            de: deserializer,
            node: self.node,
        })
    }
}

/// A deserializer that skips a [`FieldFilter`]'s paths; made by
/// [`FieldFilter::wrap`].
pub struct FilteredDeserializer<'f, D> {
    de: D,
    node: &'f Node,
}

impl<D> fmt::Debug for FilteredDeserializer<'_, D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteredDeserializer")
            .finish_non_exhaustive()
    }
}

/// Forwards `deserialize_*` methods to the inner deserializer with a wrapped visitor.
macro_rules! forward_wrapped {
    ($($method:ident ( $($arg:ident : $ty:ty),* );)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.de.$method($($arg,)* Wrap { inner: visitor, node: self.node })
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for FilteredDeserializer<'_, D> {
    type Error = D::Error;

    forward_wrapped! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_f32();
        deserialize_f64();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

/// A visitor that wraps the maps, sequences, enums and nested values it is given.
struct Wrap<'f, V> {
    inner: V,
    node: &'f Node,
}

/// Forwards `visit_*` methods of scalars unchanged.
macro_rules! forward_visit {
    ($($method:ident ( $ty:ty );)*) => {
        $(
            fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(FilteredDeserializer {
            de,
            node: self.node,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(FilteredDeserializer {
            de,
            node: self.node,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        match self.node.items.as_deref() {
            Some(items) => self.inner.visit_seq(WrapSeq { seq, node: items }),
            None => self.inner.visit_seq(seq),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        if self.node.fields.is_empty() {
            return self.inner.visit_map(map);
        }
        self.inner.visit_map(WrapMap {
            map,
            node: self.node,
            value_node: None,
        })
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        if self.node.fields.is_empty() {
            return self.inner.visit_enum(data);
        }
        self.inner.visit_enum(WrapEnum {
            data,
            node: self.node,
        })
    }
}

/// A seed decoding its value with the filter at `node`.
struct WrapSeed<'f, S> {
    seed: S,
    node: &'f Node,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for WrapSeed<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.seed.deserialize(FilteredDeserializer {
            de,
            node: self.node,
        })
    }
}

/// Sequence elements, each decoded with the filter at `node` (the `[*]` node).
struct WrapSeq<'f, A> {
    seq: A,
    node: &'f Node,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for WrapSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        if self.node.skip {
            // `list[*]` skips every element: consume them all, yield none.
            while self.seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(None);
        }
        self.seq.next_element_seed(WrapSeed {
            seed,
            node: self.node,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        if self.node.skip {
            Some(0)
        } else {
            self.seq.size_hint()
        }
    }
}

/// A map whose keys are looked up in `node`: skipped keys vanish, keys with filtered
/// descendants get their value wrapped, other values pass through untouched.
struct WrapMap<'f, A> {
    map: A,
    node: &'f Node,
    /// The node for the value of the key just returned, when it has filtered
    /// descendants.
    value_node: Option<&'f Node>,
}

impl<'de, 'f, A: MapAccess<'de>> MapAccess<'de> for WrapMap<'f, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key_seed(CaptureKey)? else {
                return Ok(None);
            };
            let child = key.as_str().and_then(|k| self.node.field(k));
            match child {
                Some(child) if child.skip => {
                    self.map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    self.value_node = child;
                    return seed.deserialize(KeyDeserializer::new(key)).map(Some);
                }
            }
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        match self.value_node.take() {
            Some(node) => self.map.next_value_seed(WrapSeed { seed, node }),
            None => self.map.next_value_seed(seed),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// An enum whose variant name is looked up in `node` like a map key; a variant's
/// content cannot be skipped (it is required), but paths through it apply.
struct WrapEnum<'f, A> {
    data: A,
    node: &'f Node,
}

impl<'de, 'f, A: EnumAccess<'de>> EnumAccess<'de> for WrapEnum<'f, A> {
    type Error = A::Error;
    type Variant = WrapVariant<'f, A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), A::Error> {
        let (key, variant) = self.data.variant_seed(CaptureKey)?;
        let node = key.as_str().and_then(|k| self.node.field(k));
        let value = seed.deserialize(KeyDeserializer::new(key))?;
        Ok((value, WrapVariant { variant, node }))
    }
}

struct WrapVariant<'f, A> {
    variant: A,
    node: Option<&'f Node>,
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for WrapVariant<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.variant.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        match self.node {
            Some(node) => self.variant.newtype_variant_seed(WrapSeed { seed, node }),
            None => self.variant.newtype_variant_seed(seed),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        match self.node {
            Some(node) => self.variant.tuple_variant(
                len,
                Wrap {
                    inner: visitor,
                    node,
                },
            ),
            None => self.variant.tuple_variant(len, visitor),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        match self.node {
            Some(node) => self.variant.struct_variant(
                fields,
                Wrap {
                    inner: visitor,
                    node,
                },
            ),
            None => self.variant.struct_variant(fields, visitor),
        }
    }
}

/// A map key or variant name read ahead, so the filter can decide before the type
/// being decoded sees it. Borrowed from the input when the input allows (no escapes):
/// capturing allocates only for escaped keys.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
    U64(u64),
    I64(i64),
    Bool(bool),
}

impl Key<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Key::Borrowed(s) => Some(s),
            Key::Owned(s) => Some(s),
            _ => None,
        }
    }
}

/// Reads a key as it comes.
struct CaptureKey;

impl<'de> DeserializeSeed<'de> for CaptureKey {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Key<'de>, D::Error> {
        de.deserialize_any(CaptureKey)
    }
}

impl<'de> Visitor<'de> for CaptureKey {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map key")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key<'de>, E> {
        Ok(Key::U64(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key<'de>, E> {
        Ok(Key::I64(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Key<'de>, E> {
        Ok(Key::Bool(v))
    }
}

/// Hands a captured key to the type being decoded. String keys asked for as numbers
/// or booleans are parsed, as serde_json does for map keys.
struct KeyDeserializer<'de, E> {
    key: Key<'de>,
    _e: PhantomData<fn() -> E>,
}

impl<'de, E> KeyDeserializer<'de, E> {
    fn new(key: Key<'de>) -> Self {
        KeyDeserializer {
            key,
            _e: PhantomData,
        }
    }
}

/// `deserialize_*` for numbers and booleans: string keys are parsed.
macro_rules! parse_key {
    ($($method:ident => $visit:ident : $ty:ty;)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
                match &self.key {
                    Key::Borrowed(s) => parse_str_key::<$ty, V, E>(s, visitor, |v, n| v.$visit(n)),
                    Key::Owned(s) => parse_str_key::<$ty, V, E>(s, visitor, |v, n| v.$visit(n)),
                    _ => self.deserialize_any(visitor),
                }
            }
        )*
    };
}

fn parse_str_key<'de, T, V, E>(
    s: &str,
    visitor: V,
    visit: impl FnOnce(V, T) -> Result<V::Value, E>,
) -> Result<V::Value, E>
where
    T: std::str::FromStr,
    V: Visitor<'de>,
    E: de::Error,
{
    match s.parse::<T>() {
        Ok(n) => visit(visitor, n),
        Err(_) => Err(E::invalid_value(de::Unexpected::Str(s), &visitor)),
    }
}

impl<'de, E: de::Error> Deserializer<'de> for KeyDeserializer<'de, E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.key {
            Key::Borrowed(s) => visitor.visit_borrowed_str(s),
            Key::Owned(s) => visitor.visit_string(s),
            Key::U64(n) => visitor.visit_u64(n),
            Key::I64(n) => visitor.visit_i64(n),
            Key::Bool(b) => visitor.visit_bool(b),
        }
    }

    parse_key! {
        deserialize_bool => visit_bool: bool;
        deserialize_i8 => visit_i8: i8;
        deserialize_i16 => visit_i16: i16;
        deserialize_i32 => visit_i32: i32;
        deserialize_i64 => visit_i64: i64;
        deserialize_i128 => visit_i128: i128;
        deserialize_u8 => visit_u8: u8;
        deserialize_u16 => visit_u16: u16;
        deserialize_u32 => visit_u32: u32;
        deserialize_u64 => visit_u64: u64;
        deserialize_u128 => visit_u128: u128;
        deserialize_f32 => visit_f32: f32;
        deserialize_f64 => visit_f64: f64;
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match self.key {
            Key::Borrowed(s) => {
                BorrowedStrDeserializer::<E>::new(s).deserialize_enum(name, variants, visitor)
            }
            Key::Owned(s) => {
                StringDeserializer::<E>::new(s).deserialize_enum(name, variants, visitor)
            }
            _ => self.deserialize_any(visitor),
        }
    }

    forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests;
