//! The server's in-memory storage: objects, the single resourceVersion counter (like etcd's
//! revision) and the bounded event log that serves watches and old-snapshot lists.
//!
//! `State` only ever lives inside `Shared::state` (a `std::sync::Mutex`), so every method
//! here runs with that lock held; none of them awaits.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::event_storage::EventGroup;
use crate::managed_fields::{Scope, Writer, empty_object, track_update};
use crate::object::{
    StoredObject, key_of, meta_str, metadata, metadata_mut, new_uid, now_timestamp, spec_part,
    valid_name,
};
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::watch::EventLines;
use kube::core::admission::Operation;

mod admission;
mod crd_cleanup;
mod delete;
mod direct_write;
mod foreground;
mod list_page;
mod namespace_lifecycle;
mod pod_binding;
mod rewrite;
mod validation;

pub(crate) use delete::{Deleted, Preconditions};

pub(crate) use list_page::ObjectFilter;
use validation::{pod_qos_class, validate_no_new_finalizers, validate_pod_update, validate_write};

/// Index of a registered resource in `State::resources`.
pub(crate) type ResourceId = usize;

/// Watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One write, as kept in the event log.
#[derive(Debug, Clone)]
pub(crate) struct LogEvent {
    /// The resourceVersion this write produced.
    pub rv: u64,
    /// Which resource was written.
    pub resource: ResourceId,
    /// What happened.
    pub event_type: EventType,
    /// The object after the write (for deletes: the last state, carrying the delete's RV).
    pub object: Arc<StoredObject>,
    /// The object before the write (None for creates).
    pub prev: Option<Arc<StoredObject>>,
    /// The event's watch lines, encoded once on first use and shared by every watcher
    /// (and every clone of this event).
    pub lines: Arc<EventLines>,
}

/// All server state. Guarded by `Shared::state`.
pub(crate) struct State {
    /// Registered resources, indexed by `ResourceId`.
    pub resources: Vec<ResourceInfo>,
    /// Objects per resource, keyed by storage key in sorted order.
    objects: Vec<BTreeMap<Arc<str>, Arc<StoredObject>>>,
    /// Writes with `rv > floor`, oldest first, at most `history_len` of them.
    pub log: VecDeque<LogEvent>,
    /// Bound on `log`.
    history_len: usize,
    /// Compaction floor: writes with `rv <= floor` are no longer in the log.
    pub floor: u64,
    /// The current (last written) resourceVersion.
    pub rv: u64,
    /// Publishes `rv` after every write so watchers wake.
    notify: watch::Sender<u64>,
    /// Resources served from CRD objects (schemas, scale paths, retired ids).
    pub custom: crate::crd::CustomResources,
    /// Whether writes are dry runs (`dryRun=All`): [`State::commit`] then answers the
    /// object it would store, and stores, logs and notifies nothing. Set for one request
    /// by `Shared::write_state`.
    pub dry_run: bool,
    /// Objects deleted in the foreground whose `foregroundDeletion` finalizer waits for
    /// their dependents to go (see `foreground`).
    foreground: Vec<(ResourceId, Arc<str>)>,
    /// The admission webhooks' capture of the request holding the lock, if its write may
    /// call them (see `webhooks::capture`). Set for one request by `Shared::write_state`.
    pub admission: Option<crate::webhooks::capture::Capture>,
}

impl State {
    pub(crate) fn new(history_len: usize, notify: watch::Sender<u64>) -> Self {
        let mut state = Self {
            resources: Vec::new(),
            objects: Vec::new(),
            log: VecDeque::new(),
            history_len: history_len.max(1),
            floor: 0,
            rv: 1,
            notify,
            custom: crate::crd::CustomResources::default(),
            dry_run: false,
            foreground: Vec::new(),
            admission: None,
        };
        for info in crate::resource::builtins() {
            state.register(info);
        }
        state.seed_system_namespaces();
        state
    }

    /// Registers (or re-registers) a resource; returns its id.
    pub(crate) fn register(&mut self, info: ResourceInfo) -> ResourceId {
        if let Some(id) = self.resources.iter().position(|r| {
            r.group == info.group && r.version == info.version && r.plural == info.plural
        }) {
            self.resources[id] = info;
            self.custom.revive(id);
            return id;
        }
        self.resources.push(info);
        self.objects.push(BTreeMap::new());
        self.resources.len() - 1
    }

    pub(crate) fn find(&self, group: &str, version: &str, plural: &str) -> Option<ResourceId> {
        self.served()
            .find(|(_, r)| r.group == group && r.version == version && r.plural == plural)
            .map(|(id, _)| id)
    }

