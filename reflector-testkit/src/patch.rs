//! Patch bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge
//! patch (see `strategic_merge`).

use serde_json::{Value, json};

use crate::status::ApiError;

/// `application/json-patch+json`.
pub(crate) const JSON_PATCH: &str = "application/json-patch+json";
/// `application/merge-patch+json`.
pub(crate) const MERGE_PATCH: &str = "application/merge-patch+json";
/// `application/strategic-merge-patch+json` (built-in kinds only).
pub(crate) const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
/// The patch types this server applies, in the order the real server lists them
/// (server-side apply is decoded by `apply.rs`).
pub(crate) const PATCH_TYPES: [&str; 4] = [
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    crate::apply::APPLY_PATCH,
];

/// The real server's bound on a JSON patch's operations (`maxJSONPatchOperations`).
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// A decoded patch body.
#[derive(Debug)]
pub(crate) enum Patch {
    /// RFC 6902 operations, still as JSON: like the real server (which decodes each
    /// operation only when applying it), an operation that is not a valid one fails the
    /// apply (422), not the decode (400).
    Json(Vec<Value>),
    /// An RFC 7386 merge patch (always a JSON object).
    Merge(Value),
    /// A strategic merge patch (always a JSON object).
    Strategic(Value),
}

impl Patch {
    /// Decodes a patch body of media type `media` (one of [`PATCH_TYPES`] but apply;
    /// anything else answers 415 listing them).
    pub(crate) fn decode(media: &str, body: &[u8]) -> Result<Self, ApiError> {
        match media {
            JSON_PATCH => {
                let operations: Vec<Value> = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                if operations.len() > MAX_JSON_PATCH_OPERATIONS {
                    return Err(ApiError::new(
                        413,
                        "RequestEntityTooLarge",
                        format!(
                            "Request entity too large: The allowed maximum operations in a JSON \
                             patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                            operations.len()
                        ),
                    ));
                }
                Ok(Self::Json(operations))
            }
            MERGE_PATCH | STRATEGIC_MERGE_PATCH => {
                let patch: Value = serde_json::from_slice(body)
                    .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
                if !patch.is_object() {
                    return Err(ApiError::bad_request(
                        "error decoding patch: the patch must be a JSON object",
                    ));
                }
                Ok(if media == MERGE_PATCH {
                    Self::Merge(patch)
                } else {
                    Self::Strategic(patch)
                })
            }
            _ => Err(ApiError::unsupported_media_type(&PATCH_TYPES)),
        }
    }

    /// Applies the patch to `target`. A JSON patch that does not apply (a failed `test`,
    /// a missing path, an unknown `op`) answers as the real `jsonPatcher`:
    /// `NewGenericServerResponse(422, ...)`, whose message does not carry the cause.
    pub(crate) fn apply(
        self,
        kind: crate::strategic_merge::Kind<'_>,
        target: &mut Value,
    ) -> Result<(), ApiError> {
        match self {
            Self::Merge(patch) => {
                merge_patch(target, &patch);
                Ok(())
            }
            Self::Strategic(patch) => crate::strategic_merge::apply(kind, target, &patch),
            Self::Json(operations) => {
                let rejected = || {
                    ApiError::new(
                        422,
                        "Invalid",
                        "the server rejected our request due to an error in our request",
                    )
                    .with_details(json!({}))
                };
                let patch: json_patch::Patch =
                    serde_json::from_value(Value::Array(operations)).map_err(|_| rejected())?;
                json_patch::patch(target, &patch).map_err(|_| rejected())
            }
        }
    }
}

/// Applies `patch` to `target` following RFC 7386: objects merge recursively, `null`
/// removes a key, anything else (arrays included) replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(target_map) = target {
        for (key, value) in patch_map {
            if value.is_null() {
                target_map.remove(key);
            } else {
                merge_patch(target_map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::merge_patch;
    use serde_json::json;

    #[test]
    fn rfc7386_examples() {
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (
                json!({"a":"b","b":"c"}),
                json!({"a":null}),
                json!({"b":"c"}),
            ),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"a":"foo"}), json!(null), json!(null)),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (
                json!({}),
                json!({"a":{"bb":{"ccc":null}}}),
                json!({"a":{"bb":{}}}),
            ),
        ];
        for (mut target, patch, expected) in cases {
            merge_patch(&mut target, &patch);
            assert_eq!(target, expected, "patch {patch}");
        }
    }
}
