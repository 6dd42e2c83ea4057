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
//! The guide below tests a controller with it; the sections after it say what the server
//! serves and how it answers, as the real API server does.
//!
#![doc = include_str!("../docs/testing-your-controller.md")]
//!
//! # What it serves
//!
//! * Paths `/api/v1/{resource}`, `/api/v1/namespaces/{ns}/{resource}[/{name}[/status]]` and
//!   the same under `/apis/{group}/{version}`; discovery at `/api`, `/apis`, `/api/v1`,
//!   `/apis/{group}` (an `APIGroup` for every served group, built-in or CRD),
//!   `/apis/{group}/{version}` and `/version`, listing each resource's verbs and, as the
//!   real server, its `shortNames` and `categories` (built-ins: the real ones, e.g. `po`
//!   and `all` for Pods; CRDs: from their `names`). Anything else is a 404 `Status`.
//! * Resources: Namespace, Node, Pod (with `status` subresources), ConfigMap, Secret,
//!   Lease, CustomResourceDefinition, Mutating- and ValidatingWebhookConfiguration (their
//!   webhooks are called, see [Webhooks](#webhooks)), and Events as core `v1` and as `events.k8s.io/v1`
//!   (short name `ev` for both, as the real discovery; one storage, as the real server:
//!   an Event written through either group is stored once, at one resourceVersion, and
//!   read, listed and watched through both, its fields converted — `involvedObject` ↔
//!   `regarding`, `message` ↔ `note`, `reportingComponent` ↔ `reportingController`, ...)
//!   by default; CRDs created through the API (see
//!   "CustomResourceDefinitions" below) or with [`ApiServer::register`] (which stores
//!   `K::crd()` the same way), [`ApiServer::register_resource`] any k8s-openapi type.
//! * `/openapi/v2` (Swagger 2.0; JSON, or gnostic's protobuf when `Accept` asks for
//!   `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, as kubectl up to 1.26
//!   does) and `/openapi/v3` (the index of `api/v1` and `apis/{group}/{version}` with
//!   `serverRelativeURL`s, then one OpenAPI 3.0 document per group-version), generated from
//!   the kinds served now: k8s-openapi's `schemars` schemas for the well-known built-ins,
//!   the CRD version's `openAPIV3Schema` for custom resources (in v2 without `nullable`,
//!   `anyOf`, `oneOf`, `not`), an open object for anything else; each top-level
//!   definition carries `x-kubernetes-group-version-kind`, each path an operation per verb.
//!   So `kubectl apply -f`, `create -f` and `explain` work without `--validate=false`, and
//!   kubectl's client-side validation rejects misspelled fields (checked with kubectl
//!   1.20.2). The operations do not list the `fieldValidation` parameter, so a kubectl
//!   that looks for it there validates on the client instead of sending it; the server
//!   honours the parameter all the same when a client sends it ([Unknown
//!   fields](#unknown-fields)).
//! * Every answer carries `Cache-Control: no-cache, private`, as the real server's. An
//!   `Accept` that names `application/yaml` before JSON gets the answer (object, list,
//!   Table, error) in YAML.
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
//! * Finalizers while deleting, as the real store: an object being deleted may lose
//!   finalizers but not gain any (the real 422 `metadata.finalizers: Forbidden: no new
//!   finalizers([b]) can be added if the object is being deleted`); the update that
//!   empties them is not written: the object is deleted, its `DELETED` event carrying the
//!   finalizers it last had. `propagationPolicy: Foreground` (in `DeleteOptions` or the
//!   query) answers the object with the `foregroundDeletion` finalizer added. This server
//!   has no garbage collector: it deletes no dependents, and takes `foregroundDeletion`
//!   off itself as soon as no object names the owner in its `ownerReferences` (at once
//!   when none does, else when the test deletes the last of them).
//! * Core ConfigMaps and Secrets hold at most 1 MiB of data (the real `MaxSecretSize`):
//!   a create or update past it is the real 422 (`ConfigMap "x" is invalid: []: Too long:
//!   may not be more than 1048576 bytes`; a Secret's field is `data`).
//! * The server starts with the namespaces the real one creates for itself: `default`,
//!   `kube-system`, `kube-public` and `kube-node-lease` (each `Active`, labelled, with
//!   the `kubernetes` finalizer). Any other namespace must be created (through the API,
//!   `Api::<Namespace>::all(client).create(..)`) before objects are written in it: a
//!   create, update, patch or apply in a namespace that does not exist is the real 404
//!   `namespaces "x" not found` (reason `NotFound`, details `{name: x, kind:
//!   namespaces}`), as the `NamespaceLifecycle` admission answers it. Direct storage
//!   ([`ApiServer::insert`]) skips admission, as writing to etcd would. A Namespace created through
//!   the API gets `spec.finalizers: [kubernetes]`, `status.phase: Active` and the
//!   `kubernetes.io/metadata.name` label; deleting it runs the real lifecycle: it goes
//!   `Terminating` (the DELETE answers it so), every object in it is deleted (those with
//!   finalizers wait for them), a create in it is the real 403 (`unable to create new
//!   content in namespace x because it is being terminated`), and it is gone once empty.
//! * Labels, annotations and core ConfigMap/Secret keys are validated on every create and
//!   update as the real `ValidateObjectMeta`/`ValidateConfigMap`: a bad label key or value,
//!   annotations over 256 KiB, or a key such as `bad key` answer the real 422, every error
//!   listed with its field path (`ConfigMap "x" is invalid: data[bad key]: Invalid value:
//!   "bad key": a valid config key must consist of ...`).
//! * Reads answer a `meta.k8s.io` `Table` (`v1` or `v1beta1`) when `Accept` asks for one
//!   first, as `kubectl get` does: the real printers' columns for ConfigMaps (`Data`),
//!   Secrets, Pods (`Ready`, `Status`, `Restarts`, `Age`, and `IP`, `Node`, ... at
//!   priority 1), Namespaces and Leases, a CRD version's `additionalPrinterColumns` (simple
//!   dotted JSONPaths) for custom objects, `Name` and `Created At` for other kinds; rows
//!   carry the object's `PartialObjectMetadata`, the object or nothing (`includeObject`).
//!   Watches are too (`kubectl get -w`): each event's object is a Table with the one
//!   row of the object the event carries.
//! * `dryRun=All` (what `kubectl diff` and `--dry-run=server` send; in a DELETE's
//!   `DeleteOptions` body too) on create, update, patch, apply, delete, deletecollection
//!   and a custom object's `/scale` writes:
//!   the write runs in full (defaulting, admission, validation, conflicts) and answers as
//!   a real one would (a created object without a `resourceVersion`, an updated one at
//!   its current one), but nothing is stored, no resourceVersion moves and no watch event
//!   is sent. Any other `dryRun` value is the real 422 (`CreateOptions.meta.k8s.io "" is
//!   invalid: dryRun: Unsupported value: []string{"x"}: supported values: "All"`).
//! * Not supported: aggregated
//!   discovery (`Discovery::run_aggregated`), the CBOR encoding (protobuf: see
//!   [Protobuf](#protobuf)), resource-specific field
//!   selectors other than the Events' and a Pod's `spec.nodeName` and `status.phase`
//!   (400; the real server accepts a few more, e.g. a Pod's `spec.schedulerName` or a
//!   Secret's `type`), Event validation (the real server requires e.g.
//!   `eventTime`, `reportingController` and `action` on an events.k8s.io/v1 Event; here
//!   any Event is stored as sent), Pod validation beyond its update rule (an update
//!   may not add or remove containers nor change `spec` but images,
//!   `activeDeadlineSeconds`, `tolerations` and `terminationGracePeriodSeconds`: the real
//!   422; `POST pods/{name}/binding` assigns the node once, as a scheduler does), graceful
//!   deletion (a Pod
//!   without finalizers goes at once), and the 403 for deleting `default`, `kube-system`
//!   or `kube-public`.
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
//! `application/merge-patch+json` (RFC 7386). `application/strategic-merge-patch+json`
//! for built-in kinds, as the real `StrategicMergeMapPatch`: lists with a patch merge key
//! merge item by item (a Pod's or a Pod template's `containers`, `initContainers`,
//! `volumes`, `env`, ... by `name`, `ports` by `containerPort`, `volumeMounts` by
//! `mountPath`, `ownerReferences` by `uid`, `conditions` by `type`), `finalizers` as a
//! set, other lists are replaced; the directives `$patch` (`replace`, `delete`, `merge`),
//! `$retainKeys`, `$deleteFromPrimitiveList/…` and `$setElementOrder/…` are honoured; on a
//! custom resource it is the real 415. With any of them, a `metadata.resourceVersion` the patch leaves in the object is a
//! precondition (409 `Conflict` when stale), as on the real server.
//! `application/apply-patch+yaml`: server-side apply, see below. A `force` parameter on
//! any other patch is the real 422 (`force: Forbidden: may not be specified for non-apply
//! patch`). Every other patch type answers 415, listing the four accepted types; a create
//! or replace body that is not `application/json` answers 415 listing `application/json`.
//!
//! ## Server-side apply and `managedFields`
//!
//! As the real fieldmanager (structured-merge-diff semantics, our own code):
//!
//! * `PATCH` with `Content-Type: application/apply-patch+yaml`, a YAML or JSON body (kube's
//!   `Patch::Apply` sends JSON, kubectl YAML) holding `apiVersion` and `kind` of the
//!   resource (else 400 `Incorrect version specified in apply patch...`) and no
//!   `metadata.managedFields` (400). `fieldManager` is required: without it the real 422
//!   `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for
//!   apply patch`. An absent object is created (201), else it is applied to (200); `/status`
//!   of an absent object is a 404. `null`s in the applied configuration set nothing.
//! * The applied configuration is merged into the object: maps key by key; associative
//!   lists (`x-kubernetes-list-type: map`) item by item (new items appended), set lists
//!   (`x-kubernetes-list-type: set`) value by value; every other list is atomic (replaced
//!   whole). The associative and set lists known here are `metadata.finalizers` (set) and
//!   `metadata.ownerReferences` (by `uid`) on every kind, and on core Pods `containers`,
//!   `initContainers`, `ephemeralContainers` (by `name`) with their `ports`
//!   (`containerPort`, `protocol` defaulting to `TCP`), `env` (`name`), `volumeMounts`
//!   (`mountPath`) and `volumeDevices` (`devicePath`), `volumes`, `imagePullSecrets`,
//!   `resourceClaims`, `schedulingGates` (`name`), `hostAliases`, `status.podIPs`,
//!   `status.hostIPs` (`ip`), `topologySpreadConstraints` (`topologyKey`,
//!   `whenUnsatisfiable`), and `status.conditions` (`type`) of Pods, Nodes and Namespaces,
//!   Node `status.addresses` (`type`) and `spec.podCIDRs` (set). Lists of CRDs are atomic
//!   (their schema's list types are not read). An item without its keys, or two items with
//!   the same keys, in an applied list is a 500 `failed to create typed patch object`.
//! * The applier's `Apply` entry owns exactly the fields it applied. Changing a field
//!   another manager owns is a 409 `Conflict`: `Apply failed with 1 conflict: conflict with
//!   "mgr": .data.key` (an `Update` owner is `"mgr" using v1`; several conflicts are listed
//!   per manager), one `details.causes` entry of reason `FieldManagerConflict` per field.
//!   `force=true` takes the fields from their owners. Applying the value a field already has
//!   shares its ownership, without conflict. Fields the applier applied before and no
//!   longer applies are removed unless another manager owns them (maps this empties go
//!   too). A `metadata.resourceVersion` in the applied configuration is a precondition
//!   (409 when stale; ignored when the apply creates the object). Objects without
//!   `managedFields` (typically seeded with [`ApiServer::insert`], which adds none) get
//!   their fields owned by `before-first-apply` (an `Update` entry) on their first apply,
//!   as the real server. An apply that changes nothing writes nothing (no resourceVersion, no event).
//! * Every create, update, patch and status write keeps `metadata.managedFields`: the fields
//!   it added or changed go to the writer's `Update` entry (the `fieldManager` parameter,
//!   else the `User-Agent` up to its first `/`), merged with that manager's earlier
//!   updates and stamped with the time; other managers lose the fields it changed or
//!   removed, and a manager left owning nothing is dropped. Entries are
//!   `{manager, operation, apiVersion, time, fieldsType: FieldsV1, fieldsV1}` (plus
//!   `subresource: status` for status writes), `fieldsV1` in the real `f:`/`k:`/`v:`/`.`
//!   encoding, sorted as the real server sorts them. A client may set `managedFields` in an
//!   update (`[{}]` clears them), as on the real server. Not modelled: the cap of 10
//!   `Update` managers, kubectl's `last-applied-configuration` upgrade, CBOR apply
//!   (`application/apply-patch+cbor`).
//!
//! ## Protobuf
//!
//! Built-in kinds of core `v1`, `apps/v1`, `batch/v1`, `coordination.k8s.io/v1` and
//! `events.k8s.io/v1` (ConfigMap, Secret, Pod, Lease, both Events, ...) also speak the
//! Kubernetes protobuf encoding, as client-go's typed clients do: a create or update body
//! in `application/vnd.kubernetes.protobuf` (`k8s\0`, then a `runtime.Unknown` around the
//! object's message) is decoded, as is a DELETE's protobuf `DeleteOptions`; an answer is
//! protobuf when `Accept` names protobuf before any JSON (client-go sends
//! `application/vnd.kubernetes.protobuf, */*`), JSON otherwise (kube and kubectl ask for
//! JSON). Watches and errors stay JSON (client-go reads both by their `Content-Type`).
//! Custom resources have no protobuf, as on the real server: a protobuf body answers 415
//! `the body of the request was in an unknown format - accepted media types include:
//! application/json`, and an `Accept` of protobuf alone 406. A body that does not start
//! with the magic answers the real decoder's 400.
//!
//! ## Unknown fields
//!
//! A create, update or patch that carries fields the kind does not declare (`dataa`,
//! `metadata.bogus`, `spec.containers[0].imagee`; built-ins are read against k8s-openapi's
//! schema of the kind, custom objects against their CRD's) stores the object without them,
//! and `fieldValidation` says what the client hears: `Warn` (the default) one
//! `Warning: 299 - "unknown field \"dataa\""` header per field, `Ignore` nothing,
//! `Strict` the real 400 `strict decoding error: unknown field "dataa"` (a patch: the real
//! 422 on `patch`). Server-side apply does not check them.
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
//! `BOOKMARK`s carrying the RV the watcher has read up to, only as the real watch cache
//! sends them: one a minute ([`ApiServerBuilder::bookmark_interval`]) and, on a watch
//! with `timeoutSeconds`, shortly before it times out (usually two, a second apart: a
//! 10 s watch gets them at about 8 s and 9 s), and only once writes have moved the RV
//! past the RV the watch started at (the real watch cache drops events at or below it).
//! A client must not count on frequent bookmarks. A watch from RV unset/`"0"` with
//! `allowWatchBookmarks=true` ends its synthetic `ADDED`s with a `BOOKMARK` annotated
//! `k8s.io/initial-events-end: "true"`, as a watch-list does.
//! `timeoutSeconds` ends the stream cleanly. Each event's line is encoded once, by the
//! first watcher that sends it, and shared by every watcher that sends the same bytes
//! (same representation and event type), so fan-out to many watchers costs a reference
//! count per watcher, not an encoding. `sendInitialEvents=true`
//! (requires `resourceVersionMatch=NotOlderThan`, else 422): the current state as `ADDED`,
//! then, with `allowWatchBookmarks=true`, a `BOOKMARK` annotated
//! `k8s.io/initial-events-end: "true"` (without it, no bookmark, as the real server).
//! Selectors apply to events: an object that stops matching arrives as `DELETED`
//! carrying its previous (last matching) state at the write's resourceVersion, as the
//! API server's watch cache sends it; one that starts matching as `ADDED`.
//!
//! # CustomResourceDefinitions
//!
//! `POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions` (and every other verb,
//! watch included, on CRDs themselves) works as on the real apiextensions-apiserver:
//!
//! * Defaults as the real `SetDefaults`: `names.singular` (lower-case kind),
//!   `names.listKind` (`{kind}List`), `conversion.strategy: None`.
//! * Validation of the common mistakes with the real 422 wording, every error collected:
//!   the name must be `<plural>.<group>` (`metadata.name: Invalid value: "x": must be
//!   spec.names.plural+"."+spec.group`), `spec.group` required and a domain with a dot,
//!   `spec.scope` `Cluster` or `Namespaced`, version names DNS-1035 labels and unique,
//!   exactly one storage version, a schema per version with `type: object` at the root,
//!   plural/singular/kind/short names well formed; on update `group` and `names.plural`
//!   are immutable, and `scope` and `names.kind` once established.
//! * Once stored, every served version is served (discovery with short names, categories,
//!   `{plural}/status` and `{plural}/scale`; CRUD, list, watch), and a second write sets
//!   `status.conditions` `NamesAccepted` and `Established` (True), `acceptedNames` and
//!   `storedVersions`, so watchers see `ADDED` then `MODIFIED` and kube's
//!   `await_condition(.., conditions::is_crd_established())` returns.
//! * Custom objects are handled on every create and update as the real server: unknown
//!   fields are silently **pruned** (except under `x-kubernetes-preserve-unknown-fields`
//!   or `additionalProperties: true`; `metadata` keeps only `ObjectMeta` fields),
//!   `default`s are applied, then the object is validated against the version's
//!   `openAPIV3Schema` (types, `required`, `enum`, `minimum`/`maximum` and their exclusive
//!   forms, `minLength`/`maxLength`, `pattern`, `minItems`/`maxItems`, `nullable`,
//!   `x-kubernetes-int-or-string`), answering the real 422, e.g. `Widget.example.com "w"
//!   is invalid: [spec.color: Unsupported value: "green": supported values: "red",
//!   "blue", spec.size: Invalid value: "string": spec.size in body must be of type
//!   integer: "string"]`. Not checked: `format`, `multipleOf`, `uniqueItems`,
//!   list-type/map-type uniqueness.
//! * CEL rules (`x-kubernetes-validations`) are evaluated on every create, update, patch,
//!   apply and `/scale` write, after the schema's validation (not when that found a type
//!   or enum error: then the real extra cause `<nil>: Invalid value: "null": some
//!   validation rules were not checked because the object was invalid; ...` is added):
//!   a rule that does not hold is the real 422 with the rule's `message` (or
//!   `messageExpression`, else `failed rule: <rule>`) at the node's field path (plus
//!   its `fieldPath`), e.g. `Widget.example.com "w" is invalid: spec: Invalid value:
//!   "object": replicas must not exceed maxReplicas`, and a `reason` other than
//!   `FieldValueInvalid` gives that error type. Transition rules (`oldSelf`) run on updates
//!   where the old value exists. Rules are evaluated with the `cel` crate: the CEL
//!   standard library and macros, the Kubernetes string functions and list functions
//!   (`slice`, `flatten`, `distinct`, `reverse`, `sort`); a rule calling anything else
//!   (the `quantity`, `url`, `ip`, `cidr`, `format`, `semver`, `authz` and regex libraries,
//!   `isSorted`/`sum`/`min`/`max`, `duration`, `timestamp`) is refused when the CRD is
//!   written, with a 422 naming the rule, never passed over.
//! * The steps of a custom-object write run in the real server's order: mutating
//!   admission (webhooks), then defaulting and pruning, then schema validation and CEL
//!   rules, then validating admission (webhooks).
//! * A custom object's create or update body is decoded as the real server's
//!   unstructured decoder does: without `kind` (or `apiVersion`) it is the real 400
//!   (`Object 'Kind' is missing in '{...}'`), a wrong one the real 422 (`kind: Invalid
//!   value: "Gadget": must be Widget`); a key repeated in one object is a warning
//!   (`duplicate field "spec.size"`, the last value kept) or, under
//!   `fieldValidation=Strict`, the real 400, whose message starts as every strict
//!   decoding error of a custom object does: `Widget in version "v1" cannot be handled
//!   as a Widget: strict decoding error: duplicate field "spec.size"`.
//! * Server-side apply of a custom object with a field its schema does not declare is the
//!   real 500 (`failed to create typed patch object (default/w; example.com/v1,
//!   Kind=Widget): .spec.bogus: field not declared in schema`), whatever
//!   `fieldValidation` says. A patch whose only content the schema prunes writes nothing
//!   (no resourceVersion, generation or event; the unknown-field warning).
//! * A `PUT` of a custom object without `metadata.resourceVersion` is the real 422
//!   (`metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`):
//!   custom resources allow no unconditional update.
//! * `selectableFields`: a field selector on a field a CRD version declares
//!   (`spec.size=large`, `!=` too) filters its lists and watches; any other field is the
//!   real 400 `field label not supported: spec.replicas` (without `selectableFields`,
//!   the default wording).
//! * Lists of custom objects carry `metadata.continue`, `""` on the last page, as an
//!   `UnstructuredList` does.
//! * Discovery lists a custom resource's verbs in the CRD handler's order (`delete`,
//!   `deletecollection`, `get`, `list`, `patch`, `create`, `update`, `watch`) with its
//!   `storageVersionHash`; a printer column without a description gets the real one
//!   (`Custom resource definition column (in JSONPath format): .spec.size`).
//! * [`ApiServerBuilder::crd_storage_initialization`] (off by default) makes a new kind's
//!   collection answer the real 429 `storage is (re)initializing` for a while, for tests
//!   of a client's retry path.
//! * The `scale` subresource (`autoscaling/v1` Scale) reads `specReplicasPath`,
//!   `statusReplicasPath` and `labelSelectorPath`; `PUT`/`PATCH` write `specReplicasPath`
//!   (the object's schema still applies; a Scale `resourceVersion` is a precondition).
//!   Their `managedFields` are the real server's: the writer (`fieldManager`, else the
//!   `User-Agent`) gets an `Update` entry of the object's apiVersion with
//!   `subresource: scale` owning the replicas path, without a `time` (so it sorts first of
//!   the `Update`s); a change of value takes the path from every other entry. An `Apply`
//!   entry keeps it while its value stands; an `Update` entry always loses it, and gets it
//!   back in a second, time-less entry of its own when the value stood. Not supported:
//!   server-side apply of a Scale (415).
//! * Changing a CRD's spec (a schema, the versions) rebuilds its kind's storage, as the
//!   real CRD handler does: every open watch of its objects ends at once without an
//!   event, a watch from a resourceVersion before the change is 410 (an `ERROR` event,
//!   `too old resource version: N (M)`), and reads (get, lists of every shape, a
//!   watch-list's initial events) serve the stored objects through the new schema — its
//!   `default`s applied, the fields it no longer declares pruned — at unchanged
//!   resourceVersions, as the real server defaults and prunes what it reads from etcd.
//!   Each CRD's watch cache starts at its creation: a watch of its objects from an
//!   older resourceVersion is 410 too.
//! * Deleting a CRD runs the real lifecycle: the DELETE answers the CRD (200) with a
//!   `deletionTimestamp`, the `customresourcecleanup.apiextensions.k8s.io` finalizer and a
//!   `Terminating` condition (`True`); every object of its versions is then deleted
//!   through the usual delete (watchers get `DELETED`s; objects with finalizers get a
//!   `deletionTimestamp` and wait for them); meanwhile reads, lists, watches and patches
//!   keep working and a create is the real 403 (`create not allowed while custom resource
//!   definition is terminating`); once the last object is gone the CRD goes, its open
//!   watches end, its paths answer 404 and discovery no longer lists it. Creating it again
//!   serves an empty kind again.
//! * Conversion between versions: with `conversion.strategy: Webhook` through the CRD's
//!   conversion webhook (see [Webhooks](#webhooks)); with `None` each served version
//!   keeps its own objects. Not supported: name conflicts between CRDs (`NamesAccepted`
//!   is always True).
//!
#![doc = include_str!("../docs/webhooks.md")]
//!
//! # Faults
//!
//! See [`Fault`] for the variants and [`Matcher`] for targeting; [`Faults::drop_watches`]
//! and [`Faults::inject_line`] act on the watches open right now. [`ApiServer::request_log`]
//! records verb, path, query and status of every request.
//!
//! # Admin API (for clients in any language)
//!
//! With [`ApiServerBuilder::admin`] (the binary's `--admin`; off by default, loopback only
//! like everything else) a small JSON API under `/testkit/admin/` drives the same fault
//! model ([`Fault`] and [`Matcher`] in their serde JSON form, documented on each):
//!
//! | request | body | answer |
//! |---|---|---|
//! | `GET /testkit/admin/faults` | | `[{"id", "matcher", "fault", "hits"}]` |
//! | `POST /testkit/admin/faults` | `{"matcher": {...}, "fault": ...}` | 201 `{"id": N}` |
//! | `GET /testkit/admin/faults/{id}` | | `{"id", "matcher", "fault", "hits"}` |
//! | `DELETE /testkit/admin/faults` | | `{"removed": n}` |
//! | `DELETE /testkit/admin/faults/{id}` | | `{"removed": 1}` (404 if unknown) |
//! | `POST /testkit/admin/watches/drop` | | `{"watches": n}` ([`Faults::drop_watches`]) |
//! | `POST /testkit/admin/watches/inject-line` | `{"line": "Malformed"}` | `{"watches": n}` |
//! | `POST /testkit/admin/compact` | `{}` or `{"resourceVersion": N}` | `{"floor": N}` |
//!
//! For example `curl -XPOST localhost:8080/testkit/admin/faults -d '{"matcher": {"verb":
//! "watch", "resource": "configmaps", "times": null}, "fault": {"AbortWatch":
//! {"after_events": 3}}}'`; `"userAgent": "kubectl"` in the matcher limits a fault to the
//! clients whose `User-Agent` starts with it. Bad JSON answers 400 `{"error": "..."}`. Admin requests
//! are not faulted and not in the request log. Without the flag these paths are the
//! usual 404 `Status`.
//!
//! # Using it from kubectl
//!
//! Run `cargo run -p reflector-testkit -- --port 8080 --demo [--crd my-crds.yaml]`, then
//! point kubectl at it (`kubectl apply -f`, `create -f`, `explain` and short names work;
//! no `--validate=false` needed):
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
//! (`kubectl get` is answered a Table with the kind's columns; use `kubectl get --raw
//! /api/v1/namespaces/demo/configmaps` for the list itself.) The repository's
//! `examples/testkit/` holds the CRD and object of this crate's README's walk-through,
//! which `scripts/kubectl-walkthrough.sh` runs with Debian's kubectl.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod admin;
mod apply;
pub mod bench_objects;
mod bookmark_schedule;
mod builder;
mod cel_rules;
mod continue_token;
mod crd;
mod custom_decode;
mod discovery;
mod error;
mod event_storage;
mod fault;
mod field_selector;
mod field_set;
mod handlers;
mod label_selector;
mod labels;
mod list;
mod list_type;
mod managed_fields;
mod object;
mod openapi;
mod openapi_proto;
mod patch;
mod protobuf_codec;
mod query;
mod request_log;
mod resource;
mod router;
mod schema_validation;
mod selectable_fields;
mod server;
mod state;
mod status;
mod strategic_merge;
mod table;
mod table_watch;
mod unknown_fields;
mod watch;
mod webhooks;
mod yaml_answer;

pub use builder::ApiServerBuilder;
pub use error::TestkitError;
pub use fault::{BadLine, Fault, FaultId, Faults, Matcher};
pub use request_log::{RequestLogEntry, Verb};
pub use resource::ResourceInfo;
pub use server::ApiServer;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