    pub(crate) fn find_kind(&self, api_version: &str, kind: &str) -> Option<ResourceId> {
        self.served()
            .find(|(_, r)| r.kind == kind && r.api_version() == api_version)
            .map(|(id, _)| id)
    }

    /// The resources served now (not those of a deleted CRD), with their ids.
    pub(crate) fn served(&self) -> impl Iterator<Item = (ResourceId, &ResourceInfo)> {
        self.resources
            .iter()
            .enumerate()
            .filter(|(id, _)| !self.custom.is_retired(*id))
    }

    pub(crate) fn get(&self, rid: ResourceId, key: &str) -> Option<Arc<StoredObject>> {
        self.objects.get(rid)?.get(key).cloned()
    }

    /// Every object of a resource (optionally in one namespace), in key order.
    pub(crate) fn snapshot(
        &self,
        rid: ResourceId,
        namespace: Option<&str>,
    ) -> Vec<Arc<StoredObject>> {
        let Some(objects) = self.objects.get(rid) else {
            return Vec::new();
        };
        match namespace {
            None => objects.values().cloned().collect(),
            Some(ns) => {
                let prefix = format!("{ns}/");
                objects
                    .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
                    .take_while(|(k, _)| k.starts_with(&prefix))
                    .map(|(_, v)| v.clone())
                    .collect()
            }
        }
    }

    /// Number of objects of a resource.
    pub(crate) fn count(&self, rid: ResourceId) -> usize {
        self.objects.get(rid).map_or(0, BTreeMap::len)
    }

    /// Applies a write: assigns the next RV, stores, logs and notifies watchers. An
    /// Event is written to both Event resources at once (one storage, two
    /// representations, see `event_storage`).
    fn commit(
        &mut self,
        rid: ResourceId,
        key: Arc<str>,
        value: Value,
        event_type: EventType,
    ) -> Arc<StoredObject> {
        let (key, mut value, event_type) =
            match self.intercept_commit(rid, &key, &value, event_type) {
                admission::Intercept::Proceed => (key, value, event_type),
                admission::Intercept::Store(p) => (p.key, p.value, p.event_type),
                admission::Intercept::Dry => return Self::dry_run_result(key, value, event_type),
            };
        if self.dry_run {
            return Self::dry_run_result(key, value, event_type);
        }
        crate::crd::before_commit(self, rid, &value, event_type);
        self.rv += 1;
        let rv = self.rv;
        metadata_mut(&mut value)
            .insert("resourceVersion".to_owned(), Value::String(rv.to_string()));
        let object = self.store_and_log(rid, key.clone(), &value, event_type);
        if let Some(group) = EventGroup::of(&self.resources[rid]) {
            let (g, v, plural) = group.twin();
            if let Some(twin) = self.find(g, v, plural) {
                self.store_and_log(twin, key, &group.convert(&value), event_type);
            }
        }
        while self.log.len() > self.history_len {
            if let Some(old) = self.log.pop_front() {
                self.floor = old.rv;
            }
        }
        // A write logged twice (both Event resources) leaves the log together.
        let floor = self.floor;
        while self.log.front().is_some_and(|e| e.rv <= floor) {
            self.log.pop_front();
        }
        self.notify.send_replace(rv);
        crate::crd::after_commit(self, rid, &value, event_type);
        if event_type == EventType::Deleted {
            self.finish_crd_of(rid);
            if !self.foreground.is_empty() {
                self.finish_foreground();
            }
        }
        if event_type == EventType::Deleted
            && self.resources[rid].namespaced
            && let Some(namespace) = meta_str(&value, "namespace")
        {
            let namespace = namespace.to_owned();
            self.finish_namespace_if_empty(&namespace);
        }
        object
    }

    /// What a dry-run write answers: the object as it would be stored, a new one without
    /// a resourceVersion, an existing one at its current resourceVersion.
    fn dry_run_result(key: Arc<str>, mut value: Value, event_type: EventType) -> Arc<StoredObject> {
        if event_type == EventType::Added {
            metadata_mut(&mut value).remove("resourceVersion");
        }
        let rv = meta_str(&value, "resourceVersion")
            .and_then(|rv| rv.parse().ok())
            .unwrap_or(0);
        Arc::new(StoredObject::from_value(key, rv, &value))
    }

    /// Stores (or, for a delete, removes) one resource's version of a write at the
    /// current RV and logs it.
    fn store_and_log(
        &mut self,
        rid: ResourceId,
        key: Arc<str>,
        value: &Value,
        event_type: EventType,
    ) -> Arc<StoredObject> {
        let object = Arc::new(StoredObject::from_value(key.clone(), self.rv, value));
        let prev = if event_type == EventType::Deleted {
            self.objects[rid].remove(&key)
        } else {
            self.objects[rid].insert(key, object.clone())
        };
        self.log.push_back(LogEvent {
            rv: self.rv,
            resource: rid,
            event_type,
            object: object.clone(),
            prev,
            lines: Arc::default(),
        });
        object
    }

