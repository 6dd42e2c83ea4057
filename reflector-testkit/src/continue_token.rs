//! Opaque `continue` tokens: base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>\0"}`,
//! the shape the real server's etcd3 storage uses.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::status::ApiError;

#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: u64,
    start: String,
}

/// Encodes a token continuing after `last_key` in the snapshot at `rv`.
pub(crate) fn encode(rv: u64, last_key: &str) -> String {
    let token = Token {
        v: "meta.k8s.io/v1".to_owned(),
        rv,
        start: format!("{last_key}\u{0}"),
    };
    STANDARD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// Decodes a token into (snapshot RV, last key already returned).
pub(crate) fn decode(token: &str) -> Result<(u64, String), ApiError> {
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
    let start = token
        .start
        .strip_suffix('\u{0}')
        .map(str::to_owned)
        .unwrap_or(token.start);
    Ok((token.rv, start))
}
