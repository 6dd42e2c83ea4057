//! `kind: Status` error responses, shaped like the real kube-apiserver's.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// An HTTP error, rendered as a `kind: Status` JSON object (or plain text when `plain`).
/// Boxed so `Result<_, ApiError>` stays small.
#[derive(Debug, Clone)]
pub(crate) struct ApiError(Box<ApiErrorData>);

/// The parts of an [`ApiError`].
#[derive(Debug, Clone)]
pub(crate) struct ApiErrorData {
    /// HTTP status code, also written to `code`.
    pub code: u16,
    /// `reason` (`NotFound`, `Conflict`, `Expired`, ...); empty for the real server's
    /// `StatusReasonUnknown`, which the JSON then omits.
    pub reason: std::borrow::Cow<'static, str>,
    /// Human-readable `message`.
    pub message: String,
    /// `details`, when the real server sets them.
    pub details: Option<Value>,
    /// `Retry-After` header, in seconds.
    pub retry_after: Option<u64>,
    /// `metadata` of the Status (the real server puts a fresh `continue` token here on 410).
    pub metadata: Option<Value>,
    /// Send `message` as a `text/plain` body instead of JSON (the real server's 429 from its
    /// max-in-flight filter does this).
    pub plain: bool,
}

impl std::ops::Deref for ApiError {
    type Target = ApiErrorData;

    fn deref(&self) -> &ApiErrorData {
        &self.0
    }
}

