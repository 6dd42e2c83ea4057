//! The filter: a set of paths, and the ways to decode through it.

use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::Deserializer;

use crate::path::{Node, Segment, parse_path};
use crate::{FieldFilterError, FilteredDeserializer, FilteredSeed};

/// A set of JSON paths skipped while decoding, and the [`Deserializer`] adapter that
/// skips them ([`FieldFilter::wrap`], [`FieldFilter::deserialize`],
/// [`FieldFilter::seed`], [`from_slice`]).
///
/// A skipped value is consumed with [`IgnoredAny`](serde::de::IgnoredAny): it must
/// be valid JSON but is never allocated. Keys are compared after unescaping
/// (`"man\u0061gedFields"` is `managedFields`) and only exact paths match:
/// `managedFields` anywhere but under `metadata` is left alone. Off the filtered
/// paths the adapter steps aside and values decode at plain serde_json cost.
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
    pub(crate) root: Node,
    /// The paths as given, for display.
    pub(crate) paths: Vec<String>,
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

    /// A [`DeserializeSeed`](serde::de::DeserializeSeed) decoding a `T` with this filter.
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
    // Checked as UTF-8 once, whole, rather than string by string as serde_json checks
    // bytes; a document that is not UTF-8 gets the byte reader's error.
    match std::str::from_utf8(bytes) {
        Ok(text) => from_read(serde_json::Deserializer::from_str(text), filter),
        Err(_) => from_read(serde_json::Deserializer::from_slice(bytes), filter),
    }
}

/// Decodes a `T` from `de`, skipping `filter`'s paths, then checks that only
/// whitespace follows.
fn from_read<'a, R, T>(
    mut de: serde_json::Deserializer<R>,
    filter: &FieldFilter,
) -> serde_json::Result<T>
where
    R: serde_json::de::Read<'a>,
    T: Deserialize<'a>,
{
    let value = filter.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}
