//! The list request, with client-go's query parameters.
//!
//! kube's request builder leaves out `resourceVersion=0` when a `limit` is set; the
//! reflector must send both, as client-go does (the API server then serves the
//! first page from its watch cache, or paginates when the cache is disabled, and
//! the reflector learns which from the answer).

use kube::api::{ListParams, VersionMatch};

/// `GET {url}?...` for one list page.
///
/// # Errors
/// When the request cannot be built (an invalid URL).
pub(crate) fn list_request(
    url: &str,
    params: &ListParams,
) -> Result<http::Request<Vec<u8>>, http::Error> {
    let mut qp = form_urlencoded::Serializer::for_suffix(format!("{url}?"), url.len() + 1);
    if let Some(fields) = &params.field_selector {
        qp.append_pair("fieldSelector", fields);
    }
    if let Some(labels) = &params.label_selector {
        qp.append_pair("labelSelector", labels);
    }
    if let Some(limit) = params.limit {
        qp.append_pair("limit", &limit.to_string());
    }
    if let Some(token) = &params.continue_token {
        // A continuation carries the snapshot in its token; the server rejects a
        // resourceVersion next to it.
        qp.append_pair("continue", token);
    } else if let Some(rv) = &params.resource_version {
        qp.append_pair("resourceVersion", rv);
        match params.version_match {
            Some(VersionMatch::NotOlderThan) => {
                qp.append_pair("resourceVersionMatch", "NotOlderThan");
            }
            Some(VersionMatch::Exact) => {
                qp.append_pair("resourceVersionMatch", "Exact");
            }
            None => {}
        }
    }
    http::Request::get(qp.finish()).body(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(p: &ListParams) -> String {
        list_request("/api/v1/pods", p)
            .unwrap()
            .uri()
            .query()
            .unwrap_or_default()
            .to_owned()
    }

    #[test]
    fn first_list_sends_resource_version_zero_with_a_limit() {
        let p = ListParams {
            limit: Some(500),
            resource_version: Some("0".into()),
            ..ListParams::default()
        };
        assert_eq!(query(&p), "limit=500&resourceVersion=0");
    }

    #[test]
    fn continuation_drops_resource_version_and_selectors_are_kept() {
        let p = ListParams {
            limit: Some(4),
            continue_token: Some("C1".into()),
            resource_version: Some("10".into()),
            label_selector: Some("app=web".into()),
            ..ListParams::default()
        };
        assert_eq!(query(&p), "labelSelector=app%3Dweb&limit=4&continue=C1");
    }

    #[test]
    fn exact_match_is_sent() {
        let p = ListParams {
            resource_version: Some("7".into()),
            version_match: Some(VersionMatch::Exact),
            ..ListParams::default()
        };
        assert_eq!(query(&p), "resourceVersion=7&resourceVersionMatch=Exact");
    }
}
