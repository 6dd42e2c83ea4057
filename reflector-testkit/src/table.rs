//! `meta.k8s.io` `Table` answers: what `kubectl get` asks for first
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...`), with the columns the
//! real server's printers give each kind (ConfigMap `DATA`, Pod `READY`/`STATUS`/
//! `RESTARTS`, ...), a CRD version's `additionalPrinterColumns` for custom objects, and
//! `Name`/`Created At` for any other kind, as the real default table convertor.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value, json};

mod age;

use age::age;
pub(crate) use age::human_duration;

use crate::object::StoredObject;
use crate::query::param;
use crate::resource::ResourceInfo;
use crate::state::State;
use crate::status::ApiError;

/// A request's ask for a Table: which `meta.k8s.io` version, and what each row carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TableRequest {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    api_version: &'static str,
    /// `includeObject`.
    include: Include,
}

/// What each row's `object` holds (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Include {
    /// No object.
    None,
    /// The object's `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl TableRequest {
    /// The Table the `Accept` header asks for, if its first JSON media type it can serve
    /// is a Table (`application/json;as=Table;v=v1;g=meta.k8s.io`); `includeObject` from
    /// the query (a value other than `None`, `Metadata` or `Object` is the real 400).
    pub(crate) fn from_request(
        accept: &str,
        pairs: &[(String, String)],
    ) -> Result<Option<Self>, ApiError> {
        let mut api_version = None;
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            if !media.eq_ignore_ascii_case("application/json") {
                continue;
            }
            let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
            let get = |key: &str| params.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
            match (get("as"), get("g"), get("v")) {
                (None, _, _) => break,
                (Some("Table"), Some("meta.k8s.io"), Some("v1")) => {
                    api_version = Some("meta.k8s.io/v1");
                    break;
                }
                (Some("Table"), Some("meta.k8s.io"), Some("v1beta1")) => {
                    api_version = Some("meta.k8s.io/v1beta1");
                    break;
                }
                _ => {}
            }
        }
        let Some(api_version) = api_version else {
            return Ok(None);
        };
        let include = match param(pairs, "includeObject") {
            None | Some("" | "Metadata") => Include::Metadata,
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "includeObject: Unsupported value: {}: supported values: \"Metadata\", \"None\", \"Object\"",
                    crate::status::go_quote(other)
                )));
            }
        };
        Ok(Some(Self {
            api_version,
            include,
        }))
    }

    /// The Table of `objects` (one for a GET of an object, the page for a list) with
    /// `metadata` (the list's `resourceVersion`, `continue`, `remainingItemCount`).
    pub(crate) fn render(
        self,
        state: &State,
        rid: crate::state::ResourceId,
        objects: &[Arc<StoredObject>],
        metadata: Map<String, Value>,
    ) -> Vec<u8> {
        let info = &state.resources[rid];
        let printer = Printer::of(state, rid, info);
        let now = k8s_openapi::jiff::Timestamp::now();
        let rows: Vec<Value> = objects
            .iter()
            .map(|object| {
                let value = object.value();
                let mut row = json!({"cells": printer.cells(&value, now)});
                let included = match self.include {
                    Include::None => return row,
                    Include::Metadata => json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": value.get("metadata").cloned().unwrap_or(Value::Null),
                    }),
                    Include::Object => value,
                };
                row["object"] = included;
                row
            })
            .collect();
        let table = json!({
            "kind": "Table",
            "apiVersion": self.api_version,
            "metadata": metadata,
            "columnDefinitions": printer.columns(),
            "rows": rows,
        });
        serde_json::to_vec(&table).unwrap_or_default()
    }
}

/// One column: its definition and how its cell is read from an object.
struct Column {
    name: Cow<'static, str>,
    kind: Cow<'static, str>,
    format: Cow<'static, str>,
    description: String,
    priority: u32,
    cell: Cell,
}