    /// Drops history up to `rv` (clamped to the current RV).
    pub(crate) fn compact_to(&mut self, rv: u64) {
        let rv = rv.min(self.rv);
        while self.log.front().is_some_and(|e| e.rv <= rv) {
            self.log.pop_front();
        }
        self.floor = self.floor.max(rv);
    }

    /// Checks `kind`/`apiVersion` of a request body against the resource.
    fn check_type(info: &ResourceInfo, body: &Value) -> Result<(), ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): body is not a JSON object",
                info.kind
            )));
        }
        if let Some(api_version) = body.get("apiVersion").and_then(Value::as_str)
            && api_version != info.api_version()
        {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                info.api_version()
            )));
        }
        if let Some(kind) = body.get("kind").and_then(Value::as_str)
            && kind != info.kind
        {
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): kind {kind:?} in the request body",
                info.kind
            )));
        }
        Ok(())
    }

    /// Sets kind/apiVersion and the namespace (checked against the URL's).
    fn normalize(
        info: &ResourceInfo,
        body: &mut Value,
        namespace: Option<&str>,
    ) -> Result<(), ApiError> {
        if let Value::Object(m) = body {
            m.insert("kind".to_owned(), Value::String(info.kind.clone()));
            m.insert("apiVersion".to_owned(), Value::String(info.api_version()));
        }
        let body_ns = meta_str(body, "namespace").map(str::to_owned);
        let meta = metadata_mut(body);
        if info.namespaced {
            let ns = namespace.ok_or_else(|| ApiError::method_not_allowed("POST"))?;
            if body_ns.as_deref().is_some_and(|b| b != ns) {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            meta.insert("namespace".to_owned(), Value::String(ns.to_owned()));
        } else {
            meta.remove("namespace");
        }
        Ok(())
    }

    /// POST: creates an object. Errors: 400 wrong type, 409 AlreadyExists, 422 bad name,
    /// 500 when `resourceVersion` is set (as the real server's storage layer).
    /// `managedFields` are kept as `writer` says.
    pub(crate) fn create(
        &mut self,
        rid: ResourceId,
        namespace: Option<&str>,
        mut body: Value,
        writer: Writer<'_>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let info = self.resources[rid].clone();
        Self::check_type(&info, &body)?;
        Self::normalize(&info, &mut body, namespace)?;
        if meta_str(&body, "resourceVersion").is_some() {
            return Err(ApiError::unknown(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let name = match (meta_str(&body, "name"), meta_str(&body, "generateName")) {
            (Some(name), _) => name.to_owned(),
            (None, Some(prefix)) => {
                let suffix: String = (0..5)
                    .map(|_| {
                        let chars = b"bcdfghjklmnpqrstvwxz2456789";
                        chars[rand::random_range(0..chars.len())] as char
                    })
                    .collect();
                format!("{prefix}{suffix}")
            }
            (None, None) => {
                return Err(ApiError::invalid(
                    &info.kind,
                    &info.group,
                    "",
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                ));
            }
        };
        if !valid_name(&name) {
            return Err(ApiError::invalid(
                &info.kind,
                &info.group,
                &name,
                "metadata.name",
                "FieldValueInvalid",
                &format!(
                    "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
                ),
            ));
        }
        self.admit_in_namespace(&info, namespace, &name, true)?;
        self.refuse_create_while_terminating(rid)?;
        self.admission_point(Some(&mut body), |state, body| {
            state.seen(rid, Operation::Create, "", body, None)
        });
        validate_write(&info, &name, &body)?;
        crate::webhooks::configuration::admit(&info, &name, &mut body)?;
        crate::crd::admit(self, rid, &name, &mut body, None)?;
        let key = key_of(namespace.filter(|_| info.namespaced), &name);
        if self.objects[rid].contains_key(&key) {
            return Err(ApiError::already_exists(&info.plural, &info.group, &name));
        }
        if info.status_subresource
            && let Value::Object(m) = &mut body
        {
            m.remove("status");
        }
        if let Writer::Update(manager) = writer {
            let scope = Scope::new(&info, false);
            track_update(&scope, &empty_object(&info), &mut body, manager);
        }
        if info.group.is_empty()
            && info.kind == "Pod"
            && let Value::Object(m) = &mut body
        {
            let qos_class = pod_qos_class(m.get("spec"));
            m.insert(
                "status".to_owned(),
                json!({"phase": "Pending", "qosClass": qos_class}),
            );
        }
        if self.is_namespace_resource(rid) {
            namespace_lifecycle::set_namespace_defaults(&name, &mut body);
        }
        let meta = metadata_mut(&mut body);
        meta.insert("name".to_owned(), Value::String(name));
        meta.insert("uid".to_owned(), Value::String(new_uid()));
        meta.insert("creationTimestamp".to_owned(), now_timestamp());
        if info.generation {
            meta.insert("generation".to_owned(), json!(1));
        } else {
            meta.remove("generation");
        }
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        Ok(self.commit(rid, key, body, EventType::Added))
    }

    /// PUT (main resource or `/status`). Errors: 400 name/namespace mismatch or wrong type,
    /// 404 missing, 409 Conflict on a stale `resourceVersion`. `managedFields` are kept as
    /// `writer` says.
    pub(crate) fn update(
        &mut self,
        rid: ResourceId,
        namespace: Option<&str>,
        name: &str,
        mut body: Value,
        status_write: bool,
        writer: Writer<'_>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let info = self.resources[rid].clone();
        Self::check_type(&info, &body)?;
        match meta_str(&body, "name") {
            Some(body_name) if body_name != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
            _ => {}
        }
        Self::normalize(&info, &mut body, namespace)?;
        metadata_mut(&mut body).insert("name".to_owned(), Value::String(name.to_owned()));
        self.admit_in_namespace(&info, namespace, name, false)?;
        let key = key_of(namespace.filter(|_| info.namespaced), name);
        let old = self
            .get(rid, &key)
            .ok_or_else(|| ApiError::not_found(&info.plural, &info.group, name))?;
        let subresource = if status_write { "status" } else { "" };
        self.admission_point(Some(&mut body), |state, body| {
            state.seen(
                rid,
                Operation::Update,
                subresource,
                body,
                Some(&old.value()),
            )
        });
        if let Some(rv) = meta_str(&body, "resourceVersion") {
            let rv: u64 = rv
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
            if rv != old.rv {
                return Err(ApiError::conflict(&info.plural, &info.group, name));
            }
        }
        let old_value = old.value();
        let mut new = if status_write {
            let mut merged = old_value.clone();
            let status = body.get("status").cloned();
            if let Value::Object(m) = &mut merged {
                match status {
                    Some(s) => m.insert("status".to_owned(), s),
                    None => m.remove("status"),
                };
            }
            if let Some(mf) = metadata(&body)
                .and_then(|m| m.get("managedFields"))
                .cloned()
            {
                metadata_mut(&mut merged).insert("managedFields".to_owned(), mf);
            }
            merged
        } else {
            if info.status_subresource
                && let Value::Object(m) = &mut body
            {
                match old_value.get("status") {
                    Some(s) => m.insert("status".to_owned(), s.clone()),
                    None => m.remove("status"),
                };
            }
            body
        };
        // Custom objects are pruned and defaulted first: a field the schema drops changes
        // no generation.
        crate::webhooks::configuration::admit(&info, name, &mut new)?;
        crate::crd::admit(self, rid, name, &mut new, Some(&old_value))?;
        let old_meta = metadata(&old_value).cloned().unwrap_or_default();
        let old_generation = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let generation = if spec_part(&new) == spec_part(&old_value) {
            old_generation
        } else {
            old_generation + 1
        };
        {
            let meta = metadata_mut(&mut new);
            for field in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                match old_meta.get(field) {
                    Some(v) => meta.insert(field.to_owned(), v.clone()),
                    None => meta.remove(field),
                };
            }
            if info.generation {
                meta.insert("generation".to_owned(), json!(generation));
            } else {
                meta.remove("generation");
            }
            meta.insert(
                "resourceVersion".to_owned(),
                Value::String(old.rv.to_string()),
            );
        }
        if let Writer::Update(manager) = writer {
            let scope = Scope::new(&info, status_write);
            track_update(&scope, &old_value, &mut new, manager);
        }
        if new == old_value {
            return Ok(old);
        }
        validate_write(&info, name, &new)?;
        validate_no_new_finalizers(&info, name, &old_value, &new)?;
        if !status_write {
            validate_pod_update(&info, name, &old_value, &new)?;
        }
        let deleting = metadata(&new).is_some_and(|m| m.contains_key("deletionTimestamp"));
        let finalizers_empty = metadata(&new)
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if deleting && finalizers_empty {
            // As the real store: the update that empties the finalizers is not written;
            // the stored object is deleted, its DELETED carrying the finalizers it had.
            return Ok(self.commit(rid, key, old_value, EventType::Deleted));
        }
        Ok(self.commit(rid, key, new, EventType::Modified))
    }
}
