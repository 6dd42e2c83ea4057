//! The request log: one entry per HTTP request the server answered.

use crate::fault::FaultId;

/// What kind of request this was, as the real server's audit log names verbs. In JSON (the
/// `--admin` API) it is the lower-case verb: `"list"`, `"watch"`, `"deletecollection"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Verb {
    /// GET of one object (or its status).
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
    /// Discovery and other non-resource requests.
    Other,
}

/// One answered request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLogEntry {
    /// The verb.
    pub verb: Verb,
    /// HTTP method (`GET`, `POST`, ...).
    pub method: String,
    /// Request path without the query.
    pub path: String,
    /// The resource plural, when the path named one.
    pub resource: Option<String>,
    /// The subresource (`status`), when the path named one.
    pub subresource: Option<String>,
    /// Decoded query parameters in request order (empty pairs dropped).
    pub query: Vec<(String, String)>,
    /// HTTP status code sent (200 for watches, whose errors arrive as events).
    pub status: u16,
    /// The fault that shaped this response, if any.
    pub fault: Option<FaultId>,
    /// The request's `User-Agent` header (`""` without one): whose request it was,
    /// when each client has its own
    /// ([`ApiServer::client_with_user_agent`](crate::ApiServer::client_with_user_agent)).
    pub user_agent: String,
}

impl RequestLogEntry {
    /// The value of a query parameter, if present.
    #[must_use]
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}
