//! Answers in YAML, for clients whose `Accept` asks for `application/yaml` first: the JSON
//! answer (object, list, Table or error `Status`) re-encoded as YAML, as the real server's
//! YAML serializer writes the same fields.

use axum::response::Response;
use serde_json::Value;

/// `application/yaml`.
pub(crate) const YAML: &str = "application/yaml";

/// `response` (a JSON answer) re-encoded as YAML; any other answer as it is.
///
/// # Cancel safety
/// Cancel safe: dropping it drops the answer.
pub(crate) async fn into_yaml(response: Response) -> Response {
    let is_json = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|t| t.as_bytes().starts_with(b"application/json"));
    if !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return crate::status::ApiError::internal("reading the answer").into_response();
    };
    let yaml = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|value| serde_norway::to_string(&value).ok());
    let Some(yaml) = yaml else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(YAML),
    );
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(yaml))
}
