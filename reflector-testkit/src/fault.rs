//! Fault injection: make chosen requests fail, stall or misbehave, deterministically.
//!
//! A fault is a [`Fault`] plus a [`Matcher`] saying which requests it targets. Matching
//! happens when a request arrives, so a fault is consumed only by the request it targets
//! (a watch that is already streaming never consumes a fault meant for a later request).
//! Each fault counts its hits ([`Faults::hits`]).
//!
//! Two actions act immediately on the watches that are open right now:
//! [`Faults::drop_watches`] and [`Faults::inject_line`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::request_log::Verb;
use crate::server::Shared;

/// Identifies an injected fault (for [`Faults::hits`] and [`Faults::remove`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FaultId(pub(crate) u64);

/// A line that is not a valid watch event, written into a watch stream. In JSON: its name
/// (`"Malformed"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum BadLine {
    /// A line that is not JSON at all.
    Malformed,
    /// The first half of a real-looking event line, then a newline.
    Truncated,
    /// A well-formed JSON object that is not a watch event (`{"kind":"Unexpected"}`).
    NonEvent,
}

impl BadLine {
    pub(crate) fn bytes(self) -> &'static [u8] {
        match self {
            Self::Malformed => b"this is not json\n",
            Self::Truncated => {
                b"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVer\n"
            }
            Self::NonEvent => b"{\"kind\":\"Unexpected\",\"apiVersion\":\"v1\",\"value\":42}\n",
        }
    }
}

