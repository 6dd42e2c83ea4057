//! Listing and watching: where objects enter the data path.
//!
//! A [`ListerWatcher`] lists one page of objects and opens a watch stream, using
//! kube's own [`ListParams`], [`WatchParams`], [`ObjectList`] and [`WatchEvent`]. The
//! [`Reflector`](crate::reflector::Reflector) drives it; it never retries by itself.
//!
//! [`ApiListerWatcher`] is the implementation over a [`kube::Api`]: namespaced or
//! cluster-wide, with label and field selectors. Any type can implement the trait —
//! tests use scripted ones — as client-go's `ListerWatcher` interface allows.
//!
//! Decoding can skip fields the cache would drop, *while* decoding: a
//! [`FieldFilter`](serde_field_filter::FieldFilter) (from the `serde-field-filter`
//! crate, re-exported by the `reflector` facade) set with
//! [`ApiListerWatcher::field_filter`] keeps `metadata.managedFields` (or any path)
//! from ever being allocated, in list bodies and watch events alike.
//!
//! Errors are classified the way client-go's reflector needs them: expired resource
//! versions, too-large resource versions, 429, internal errors and refused
//! connections each have a predicate on [`ListWatchError`].

mod api_lister_watcher;
mod boxed;
mod compact;
#[cfg(any(test, feature = "testing"))]
mod fake_source;
mod list_decoder;
mod list_prefetch;
mod list_request;
mod list_scanner;
mod list_stream;
#[cfg(test)]
pub(crate) mod mock_api;
#[cfg(test)]
mod scripted_decode;
mod watch_decoder;

use std::future::Future;

use futures::stream::BoxStream;
use kube::api::{ListParams, ObjectList, WatchEvent, WatchParams};
use kube::core::Status;

pub use api_lister_watcher::ApiListerWatcher;
pub(crate) use boxed::BoxListerWatcher;
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use fake_source::FakeSource;
pub(crate) use list_stream::list_page;
pub(crate) use watch_decoder::WatchDecoder;

/// A watch, as [`ListerWatcher::watch`] opens it.
pub(crate) type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, ListWatchError>>;

/// Lists and watches one resource type, as client-go's `ListerWatcher`.
///
/// # Example
/// A scripted lister-watcher, as tests write them:
/// ```
/// use futures::StreamExt;
/// use futures::stream::BoxStream;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{ListParams, ObjectList, WatchEvent, WatchParams};
/// use reflector::listwatch::*;
///
/// struct Empty;
/// impl ListerWatcher<ConfigMap> for Empty {
///     async fn list(&self, _: &ListParams) -> Result<ObjectList<ConfigMap>, ListWatchError> {
///         Ok(serde_json::from_str(r#"{"metadata":{"resourceVersion":"1"},"items":[]}"#).unwrap())
///     }
///     async fn watch(
///         &self,
///         _: &WatchParams,
///         _: &str,
///     ) -> Result<BoxStream<'static, Result<WatchEvent<ConfigMap>, ListWatchError>>, ListWatchError> {
///         Ok(futures::stream::empty().boxed())
///     }
/// }
/// ```
pub trait ListerWatcher<K: Clone>: Send + Sync + 'static {
    /// Lists one page. `params.limit`/`continue_token` select the page,
    /// `params.resource_version`/`version_match` the snapshot.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; nothing is lost.
    fn list(
        &self,
        params: &ListParams,
    ) -> impl Future<Output = Result<ObjectList<K>, ListWatchError>> + Send;

    /// Opens a watch from `resource_version` (`""` or `"0"`: from the current state):
    /// a stream of events, each decoded once. An `Err` item ends the watch unless
    /// [`ListWatchError::is_unexpected_kind`] says it is a skippable event.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; nothing is lost.
    fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> impl Future<
        Output = Result<BoxStream<'static, Result<WatchEvent<K>, ListWatchError>>, ListWatchError>,
    > + Send;

    /// The [`ApiListerWatcher`] this is, or wraps and lists through unchanged: a
    /// reflector streams its list bodies, each batch of objects handed on as it is
    /// decoded, where another lister-watcher's pages are listed whole through
    /// [`list`](Self::list). Default: none.
    fn api_lister_watcher(&self) -> Option<&ApiListerWatcher<K>>
    where
        K: kube::Resource,
    {
        None
    }

    /// This lister-watcher skipping `filter`'s paths (relative to each object) too
    /// while it decodes lists and watch events, as an informer's options ask
    /// ([`InformerOptions::skip_fields`](crate::informer::InformerOptions::skip_fields);
    /// `metadata.managedFields` unless kept). Default: unchanged, for a lister-watcher
    /// that decodes nothing; [`ApiListerWatcher`] skips them while decoding.
    #[must_use]
    fn skip_fields(self, _filter: &serde_field_filter::FieldFilter) -> Self
    where
        Self: Sized,
    {
        self
    }
}

