//! Opaque `continue` tokens: base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\0"}`,
//! the shape the real server's etcd3 storage uses, plus an optional `"left"`: how many
//! items of an unfiltered list remain after `start` in that snapshot, so that each page's
//! `remainingItemCount` costs the page, not a count of the rest of the collection.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::status::ApiError;

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: u64,
    start: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    left: Option<u64>,
}

/// A decoded continue token.
#[derive(Debug)]
pub(crate) struct Continue {
    /// The snapshot resourceVersion the list is read at.
    pub rv: u64,
    /// The last key already returned.
    pub after: String,
    /// For an unfiltered list: how many items remain after `after` at `rv`.
    pub left: Option<u64>,
}

/// Encodes a token continuing after `last_key` in the snapshot at `rv`, with `left`
/// items remaining after it when the list is unfiltered.
pub(crate) fn encode(rv: u64, last_key: &str, left: Option<u64>) -> String {
    let token = Token {
        v: "meta.k8s.io/v1".to_owned(),
        rv,
        start: format!("{last_key}\u{0}"),
        left,
    };
    STANDARD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// Decodes a token.
pub(crate) fn decode(token: &str) -> Result<Continue, ApiError> {
    let invalid = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let bytes = STANDARD
        .decode(token)
        .map_err(|_| invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let token: Token = serde_json::from_slice(&bytes)
        .map_err(|_| invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    if token.v != "meta.k8s.io/v1" {
        return Err(invalid("server does not recognize this encoded version"));
    }
    if token.rv == 0 {
        return Err(invalid(
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    let after = token
        .start
        .strip_suffix('\u{0}')
        .map(str::to_owned)
        .unwrap_or(token.start);
    Ok(Continue {
        rv: token.rv,
        after,
        left: token.left,
    })
}
