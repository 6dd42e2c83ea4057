//! An embedded Kubernetes API server over real HTTP/1.1 on 127.0.0.1, for tests, examples
//! and benchmarks of `reflector`.
//!
//! Clients reach it with a plain `kube::Client` ([`ApiServer::client`]), so tests exercise
//! the real client stack. State lives in memory; faults are injected on demand
//! ([`ApiServer::faults`]).
//!
//! ```
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, ListParams};
//! use reflector_testkit::{ApiServer, bench_objects};
//!
//! let server = ApiServer::start().await?;
//! server.insert_many(&bench_objects::config_maps(25))?;
//! let api: Api<ConfigMap> = Api::namespaced(server.client(), bench_objects::NAMESPACE);
//! let page = api.list(&ListParams::default().limit(10)).await?;
//! assert_eq!(page.items.len(), 10);
//! assert_eq!(page.metadata.remaining_item_count, Some(15));
//! # Ok(()) }
//! ```
//!
//! # What it serves
//!
//! * Paths `/api/v1/{resource}`, `/api/v1/namespaces/{ns}/{resource}[/{name}[/status]]` and
//!   the same under `/apis/{group}/{version}`; discovery at `/api`, `/apis`, `/api/v1`,
//!   `/apis/{group}/{version}` and `/version`, listing each resource's verbs and, as the
//!   real server, its `shortNames` and `categories` (built-ins: the real ones, e.g. `po`
//!   and `all` for Pods; CRDs: from their `names`). Anything else is a 404 `Status`.
//! * Resources: Namespace, Node, Pod (with `status` subresources), ConfigMap, Secret,
//!   Lease, and Events as core `v1` and as `events.k8s.io/v1` (short name `ev` for both,
//!   as the real discovery; one storage, as the real server: an Event written through
//!   either group is stored once, at one resourceVersion, and read, listed and watched
//!   through both, its fields converted — `involvedObject` ↔ `regarding`, `message` ↔
//!   `note`, `reportingComponent` ↔ `reportingController`, ...) by default; [`ApiServer::register`] adds a CRD type (scope and status
//!   subresource from `K::crd()`), [`ApiServer::register_resource`] any k8s-openapi type.
//! * Every error is a `kind: Status` JSON object with `status: Failure`, `message`,
//!   `reason`, `code` and `details` where the real server sets them.
//! * One global resourceVersion counter (like etcd's revision), bumped on every write.
//!   Objects get `uid` and `creationTimestamp`; kinds whose real strategy tracks it (CRDs,
//!   Pods, workloads; not ConfigMaps, Secrets, Leases, Namespaces or Nodes, see
//!   [`ResourceInfo::generation`]) also `metadata.generation` (1 on create, bumped only
//!   when something outside `metadata` and `status` changes, and when deletion starts).
//!   A new Pod gets `status: {phase: Pending, qosClass}` as from the real Pod strategy.
//!   A write that changes nothing is a no-op (no new resourceVersion, no event), as in
//!   the real server.
//! * Verbs: get, list, watch, create (409 `AlreadyExists`; `generateName` supported;
//!   `resourceVersion` set: 500 with the storage layer's bare message and no `reason`, as the
//!   real server), replace (409 `Conflict` on a stale `resourceVersion`; unset means
//!   unconditional), delete (preconditions honoured, a failed one is a 409 naming the Kind
//!   as the real `BeforeDelete`; with finalizers it sets `deletionTimestamp`, answers with
//!   the object, and the object stays until an update empties `finalizers`; without, the
//!   object goes at once and the answer is a success `Status` whose `details` carry name,
//!   group, plural resource as `kind`, and uid — except core Pods, PodTemplates, Namespaces
//!   and Services, whose real storage answers with the deleted object; see
//!   [`ResourceInfo::delete_returns_object`]), deletecollection (answering the list of
//!   the matching objects as they were before, as the real registry), and the
//!   `status` subresource (get/replace/patch) for resources that have one: main-resource
//!   writes keep the stored `status`, status writes keep everything but `status` (and
//!   `managedFields`). Creating an object of such a resource drops its `status`.
//! * Core ConfigMaps and Secrets hold at most 1 MiB of data (the real `MaxSecretSize`):
//!   a create or update past it is the real 422 (`ConfigMap "x" is invalid: []: Too long:
//!   may not be more than 1048576 bytes`; a Secret's field is `data`).
//! * Namespaces need not exist before objects are created in them.
//! * Not supported: `dryRun` (answers 400 rather than silently writing), server-side apply
//!   (415), aggregated discovery (`Discovery::run_aggregated`), Table and
//!   protobuf encodings (every response is JSON), resource-specific field
//!   selectors other than the Events' and a Pod's `spec.nodeName` and `status.phase`
//!   (400; the real server accepts a few more, e.g. a Pod's `spec.schedulerName` or a
//!   Secret's `type`), Event validation (the real server requires e.g.
//!   `eventTime`, `reportingController` and `action` on an events.k8s.io/v1 Event; here
//!   any Event is stored as sent), graceful deletion (a Pod
//!   without finalizers goes at once), and namespace lifecycle (deleting a namespace does
//!   not delete its objects).
//!
//! ## Patch types
//!
//! `application/json-patch+json` (RFC 6902: `add`, `remove`, `replace`, `move`, `copy`,
//! `test`), applied all or nothing to the object's JSON as the real `jsonPatcher`. A patch
//! that does not apply (a failed `test`, a missing path, an unknown `op`) answers the real
//! 422 `Invalid` with its generic message (`the server rejected our request due to an
//! error in our request`, empty `details`: the real one drops the cause too); a body that
//! is not a JSON array answers 400 (the message is serde's, not Go's), more than 10,000
//! operations the real 413.
//! `application/merge-patch+json` (RFC 7386). `application/strategic-merge-patch+json` is
//! accepted and applied **as a JSON merge patch** (lists are replaced, not merged by key).
//! With any of them, a `metadata.resourceVersion` the patch leaves in the object is a
//! precondition (409 `Conflict` when stale), as on the real server.
//! Every other patch type (server-side apply) answers 415, listing the three accepted
//! types; a create or replace body that is not `application/json` answers 415 listing
//! `application/json`.
//!
//! ## LIST
//!
//! * Items of built-in (typed) resources carry no `kind`/`apiVersion`, only the list does;
//!   custom resources are unstructured on the real server and keep both
//!   ([`ResourceInfo::unstructured`]). Single objects and watch events always carry them.
//! * `resourceVersion` unset or `"0"`: the current state. `"N"` with
//!   `resourceVersionMatch=NotOlderThan` (or unset without `limit`): the current state;
//!   with `Exact` (or unset with `limit`, as the real server's legacy rule): the state at
//!   N, rebuilt from the event log; 410 `Expired` when N is below the compaction floor.
//!   N above the current RV: the list waits for it like the real watch cache (served as
//!   soon as a write reaches N); after [`ApiServerBuilder::too_large_resource_version_wait`]
//!   (3 s) it answers 504 `Timeout: Too large resource version: N, current: M` with cause
//!   `ResourceVersionTooLarge`, `details.retryAfterSeconds: 1` and `Retry-After: 1`.
//!   A `resourceVersion` that is not an unsigned integer is a 400 quoting Go's
//!   `strconv.ParseUint` error, as the real one.
//! * `limit` + `continue`: the token is base64 JSON of the snapshot RV and last key; every
//!   page is served from the first page's snapshot and carries its RV. A token older than
//!   the compaction floor answers 410 `Expired` with the real message and a fresh token in
//!   the Status' `metadata.continue`. `remainingItemCount` is set when there is no selector.
//!   `continue` with a `resourceVersion` other than unset/`"0"` answers 400.
//! * `resourceVersion=0` with `limit`: `limit` is ignored (one page, no `continue`), as the
//!   real server serves RV=0 from its watch cache; [`ApiServerBuilder::paginate_rv0`] makes
//!   it page, for tests of a client's pager on its first list.
//! * Label selectors (`=`, `==`, `!=`, `in`, `notin`, exists, `!`exists, `>`, `<`) are
//!   parsed with the real parser's tokens and grammar, so a malformed one answers 400 with
//!   the real text (`unable to parse requirement: found '', expected: ',' or ')'`, ...).
//!   Field selectors on `metadata.name` / `metadata.namespace` (`=`, `==`, `!=`, split and
//!   unescaped as the real parser, no trimming), and on the fields the real server
//!   selects Events by: core `v1` `involvedObject.{kind,namespace,name,uid,apiVersion,
//!   resourceVersion,fieldPath}`, `reason`, `reportingComponent`, `source` (the
//!   `source.component`, else the reporting component) and `type`; events.k8s.io/v1
//!   `regarding.*` (the same seven), `reason`, `reportingController`, `source` and
//!   `type` (`kubectl events --for pod/x` sends `regarding.name=x`); a core Pod's
//!   `spec.nodeName` and `status.phase`. An unset field
//!   selects as `""`. Another field is a 400 with the real conversion's wording (`"f" is
//!   not a known field selector: only "metadata.name", "metadata.namespace"`, or `field
//!   label not supported: f` for core Pods, Nodes, Namespaces, Secrets and both Events). Invalid list options answer 422 (`ListOptions` Invalid) like
//!   the real `ValidateListOptions`; unparsable numbers/booleans answer 400.
//!
//! ## WATCH
//!
//! `watch=true` streams newline-delimited `{"type","object"}` JSON with chunked encoding.
//! RV unset/`"0"`: synthetic `ADDED` for the current state, then live events. RV=N: events
//! after N from the event log (N above the current RV: 200, and no events, nor bookmarks,
//! until writes pass N, then the events after N, as the real watch cache); N below the
//! compaction floor: HTTP 200, one `ERROR` event
//! with a 410 `Expired` Status (`too old resource version: N (floor)`), end of stream. A
//! watcher that falls behind the bounded log gets the same. `allowWatchBookmarks=true`:
//! `BOOKMARK`s every [`ApiServerBuilder::bookmark_interval`] carrying the RV the watcher
//! has read up to, once writes have moved it past the RV the watch started at (the real
//! watch cache drops events at or below it), plus one 2 s before `timeoutSeconds` runs
//! out (the real cacher's pre-timeout bookmark). A watch from RV unset/`"0"` without
//! `sendInitialEvents` gets no `k8s.io/initial-events-end` bookmark after its synthetic
//! `ADDED`s, as the real cacher (that bookmark is only for watch-list).
//! `timeoutSeconds` ends the stream cleanly. Each event's line is encoded once, by the
//! first watcher that sends it, and shared by every watcher that sends the same bytes
//! (same representation and event type), so fan-out to many watchers costs a reference
//! count per watcher, not an encoding. `sendInitialEvents=true`
//! (requires `resourceVersionMatch=NotOlderThan`, else 422): the current state as `ADDED`,
//! then, with `allowWatchBookmarks=true`, a `BOOKMARK` annotated
//! `k8s.io/initial-events-end: "true"` (without it, no bookmark, as the real server).
//! Selectors apply to events: an object that stops matching arrives as `DELETED`, one
//! that starts matching as `ADDED`.
//!
//! # Faults
//!
//! See [`Fault`] for the variants and [`Matcher`] for targeting; [`Faults::drop_watches`]
//! and [`Faults::inject_line`] act on the watches open right now. [`ApiServer::request_log`]
//! records verb, path, query and status of every request.
//!
//! # Using it from kubectl
//!
//! Run `cargo run -p reflector-testkit -- --port 8080 --demo`, then point kubectl at it:
//!
//! ```yaml
//! apiVersion: v1
//! kind: Config
//! clusters:
//! - name: testkit
//!   cluster:
//!     server: http://127.0.0.1:8080
//! users:
//! - name: testkit
//!   user: {}
//! contexts:
//! - name: testkit
//!   context: {cluster: testkit, user: testkit, namespace: default}
//! current-context: testkit
//! ```
//!
//! (`kubectl get` asks for tables and protobuf first, then falls back to JSON; use
//! `kubectl get --raw /api/v1/namespaces/demo/configmaps` for the exact wire format.)

pub mod bench_objects;
mod continue_token;
mod discovery;
mod error;
mod event_storage;
mod fault;
mod handlers;
mod list;
mod object;
mod patch;
mod query;
mod request_log;
mod resource;
mod router;
mod selectable_fields;
mod selector;
mod server;
mod state;
mod status;
mod watch;

pub use error::TestkitError;
pub use fault::{BadLine, Fault, FaultId, Faults, Matcher};
pub use request_log::{RequestLogEntry, Verb};
pub use resource::ResourceInfo;
pub use server::{ApiServer, ApiServerBuilder};
