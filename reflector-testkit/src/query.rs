//! Query-string parsing and the typed list/watch options the handlers use.

use std::time::Duration;

use crate::field_selector::FieldSelector;
use crate::label_selector::LabelSelector;
use crate::selectable_fields::FieldLabels;
use crate::state::ObjectFilter;
use crate::status::{ApiError, go_quote};

/// Decodes a query string into pairs (percent-decoding, `+` as space, empty pairs dropped).
pub(crate) fn parse_pairs(query: Option<&str>) -> Vec<(String, String)> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The last value of a parameter (the real server takes the first; duplicates are rare).
pub(crate) fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

pub(crate) fn parse_bool(pairs: &[(String, String)], name: &str) -> Result<Option<bool>, ApiError> {
    match param(pairs, name) {
        None => Ok(None),
        Some("" | "true" | "1" | "True" | "TRUE" | "t" | "T") => Ok(Some(true)),
        Some("false" | "0" | "False" | "FALSE" | "f" | "F") => Ok(Some(false)),
        Some(other) => Err(ApiError::bad_request(format!(
            "invalid value for {name}: strconv.ParseBool: parsing {other:?}: invalid syntax"
        ))),
    }
}

fn parse_int(pairs: &[(String, String)], name: &str) -> Result<Option<i64>, ApiError> {
    param(pairs, name)
        .filter(|v| !v.is_empty())
        .map(|v| {
            v.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value for {name}: strconv.ParseInt: parsing {v:?}: invalid syntax"
                ))
            })
        })
        .transpose()
}

/// Parses a non-empty, non-`"0"` resourceVersion like the real storage versioner (Go's
/// `strconv.ParseUint`), answering its 400 `invalid resource version: ...` otherwise.
fn parse_resource_version(raw: &str) -> Result<u64, ApiError> {
    let why = if raw.bytes().all(|b| b.is_ascii_digit()) {
        match raw.parse() {
            Ok(n) => return Ok(n),
            Err(_) => "value out of range",
        }
    } else {
        "invalid syntax"
    };
    let quoted = go_quote(raw);
    Err(ApiError::bad_request(format!(
        "invalid resource version: resourceVersion: Invalid value: {quoted}: strconv.ParseUint: parsing {quoted}: {why}"
    )))
}

/// `resourceVersion` of a list or watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rv {
    /// Unset: most recent.
    Unset,
    /// `"0"`: any.
    Any,
    /// A specific revision.
    At(u64),
}

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RvMatch {
    Unset,
    NotOlderThan,
    Exact,
}

/// Options shared by list and watch requests.
#[derive(Debug, Clone)]
pub(crate) struct ListOptions {
    pub watch: bool,
    pub rv: Rv,
    pub rv_match: RvMatch,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub filter: ObjectFilter,
    pub timeout: Option<Duration>,
    pub allow_bookmarks: bool,
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Parses and validates list/watch options like the real server's `ValidateListOptions`.
    /// `field_labels` says how the resource checks field-selector labels.
    pub(crate) fn parse(
        pairs: &[(String, String)],
        field_labels: FieldLabels,
    ) -> Result<Self, ApiError> {
        let watch = parse_bool(pairs, "watch")?.unwrap_or(false);
        let rv_raw = param(pairs, "resourceVersion").unwrap_or_default();
        let rv = match rv_raw {
            "" => Rv::Unset,
            "0" => Rv::Any,
            n => Rv::At(parse_resource_version(n)?),
        };
        let rv_match = match param(pairs, "resourceVersionMatch").unwrap_or_default() {
            "" => RvMatch::Unset,
            "NotOlderThan" => RvMatch::NotOlderThan,
            "Exact" => RvMatch::Exact,
            other => {
                return Err(ApiError::invalid_list_options(
                    "resourceVersionMatch",
                    &format!(
                        "Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
                    ),
                    "FieldValueNotSupported",
                ));
            }
        };
        let limit = parse_int(pairs, "limit")?
            .map(|l| usize::try_from(l).unwrap_or(0))
            .filter(|l| *l > 0);
        let continue_token = param(pairs, "continue")
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        let timeout = parse_int(pairs, "timeoutSeconds")?
            .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
            .filter(|t| !t.is_zero());
        let allow_bookmarks = parse_bool(pairs, "allowWatchBookmarks")?.unwrap_or(false);
        let send_initial_events = parse_bool(pairs, "sendInitialEvents")?;
        let labels = LabelSelector::parse(param(pairs, "labelSelector").unwrap_or_default())?;
        let fields = FieldSelector::parse(
            param(pairs, "fieldSelector").unwrap_or_default(),
            field_labels,
        )?;

        if rv_match != RvMatch::Unset {
            if rv == Rv::Unset && send_initial_events != Some(true) {
                return Err(ApiError::invalid_list_options(
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                    "FieldValueForbidden",
                ));
            }
            if continue_token.is_some() {
                return Err(ApiError::invalid_list_options(
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden when continue is provided",
                    "FieldValueForbidden",
                ));
            }
            if rv_match == RvMatch::Exact && rv == Rv::Any {
                return Err(ApiError::invalid_list_options(
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    "FieldValueForbidden",
                ));
            }
        }
        if send_initial_events.is_some() {
            if !watch {
                return Err(ApiError::invalid_list_options(
                    "sendInitialEvents",
                    "Forbidden: sendInitialEvents is forbidden for list",
                    "FieldValueForbidden",
                ));
            }
            if rv_match != RvMatch::NotOlderThan {
                return Err(ApiError::invalid_list_options(
                    "resourceVersionMatch",
                    "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    "FieldValueForbidden",
                ));
            }
        } else if watch && rv_match != RvMatch::Unset {
            return Err(ApiError::invalid_list_options(
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                "FieldValueForbidden",
            ));
        }
        Ok(Self {
            watch,
            rv,
            rv_match,
            limit,
            continue_token,
            filter: ObjectFilter { labels, fields },
            timeout,
            allow_bookmarks,
            send_initial_events,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_pairs;

    #[test]
    fn decodes_percent_and_plus() {
        let pairs = parse_pairs(Some(
            "&labelSelector=app%3Dweb%2Ctier+in+%28a%29&watch&x=%zz",
        ));
        assert_eq!(
            pairs,
            vec![
                ("labelSelector".to_owned(), "app=web,tier in (a)".to_owned()),
                ("watch".to_owned(), String::new()),
                ("x".to_owned(), "%zz".to_owned()),
            ]
        );
    }
}
