//! The error of building a filter.

/// Errors of building a [`FieldFilter`](crate::FieldFilter).
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
