//! What a watch event asks of a store, for runs of events handed over at once.

/// The store call a watch event stands for: `ADDED` → [`Store::add`],
/// `MODIFIED` → [`Store::update`], `DELETED` → [`Store::delete`]. A reflector hands
/// a store the events of one poll together, as `(WatchAction, object)` pairs, through
/// [`Store::apply_watch_run`].
///
/// [`Store::add`]: crate::store::Store::add
/// [`Store::update`]: crate::store::Store::update
/// [`Store::delete`]: crate::store::Store::delete
/// [`Store::apply_watch_run`]: crate::store::Store::apply_watch_run
///
/// # Example
/// ```
/// use reflector_core::store::WatchAction;
/// assert_eq!(WatchAction::Add.as_str(), "add");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WatchAction {
    /// An `ADDED` event: [`Store::add`](crate::store::Store::add).
    Add,
    /// A `MODIFIED` event: [`Store::update`](crate::store::Store::update).
    Update,
    /// A `DELETED` event: [`Store::delete`](crate::store::Store::delete).
    Delete,
}

impl WatchAction {
    /// The store call's name: `add`, `update` or `delete`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            WatchAction::Add => "add",
            WatchAction::Update => "update",
            WatchAction::Delete => "delete",
        }
    }
}

impl std::fmt::Display for WatchAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