/// Errors of listing and watching.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListWatchError {
    /// The API server answered with a `Status` error. Retryable or not by its code:
    /// see [`ListWatchError::is_expired`], [`ListWatchError::is_too_many_requests`],
    /// [`ListWatchError::is_internal_error`].
    #[error("API error {code} {reason}: {message}", code = .0.code, reason = .0.reason, message = .0.message)]
    Api(Box<Status>),
    /// The request could not be sent or the response not read (connection refused or
    /// reset, TLS, timeouts). Retryable.
    #[error("transport error")]
    Transport(#[source] kube::Error),
    /// A list body or watch line was not valid JSON of the expected shape. Ends the
    /// watch; the reflector recovers by relisting. Retryable.
    #[error("cannot decode {what}")]
    Decode {
        /// What was being decoded ("watch event", "list").
        what: &'static str,
        /// The decoder's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// One item of a list body was not valid JSON of the expected shape (`index`
    /// counts from 0 within the response). The list fails as a whole; the reflector
    /// lists again. Retryable.
    #[error("cannot decode list item {index}")]
    DecodeItem {
        /// The item's position in the list response.
        index: usize,
        /// The decoder's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// A watch event carried an object of another kind or apiVersion. The event is
    /// skipped and the watch goes on, as client-go's reflector does. Not an error of
    /// the stream.
    #[error("expected {expected}, found {found}")]
    UnexpectedKind {
        /// `apiVersion/kind` the watcher expects.
        expected: String,
        /// `apiVersion/kind` the event carried.
        found: String,
    },
}

/// Status reasons the API server uses; a Status with another reason is classified
/// by its code alone, as apimachinery's `reasonAndCodeForError` does.
const KNOWN_REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

impl ListWatchError {
    /// The API `Status`, if the server sent one.
    #[must_use]
    pub fn status(&self) -> Option<&Status> {
        match self {
            ListWatchError::Api(s) => Some(s),
            _ => None,
        }
    }

    fn reason_or_code(&self, reason: &str, code: u16) -> bool {
        self.status().is_some_and(|s| {
            s.reason == reason || (!KNOWN_REASONS.contains(&s.reason.as_str()) && s.code == code)
        })
    }

    /// `410 Expired`/`Gone`: the resource version is too old (client-go's
    /// `isExpiredError`).
    #[must_use]
    pub fn is_expired(&self) -> bool {
        self.status().is_some_and(|s| s.reason == "Expired") || self.reason_or_code("Gone", 410)
    }

    /// "Too large resource version": the server has not caught up with the requested
    /// resource version (client-go's `isTooLargeResourceVersionError`, including
    /// the message forms of older servers).
    #[must_use]
    pub fn is_too_large_resource_version(&self) -> bool {
        let Some(s) = self.status() else { return false };
        let causes = s
            .details
            .as_ref()
            .map(|d| d.causes.as_slice())
            .unwrap_or_default();
        if causes.iter().any(|c| c.reason == "ResourceVersionTooLarge") {
            return true;
        }
        let is_timeout =
            s.reason == "Timeout" || (!KNOWN_REASONS.contains(&s.reason.as_str()) && s.code == 504);
        is_timeout
            && (causes
                .iter()
                .any(|c| c.message == "Too large resource version")
                || s.message.contains("Too large resource version"))
    }

    /// `429 TooManyRequests`.
    #[must_use]
    pub fn is_too_many_requests(&self) -> bool {
        self.reason_or_code("TooManyRequests", 429)
    }

    /// `500 InternalError`.
    #[must_use]
    pub fn is_internal_error(&self) -> bool {
        self.reason_or_code("InternalError", 500)
    }

    /// The connection was refused: the API server is down or restarting.
    #[must_use]
    pub fn is_connection_refused(&self) -> bool {
        let ListWatchError::Transport(e) = self else {
            return false;
        };
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = cur {
            if let Some(io) = err.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::ConnectionRefused
            {
                return true;
            }
            cur = err.source();
        }
        false
    }

    /// The connection ended mid-stream in a way that is a normal end of a watch
    /// (reset, unexpected EOF), as apimachinery's `IsProbableEOF`: the watch ends
    /// quietly and resumes from the last resource version.
    #[must_use]
    pub fn is_probable_eof(&self) -> bool {
        let ListWatchError::Transport(e) = self else {
            return false;
        };
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = cur {
            if let Some(io) = err.downcast_ref::<std::io::Error>()
                && matches!(
                    io.kind(),
                    std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::BrokenPipe
                )
            {
                return true;
            }
            let msg = err.to_string();
            if [
                "unexpected EOF",
                "connection reset",
                "connection closed",
                "end of file",
            ]
            .iter()
            .any(|m| msg.contains(m))
            {
                return true;
            }
            cur = err.source();
        }
        false
    }

    /// A skippable event of the wrong kind (see [`ListWatchError::UnexpectedKind`]).
    #[must_use]
    pub fn is_unexpected_kind(&self) -> bool {
        matches!(self, ListWatchError::UnexpectedKind { .. })
    }
}

impl From<kube::Error> for ListWatchError {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(s) => ListWatchError::Api(s),
            kube::Error::SerdeError(source) => ListWatchError::Decode {
                what: "response body",
                source,
            },
            other => ListWatchError::Transport(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::response::{StatusCause, StatusDetails};

    fn api(code: u16, reason: &str, message: &str) -> ListWatchError {
        let mut s = Status::failure(message, reason).with_code(code);
        s.reason = reason.into();
        ListWatchError::Api(Box::new(s))
    }

    #[test]
    fn classifies_status_errors_like_apimachinery() {
        assert!(api(410, "Expired", "too old").is_expired());
        assert!(api(410, "Gone", "gone").is_expired());
        assert!(api(410, "Failed to parse error data", "gone").is_expired());
        assert!(!api(409, "Conflict", "x").is_expired());
        assert!(api(429, "TooManyRequests", "slow").is_too_many_requests());
        assert!(api(429, "Failed to parse error data", "slow down").is_too_many_requests());
        assert!(!api(503, "ServiceUnavailable", "x").is_too_many_requests());
        assert!(api(500, "InternalError", "boom").is_internal_error());
        assert!(!api(500, "Conflict", "x").is_internal_error());
    }

    #[test]
    fn classifies_too_large_resource_version_in_all_three_forms() {
        let mut with_cause =
            Status::failure("Too large resource version: 30, current: 20", "Timeout")
                .with_code(504);
        with_cause.details = Some(StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: vec![StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            }],
            retry_after_seconds: 1,
        });
        assert!(ListWatchError::Api(Box::new(with_cause)).is_too_large_resource_version());
        assert!(api(504, "Timeout", "Too large resource version").is_too_large_resource_version());
        assert!(!api(504, "Timeout", "slow etcd").is_too_large_resource_version());
        assert!(!api(410, "Expired", "Too large resource version").is_too_large_resource_version());
    }
}
