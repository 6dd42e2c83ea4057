//! The API errors a scripted server answers with, as `kube` decodes them.

use k8s_openapi::api::core::v1::Pod;
use kube::api::WatchEvent;
use kube::core::Status;
use kube::core::response::{StatusCause, StatusDetails};

use crate::listwatch::ListWatchError;

/// An API error: a `Status` with `code`, `reason` and `message`.
pub(crate) fn api_error(code: u16, reason: &str, message: &str) -> ListWatchError {
    let mut s = Status::failure(message, reason).with_code(code);
    s.reason = reason.into();
    ListWatchError::Api(Box::new(s))
}

/// 410 `Expired`: the resource version is too old.
pub(crate) fn expired() -> ListWatchError {
    api_error(
        410,
        "Expired",
        "The resourceVersion for the provided watch is too old.",
    )
}

/// 429 `TooManyRequests`.
pub(crate) fn too_many_requests() -> ListWatchError {
    api_error(429, "TooManyRequests", "too many requests")
}

/// 500 `InternalError`, as etcd without a leader answers.
pub(crate) fn internal_error() -> ListWatchError {
    api_error(
        500,
        "InternalError",
        "Internal error occurred: etcdserver: no leader",
    )
}

/// A 504 "too large resource version", told by its cause's reason, its cause's
/// message or (with neither) the status message only.
pub(crate) fn too_large(cause_reason: &str, cause_message: &str, message: &str) -> ListWatchError {
    let mut s = Status::failure(message, "Timeout").with_code(504);
    s.reason = "Timeout".into();
    if !cause_reason.is_empty() || !cause_message.is_empty() {
        s.details = Some(StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: vec![StatusCause {
                reason: cause_reason.into(),
                message: cause_message.into(),
                field: String::new(),
            }],
            retry_after_seconds: 1,
        });
    }
    ListWatchError::Api(Box::new(s))
}

/// The `ERROR` watch event carrying `error`'s status.
pub(crate) fn error_event(error: ListWatchError) -> WatchEvent<Pod> {
    let ListWatchError::Api(status) = error else {
        unreachable!("an API error")
    };
    WatchEvent::Error(status)
}