/// How a cell is computed.
enum Cell {
    /// `metadata.name`.
    Name,
    /// `metadata.creationTimestamp` as the real `translateTimestampSince` (`5m`).
    Age,
    /// `metadata.creationTimestamp` as RFC 3339 (the default convertor's `Created At`).
    CreatedAt,
    /// The number of entries of these maps (`data` and `binaryData`).
    Count(&'static [&'static str]),
    /// A string at this JSON pointer, `""` when absent.
    Text(&'static str),
    /// A string at this JSON pointer, `<none>` when absent or empty.
    TextOrNone(&'static str),
    /// A computed Pod column.
    Pod(PodCell),
    /// A custom column's JSONPath (`.spec.size`), as its segments; absent is `null`.
    Path(Vec<String>),
}

#[derive(Clone, Copy)]
enum PodCell {
    Ready,
    Status,
    Restarts,
    ReadinessGates,
}

/// The columns of one kind.
struct Printer {
    columns: Vec<Column>,
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

impl Column {
    fn new(name: &'static str, kind: &'static str, description: &str, cell: Cell) -> Self {
        Self {
            name: name.into(),
            kind: kind.into(),
            format: "".into(),
            description: description.to_owned(),
            priority: 0,
            cell,
        }
    }

    fn name() -> Self {
        let mut column = Self::new("Name", "string", NAME_DESCRIPTION, Cell::Name);
        column.format = "name".into();
        column
    }

    fn age() -> Self {
        Self::new("Age", "string", AGE_DESCRIPTION, Cell::Age)
    }

    fn wide(mut self) -> Self {
        self.priority = 1;
        self
    }
}

impl Printer {
    fn of(state: &State, rid: crate::state::ResourceId, info: &ResourceInfo) -> Self {
        if state.custom.served(rid).is_some() {
            return Self::custom(state, info);
        }
        let columns = match (info.group.as_str(), info.kind.as_str()) {
            ("", "ConfigMap") => vec![
                Column::name(),
                Column::new(
                    "Data",
                    "string",
                    "Data contains the configuration data.",
                    Cell::Count(&["data", "binaryData"]),
                ),
                Column::age(),
            ],
            ("", "Secret") => vec![
                Column::name(),
                Column::new(
                    "Type",
                    "string",
                    "Used to facilitate programmatic handling of secret data.",
                    Cell::Text("/type"),
                ),
                Column::new(
                    "Data",
                    "string",
                    "Data contains the secret data.",
                    Cell::Count(&["data"]),
                ),
                Column::age(),
            ],
            ("", "Pod") => vec![
                Column::name(),
                Column::new(
                    "Ready",
                    "string",
                    "The aggregate readiness state of this pod for accepting traffic.",
                    Cell::Pod(PodCell::Ready),
                ),
                Column::new(
                    "Status",
                    "string",
                    "The aggregate status of the containers in this pod.",
                    Cell::Pod(PodCell::Status),
                ),
                Column::new(
                    "Restarts",
                    "string",
                    "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                    Cell::Pod(PodCell::Restarts),
                ),
                Column::age(),
                Column::new(
                    "IP",
                    "string",
                    "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
                    Cell::TextOrNone("/status/podIP"),
                )
                .wide(),
                Column::new(
                    "Node",
                    "string",
                    "NodeName is a request to schedule this pod onto a specific node.",
                    Cell::TextOrNone("/spec/nodeName"),
                )
                .wide(),
                Column::new(
                    "Nominated Node",
                    "string",
                    "nominatedNodeName is set only when this pod preempts other pods on the node.",
                    Cell::TextOrNone("/status/nominatedNodeName"),
                )
                .wide(),
                Column::new(
                    "Readiness Gates",
                    "string",
                    "If specified, all readiness gates will be evaluated for pod readiness.",
                    Cell::Pod(PodCell::ReadinessGates),
                )
                .wide(),
            ],
            ("", "Namespace") => vec![
                Column::name(),
                Column::new(
                    "Status",
                    "string",
                    "The status of the namespace",
                    Cell::Text("/status/phase"),
                ),
                Column::age(),
            ],
            ("coordination.k8s.io", "Lease") => vec![
                Column::name(),
                Column::new(
                    "Holder",
                    "string",
                    "The holder of the lease.",
                    Cell::Text("/spec/holderIdentity"),
                ),
                Column::age(),
            ],
            _ => vec![
                Column::name(),
                Column::new("Created At", "date", AGE_DESCRIPTION, Cell::CreatedAt),
            ],
        };
        Self { columns }
    }

    /// A custom kind: `Name`, then its CRD version's `additionalPrinterColumns`, or
    /// `Age` when it has none (the real CRD defaulting's column).
    fn custom(state: &State, info: &ResourceInfo) -> Self {
        let crd = state
            .find(crate::crd::GROUP, "v1", "customresourcedefinitions")
            .and_then(|crd_rid| state.get(crd_rid, &format!("{}.{}", info.plural, info.group)))
            .map(|crd| crd.value());
        let declared: Vec<Value> = crd
            .as_ref()
            .and_then(|crd| crd.pointer("/spec/versions"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|v| v["name"] == info.version.as_str())
            .and_then(|v| v.get("additionalPrinterColumns"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut columns = vec![Column::name()];
        if declared.is_empty() {
            let created = Cell::Path(vec!["metadata".into(), "creationTimestamp".into()]);
            columns.push(Column::new("Age", "date", AGE_DESCRIPTION, created));
        }
        const GENERATED: &str = "Custom resource definition column (in JSONPath format): ";
        columns.extend(declared.iter().map(|column| {
            let text = |key: &str| column[key].as_str().unwrap_or_default().to_owned();
            Column {
                name: text("name").into(),
                kind: text("type").into(),
                format: text("format").into(),
                description: match text("description") {
                    // The real CRD table convertor's text for a column without one.
                    d if d.is_empty() => format!("{GENERATED}{}", text("jsonPath")),
                    d => d,
                },
                priority: column["priority"]
                    .as_u64()
                    .and_then(|p| u32::try_from(p).ok())
                    .unwrap_or(0),
                cell: Cell::Path(json_path(&text("jsonPath"))),
            }
        }));
        Self { columns }
    }

    fn columns(&self) -> Vec<Value> {
        self.columns
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.kind,
                    "format": c.format,
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect()
    }

    fn cells(&self, object: &Value, now: k8s_openapi::jiff::Timestamp) -> Vec<Value> {
        self.columns
            .iter()
            .map(|column| match &column.cell {
                Cell::Name => object
                    .pointer("/metadata/name")
                    .cloned()
                    .unwrap_or(Value::Null),
                Cell::Age => json!(age(object, now)),
                Cell::CreatedAt => object
                    .pointer("/metadata/creationTimestamp")
                    .cloned()
                    .unwrap_or(Value::Null),
                Cell::Count(fields) => json!(
                    fields
                        .iter()
                        .filter_map(|f| object.get(*f).and_then(Value::as_object))
                        .map(Map::len)
                        .sum::<usize>()
                ),
                Cell::Text(pointer) => json!(
                    object
                        .pointer(pointer)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ),
                Cell::TextOrNone(pointer) => json!(
                    object
                        .pointer(pointer)
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .unwrap_or("<none>")
                ),
                Cell::Pod(cell) => pod_cell(object, *cell),
                Cell::Path(segments) => {
                    let value = segments
                        .iter()
                        .try_fold(object, |value, segment| match segment.parse::<usize>() {
                            Ok(index) if value.is_array() => value.get(index),
                            _ => value.get(segment.as_str()),
                        })
                        .cloned()
                        .unwrap_or(Value::Null);
                    // The real custom-resource convertor shows dates as ages (`5m`).
                    match (column.kind.as_ref(), value.as_str()) {
                        ("date", Some(time)) => {
                            json!(time.parse::<k8s_openapi::jiff::Timestamp>().map_or_else(
                                |_| "<invalid>".to_owned(),
                                |t| human_duration(now.as_second() - t.as_second())
                            ))
                        }
                        _ => value,
                    }
                }
            })
            .collect()
    }
}

/// The segments of a simple JSONPath (`.spec.size`, `.status.items[0].name`).
fn json_path(path: &str) -> Vec<String> {
    path.trim_start_matches('.')
        .replace('[', ".")
        .replace(']', "")
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A Pod's `READY`, `STATUS` or `RESTARTS` cell, as the real Pod printer computes them
/// from the container statuses (init containers and sidecars not modelled).
fn pod_cell(pod: &Value, cell: PodCell) -> Value {
    let statuses: Vec<&Value> = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|s| s.iter().collect())
        .unwrap_or_default();
    match cell {
        PodCell::Ready => {
            let total = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = statuses
                .iter()
                .filter(|s| s["ready"] == true && s.pointer("/state/running").is_some())
                .count();
            json!(format!("{ready}/{total}"))
        }
        PodCell::ReadinessGates => {
            let gates: Vec<&Value> = pod
                .pointer("/spec/readinessGates")
                .and_then(Value::as_array)
                .map(|g| g.iter().collect())
                .unwrap_or_default();
            if gates.is_empty() {
                return json!("<none>");
            }
            let conditions = pod.pointer("/status/conditions").and_then(Value::as_array);
            let met = gates
                .iter()
                .filter(|gate| {
                    conditions
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == gate["conditionType"] && c["status"] == "True")
                })
                .count();
            json!(format!("{met}/{}", gates.len()))
        }
        PodCell::Restarts => json!(
            statuses
                .iter()
                .filter_map(|s| s["restartCount"].as_i64())
                .sum::<i64>()
        ),
        PodCell::Status => {
            let text = |pointer: &str| {
                pod.pointer(pointer)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
            };
            let mut reason = text("/status/reason")
                .or_else(|| text("/status/phase"))
                .unwrap_or_default()
                .to_owned();
            for status in statuses.iter().rev() {
                if let Some(waiting) = status
                    .pointer("/state/waiting/reason")
                    .and_then(Value::as_str)
                {
                    reason = waiting.to_owned();
                } else if let Some(terminated) = status.pointer("/state/terminated") {
                    reason = match terminated["reason"].as_str() {
                        Some(r) if !r.is_empty() => r.to_owned(),
                        _ => match terminated["signal"].as_i64() {
                            Some(signal) if signal != 0 => format!("Signal:{signal}"),
                            _ => {
                                format!("ExitCode:{}", terminated["exitCode"].as_i64().unwrap_or(0))
                            }
                        },
                    };
                }
            }
            if pod.pointer("/metadata/deletionTimestamp").is_some() {
                reason = if text("/status/reason") == Some("NodeLost") {
                    "Unknown".to_owned()
                } else {
                    "Terminating".to_owned()
                };
            }
            json!(reason)
        }
    }
}

#[cfg(test)]
mod tests;