/// What happens to a matched request.
///
/// In JSON (the binary's `--admin` API) a fault is serde's external tagging of this enum:
/// a unit variant is its name (`"InternalError"`), the others an object with one key
/// (`{"TooManyRequests": {"retry_after_secs": 1, "plain_text": false}}`,
/// `{"AbortWatch": {"after_events": 2}}`), durations in milliseconds
/// (`{"LatencyBeforeHeaders": 1500}`).
///
/// ```
/// use reflector_testkit::Fault;
/// let fault: Fault = serde_json::from_str(r#"{"LatencyBeforeHeaders": 250}"#).unwrap();
/// assert_eq!(fault, Fault::LatencyBeforeHeaders(std::time::Duration::from_millis(250)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Fault {
    /// Answer `410 Gone` (Status reason `Expired`) instead of serving the request.
    Gone,
    /// Watch only: answer 200, send one `ERROR` event carrying a 410 `Expired` Status
    /// (`too old resource version`), then end the stream, as the real watch cache does.
    WatchGone,
    /// List continue pages only (requests with a `continue` parameter): answer 410
    /// `Expired` with the real server's "continue parameter is too old" message.
    ContinueExpired,
    /// Answer 429 with a `Retry-After` header. `plain_text` sends the max-in-flight
    /// filter's `text/plain` body ("Too many requests, please try again later."), otherwise
    /// a JSON Status with reason `TooManyRequests` and `details.retryAfterSeconds`.
    TooManyRequests {
        /// Seconds for `Retry-After`.
        retry_after_secs: u64,
        /// Plain-text body instead of a Status.
        plain_text: bool,
    },
    /// Answer 500 InternalError.
    InternalError,
    /// Answer 409 `Conflict` as the real server does when a write's `resourceVersion`
    /// precondition is stale (`Operation cannot be fulfilled on configmaps "cm-0": the
    /// object has been modified; ...`): the request is not applied. For testing a
    /// writer's optimistic-concurrency retries without racing it.
    Conflict,
    /// Answer 403 Forbidden, as the real server's authorizer denies a request its RBAC
    /// does not allow: `leases.coordination.k8s.io is forbidden: User "system:anonymous"
    /// cannot watch resource "leases" in API group "coordination.k8s.io" in the
    /// namespace "le"` (the object's name before `is forbidden` for a named request).
    Forbidden,
    /// Answer 503 ServiceUnavailable.
    ServiceUnavailable,
    /// Answer 504 Timeout.
    GatewayTimeout,
    /// Wait this long before sending the response headers (then serve normally).
    LatencyBeforeHeaders(#[serde(with = "millis")] Duration),
    /// Watch only: wait this long before each event.
    LatencyBetweenEvents(#[serde(with = "millis")] Duration),
    /// Watch only: after `after_events` events, send half of the next event and cut the
    /// connection without ending the chunked body (the client sees a broken body).
    AbortWatch {
        /// Events delivered intact first.
        after_events: usize,
    },
    /// Watch only: answer 200 and then send nothing at all (no events, no bookmarks) until
    /// the client goes away, `timeoutSeconds` passes or the server stops.
    SilentWatch,
    /// Watch only: after `after_events` events, write `line` (then carry on normally).
    BadLine {
        /// Events delivered first.
        after_events: usize,
        /// What to write.
        line: BadLine,
    },
}

impl Fault {
    fn watch_only(&self) -> bool {
        matches!(
            self,
            Self::WatchGone
                | Self::LatencyBetweenEvents(_)
                | Self::AbortWatch { .. }
                | Self::SilentWatch
                | Self::BadLine { .. }
        )
    }

    /// Whether this fault decides the response itself (as opposed to shaping it).
    fn is_response(&self) -> bool {
        matches!(
            self,
            Self::Gone
                | Self::WatchGone
                | Self::ContinueExpired
                | Self::TooManyRequests { .. }
                | Self::InternalError
                | Self::Conflict
                | Self::Forbidden
                | Self::ServiceUnavailable
                | Self::GatewayTimeout
                | Self::SilentWatch
        )
    }
}

/// Which requests a fault targets. Defaults: any verb, any resource, any client, the
/// first matching request only.
///
/// In JSON every field is optional: `{"verb": "watch", "resource": "configmaps",
/// "userAgent": "replica-0", "skip": 0, "times": 1}`; `"times": null` fires on every matching request ([`Matcher::every`]).
///
/// ```
/// use reflector_testkit::{Matcher, Verb};
/// let m: Matcher = serde_json::from_str(r#"{"verb": "list", "times": null}"#).unwrap();
/// assert_eq!(m, Matcher::verb(Verb::List).every());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
#[must_use]
pub struct Matcher {
    verb: Option<Verb>,
    resource: Option<String>,
    #[serde(rename = "userAgent", skip_serializing_if = "Option::is_none")]
    user_agent: Option<String>,
    skip: usize,
    times: Option<usize>,
}

impl Default for Matcher {
    fn default() -> Self {
        Self {
            verb: None,
            resource: None,
            user_agent: None,
            skip: 0,
            times: Some(1),
        }
    }
}

impl Matcher {
    /// Any request (first match only, until changed by [`Matcher::times`]/[`Matcher::every`]).
    pub fn any() -> Self {
        Self::default()
    }

    /// Requests with this verb.
    pub fn verb(verb: Verb) -> Self {
        Self {
            verb: Some(verb),
            ..Self::default()
        }
    }

    /// Only requests for this resource plural (`"configmaps"`).
    pub fn resource(mut self, plural: impl Into<String>) -> Self {
        self.resource = Some(plural.into());
        self
    }

    /// Only requests whose `User-Agent` header starts with `prefix`: one client's
    /// requests, e.g. one replica's among several (see
    /// [`ApiServer::client_with_user_agent`](crate::ApiServer::client_with_user_agent)).
    ///
    /// ```
    /// use reflector_testkit::{Matcher, Verb};
    /// let only_replica_0 = Matcher::verb(Verb::Update).user_agent("replica-0").every();
    /// # let _ = only_replica_0;
    /// ```
    pub fn user_agent(mut self, prefix: impl Into<String>) -> Self {
        self.user_agent = Some(prefix.into());
        self
    }

    /// Only the `n`-th matching request (1-based), once.
    pub fn nth(mut self, n: usize) -> Self {
        self.skip = n.saturating_sub(1);
        self.times = Some(1);
        self
    }

    /// Let the first `n` matching requests through untouched.
    pub fn skip(mut self, n: usize) -> Self {
        self.skip = n;
        self
    }

    /// Fire on `n` matching requests (after any skipped ones).
    pub fn times(mut self, n: usize) -> Self {
        self.times = Some(n);
        self
    }

    /// Fire on every matching request (after any skipped ones).
    pub fn every(mut self) -> Self {
        self.times = None;
        self
    }
}

/// The request attributes faults match on.
pub(crate) struct RequestInfo<'a> {
    pub verb: Verb,
    pub resource: Option<&'a str>,
    pub has_continue: bool,
    /// The `User-Agent` header ("" without one).
    pub user_agent: &'a str,
}

/// The faults that fired for one request.
#[derive(Debug, Default, Clone)]
pub(crate) struct Fired {
    /// The fault deciding the response, if any.
    pub response: Option<(FaultId, Fault)>,
    /// Delay before headers.
    pub latency: Option<(FaultId, Duration)>,
    /// Watch-stream shaping faults.
    pub stream: Vec<(FaultId, Fault)>,
}

impl Fired {
    /// The first fault id involved, for the request log.
    pub(crate) fn first_id(&self) -> Option<FaultId> {
        self.response
            .as_ref()
            .map(|(id, _)| *id)
            .or(self.latency.map(|(id, _)| id))
            .or(self.stream.first().map(|(id, _)| *id))
    }
}

struct Entry {
    id: FaultId,
    matcher: Matcher,
    fault: Fault,
    /// Matching requests seen so far.
    seen: usize,
    /// Times fired.
    hits: usize,
}

/// Registered faults. Guarded by its own mutex; never held across an await.
#[derive(Default)]
pub(crate) struct FaultTable {
    /// Injected faults in registration order, and the next id. Guarded by this mutex.
    inner: Mutex<(Vec<Entry>, u64)>,
}