impl std::ops::DerefMut for ApiError {
    fn deref_mut(&mut self) -> &mut ApiErrorData {
        &mut self.0
    }
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self(Box::new(ApiErrorData {
            code,
            reason: std::borrow::Cow::Borrowed(reason),
            message: message.into(),
            details: None,
            retry_after: None,
            metadata: None,
            plain: false,
        }))
    }

    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub(crate) fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    pub(crate) fn not_found(plural: &str, group: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(plural, group)),
        )
        .with_details(status_details(name, group, plural))
    }

    pub(crate) fn already_exists(plural: &str, group: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(plural, group)),
        )
        .with_details(status_details(name, group, plural))
    }

    pub(crate) fn conflict(plural: &str, group: &str, name: &str) -> Self {
        Self::conflict_because(
            plural,
            group,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// The real `NewConflict`: `Operation cannot be fulfilled on {resource}[.{group}]
    /// "{name}": {why}`, with `details.kind` set to `resource`. Callers pass a plural
    /// resource or, where the real server does (delete preconditions), the Kind.
    pub(crate) fn conflict_because(resource: &str, group: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(resource, group)
            ),
        )
        .with_details(status_details(name, group, resource))
    }

    pub(crate) fn invalid(
        kind: &str,
        group: &str,
        name: &str,
        field: &str,
        cause_type: &str,
        detail: &str,
    ) -> Self {
        Self::new(
            422,
            "Invalid",
            format!(
                "{kind}{} \"{name}\" is invalid: {field}: {detail}",
                group_suffix(group)
            ),
        )
        .with_details({
            let mut details = status_details(name, group, kind);
            details["causes"] = json!([{"reason": cause_type, "message": detail, "field": field}]);
            details
        })
    }

    /// The real `NewInvalid` for several field errors: `{Kind}[.{group}] "{name}" is
    /// invalid: {error}` for one, `... is invalid: [{error}, {error}]` for more, each also a
    /// `details.causes` entry.
    pub(crate) fn invalid_fields(
        kind: &str,
        group: &str,
        name: &str,
        errors: &[crate::schema_validation::FieldError],
    ) -> Self {
        let rendered: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect();
        let joined = match rendered.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.reason, "message": e.message, "field": e.field}))
            .collect();
        let mut details = status_details(name, group, kind);
        details["causes"] = Value::Array(causes);
        Self::new(
            422,
            "Invalid",
            format!(
                "{kind}{} \"{name}\" is invalid: {joined}",
                group_suffix(group)
            ),
        )
        .with_details(details)
    }

    pub(crate) fn invalid_list_options(field: &str, detail: &str, cause_reason: &str) -> Self {
        Self::new(
            422,
            "Invalid",
            format!("ListOptions.meta.k8s.io \"\" is invalid: {field}: {detail}"),
        )
        .with_details(json!({
            "group": "meta.k8s.io",
            "kind": "ListOptions",
            "causes": [{"reason": cause_reason, "message": detail, "field": field}],
        }))
    }

    pub(crate) fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub(crate) fn too_large_rv(requested: u64, current: u64) -> Self {
        let mut e = Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        }));
        e.retry_after = Some(1);
        e
    }

    /// The authorizer's 403 for `verb` on `plural` in `group` (`name` for a named
    /// request; `namespace` or the cluster scope), as the real `Forbidden` Status reads.
    pub(crate) fn forbidden(
        verb: &str,
        plural: &str,
        group: &str,
        name: Option<&str>,
        namespace: Option<&str>,
    ) -> Self {
        let scope = match namespace {
            Some(ns) => format!("in the namespace {}", go_quote(ns)),
            None => "at the cluster scope".to_owned(),
        };
        let named = name
            .map(|n| format!(" {}", go_quote(n)))
            .unwrap_or_default();
        Self::new(
            403,
            "Forbidden",
            format!(
                "{}{named} is forbidden: User \"system:anonymous\" cannot {verb} resource {} in API group {} {scope}",
                qualified(plural, group),
                go_quote(plural),
                go_quote(group),
            ),
        )
        .with_details(status_details(name.unwrap_or_default(), group, plural))
    }

    pub(crate) fn internal(message: &str) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(json!({"causes": [{"message": message}]}))
    }

    /// An error the real server does not map to a `Status` (the storage layer's plain Go
    /// errors): code 500, the bare message, no `reason`, no `details`.
    pub(crate) fn unknown(message: impl Into<String>) -> Self {
        Self::new(500, "", message)
    }

    pub(crate) fn method_not_allowed(method: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )
        .with_details(json!({}))
    }

    /// The real `NewUnsupportedMediaTypeError`: 415 listing the media types this request
    /// accepts, no `details`.
    pub(crate) fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// The Status object as JSON.
    pub(crate) fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": self.metadata.clone().unwrap_or_else(|| json!({})),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(map) = status.as_object_mut() {
            if self.reason.is_empty() {
                map.remove("reason");
            }
            if let Some(details) = &self.details {
                map.insert("details".to_owned(), details.clone());
            }
        }
        status
    }

    pub(crate) fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let (content_type, body) = if self.plain {
            (
                "text/plain; charset=utf-8",
                format!("{}\n", self.message).into_bytes(),
            )
        } else {
            (
                "application/json",
                serde_json::to_vec(&self.to_status()).unwrap_or_default(),
            )
        };
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = code;
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// `StatusDetails` for one object: `name`, `group` and `kind`, each omitted when empty
/// (the real type's `omitempty`).
pub(crate) fn status_details(name: &str, group: &str, kind: &str) -> Value {
    let mut details = serde_json::Map::new();
    for (key, value) in [("name", name), ("group", group), ("kind", kind)] {
        if !value.is_empty() {
            details.insert(key.to_owned(), json!(value));
        }
    }
    Value::Object(details)
}

/// A string quoted as Go's `%q` / `strconv.Quote` does (for the messages the real server
/// builds with it): printable characters as they are, `\"` and `\\` escaped, the usual
/// single-letter escapes, other control characters as `\xNN` or `\uNNNN`.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn qualified(plural: &str, group: &str) -> String {
    if group.is_empty() {
        plural.to_owned()
    } else {
        format!("{plural}.{group}")
    }
}

fn group_suffix(group: &str) -> String {
    if group.is_empty() {
        String::new()
    } else {
        format!(".{group}")
    }
}
