//! Reading a request's body, within the real server's size limit, with the headers a
//! write needs.

use axum::extract::Request;
use http::header;

use crate::status::ApiError;

/// A request body, its `Content-Type` and the request's `User-Agent` (the field manager
/// of a write without `fieldManager`).
pub(crate) struct RequestBody {
    pub bytes: bytes::Bytes,
    pub content_type: String,
    pub user_agent: String,
}

impl RequestBody {
    /// The media type of `Content-Type`, without parameters (`application/json`).
    pub(crate) fn media_type(&self) -> &str {
        self.content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
    }
}

/// A header's text (empty when absent or not text).
pub(crate) fn header_text(headers: &http::HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Largest request body accepted (the real server's limit is 3 MiB for most bodies).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Bytes drained from an oversized body before giving up on it.
const DRAIN_CAP: usize = 64 * 1024 * 1024;

/// Reads the body (up to [`MAX_BODY`]) and the `Content-Type`.
///
/// # Cancel safety
/// Cancel safe: dropping it only drops the partially read body.
pub(super) async fn read_body(request: Request) -> Result<RequestBody, ApiError> {
    let content_type = header_text(request.headers(), header::CONTENT_TYPE).to_owned();
    let user_agent = header_text(request.headers(), header::USER_AGENT).to_owned();
    // Read up to the limit; past it, keep draining (up to a hard cap) so the client gets
    // the 413 instead of a connection reset while it is still sending.
    let mut stream = request.into_body().into_data_stream();
    let mut body = bytes::BytesMut::new();
    let mut total = 0usize;
    while let Some(chunk) = futures::StreamExt::next(&mut stream).await {
        let chunk =
            chunk.map_err(|e| ApiError::bad_request(format!("error reading request body: {e}")))?;
        total += chunk.len();
        if total <= MAX_BODY {
            body.extend_from_slice(&chunk);
        } else if total > DRAIN_CAP {
            break;
        }
    }
    if total > MAX_BODY {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {MAX_BODY}"),
        ));
    }
    let body = body.freeze();
    Ok(RequestBody {
        bytes: body,
        content_type,
        user_agent,
    })
}