impl FaultTable {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<Entry>, u64)> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn add(&self, matcher: Matcher, fault: Fault) -> FaultId {
        let mut guard = self.lock();
        guard.1 += 1;
        let id = FaultId(guard.1);
        guard.0.push(Entry {
            id,
            matcher,
            fault,
            seen: 0,
            hits: 0,
        });
        id
    }

    pub(crate) fn hits(&self, id: FaultId) -> usize {
        self.lock()
            .0
            .iter()
            .find(|e| e.id == id)
            .map_or(0, |e| e.hits)
    }

    pub(crate) fn remove(&self, id: FaultId) -> bool {
        let mut guard = self.lock();
        let before = guard.0.len();
        guard.0.retain(|e| e.id != id);
        guard.0.len() != before
    }

    pub(crate) fn clear(&self) {
        self.lock().0.clear();
    }

    /// Every registered fault as `(id, matcher, fault, hits)`, in registration order.
    pub(crate) fn list(&self) -> Vec<(FaultId, Matcher, Fault, usize)> {
        self.lock()
            .0
            .iter()
            .map(|e| (e.id, e.matcher.clone(), e.fault.clone(), e.hits))
            .collect()
    }

    /// Decides which faults fire for a request that just arrived.
    pub(crate) fn on_request(&self, req: &RequestInfo<'_>) -> Fired {
        let mut fired = Fired::default();
        let mut guard = self.lock();
        for entry in &mut guard.0 {
            let m = &entry.matcher;
            if m.verb.is_some_and(|v| v != req.verb)
                || m.resource
                    .as_deref()
                    .is_some_and(|r| Some(r) != req.resource)
                || m.user_agent
                    .as_deref()
                    .is_some_and(|ua| !req.user_agent.starts_with(ua))
            {
                continue;
            }
            if entry.fault.watch_only() && req.verb != Verb::Watch {
                continue;
            }
            if matches!(entry.fault, Fault::ContinueExpired)
                && !(req.verb == Verb::List && req.has_continue)
            {
                continue;
            }
            if entry.fault.is_response() && fired.response.is_some() {
                continue;
            }
            let index = entry.seen;
            entry.seen += 1;
            if index < m.skip || m.times.is_some_and(|t| entry.hits >= t) {
                continue;
            }
            entry.hits += 1;
            match &entry.fault {
                Fault::LatencyBeforeHeaders(d) => {
                    let total = fired.latency.map_or(*d, |(_, prev)| prev + *d);
                    fired.latency = Some((fired.latency.map_or(entry.id, |(id, _)| id), total));
                }
                f if f.is_response() => fired.response = Some((entry.id, f.clone())),
                f => fired.stream.push((entry.id, f.clone())),
            }
        }
        fired
    }
}

/// Handle for injecting faults into a running server (from [`crate::ApiServer::faults`]).
#[derive(Clone)]
pub struct Faults {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults").finish_non_exhaustive()
    }
}

impl Faults {
    /// Registers `fault` for requests matching `matcher`.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use reflector_testkit::{ApiServer, Fault, Matcher, Verb};
    /// let server = ApiServer::start().await?;
    /// let id = server.faults().inject(Matcher::verb(Verb::List).resource("configmaps"), Fault::InternalError);
    /// assert_eq!(server.faults().hits(id), 0);
    /// # Ok(()) }
    /// ```
    pub fn inject(&self, matcher: Matcher, fault: Fault) -> FaultId {
        self.shared.faults.add(matcher, fault)
    }

    /// How many requests the fault has fired on.
    #[must_use]
    pub fn hits(&self, id: FaultId) -> usize {
        self.shared.faults.hits(id)
    }

    /// Removes a fault; returns whether it was registered.
    pub fn remove(&self, id: FaultId) -> bool {
        self.shared.faults.remove(id)
    }

    /// Removes every fault.
    pub fn clear(&self) {
        self.shared.faults.clear();
    }

    /// Ends every open watch stream cleanly (final chunk sent), now. Returns how many
    /// watches were open.
    pub fn drop_watches(&self) -> usize {
        self.shared
            .watch_control
            .send(WatchControl::Drop)
            .unwrap_or(0)
    }

    /// Writes `line` into every open watch stream, now. Returns how many watches were open.
    pub fn inject_line(&self, line: BadLine) -> usize {
        self.shared
            .watch_control
            .send(WatchControl::Line(line))
            .unwrap_or(0)
    }
}

/// Serde for durations as whole milliseconds (the `--admin` API's JSON).
mod millis {
    use std::time::Duration;

    pub(super) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Duration, D::Error> {
        <u64 as serde::Deserialize>::deserialize(d).map(Duration::from_millis)
    }
}

/// An immediate action broadcast to open watches.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WatchControl {
    Drop,
    Line(BadLine),
}
