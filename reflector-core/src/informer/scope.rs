//! [`InformerScope`]: which objects of a kind an informer holds.

/// Which objects of a kind a factory's informer lists and watches: one namespace or
/// all, and optional label and field selectors. The default is every object in
/// every namespace; the [`InformerFactory`](super::InformerFactory) keeps one
/// informer per kind and scope.
///
/// # Example
/// ```
/// use reflector::informer::InformerScope;
/// let scope = InformerScope::default().namespace("prod").labels("app=web");
/// assert_eq!(scope, InformerScope::default().labels("app=web").namespace("prod"));
/// assert_ne!(scope, InformerScope::default());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InformerScope {
    pub(super) namespace: Option<String>,
    pub(crate) labels: Option<String>,
    pub(super) fields: Option<String>,
}

impl InformerScope {
    /// Only objects in `namespace` (default: every namespace).
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only objects matching the label selector `selector` (`app=web,tier!=db`).
    #[must_use]
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.labels = Some(selector.into());
        self
    }

    /// Only objects matching the field selector `selector` (`metadata.name=web`).
    #[must_use]
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.fields = Some(selector.into());
        self
    }
}
