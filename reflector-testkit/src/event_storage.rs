//! One storage for Events in both groups, as the real server keeps them: an Event
//! written through core `v1` or `events.k8s.io/v1` is stored once (one
//! resourceVersion) and served, converted, through both.
//!
//! The conversion renames what the two versions spell differently
//! (pkg/apis/events/v1/conversion.go): `involvedObject` ↔ `regarding`, `message` ↔
//! `note`, `source` ↔ `deprecatedSource`, `firstTimestamp` / `lastTimestamp` / `count`
//! ↔ `deprecatedFirstTimestamp` / `deprecatedLastTimestamp` / `deprecatedCount`,
//! `reportingComponent` ↔ `reportingController`; everything else (metadata,
//! `eventTime`, `series`, `related`, `action`, `reason`, `type`, `reportingInstance`)
//! is the same in both.

use serde_json::Value;

use crate::resource::ResourceInfo;

/// (core v1 name, events.k8s.io/v1 name) of the fields the two versions spell
/// differently.
const RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// Which Event representation a resource is, if it is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventGroup {
    Core,
    EventsV1,
}

impl EventGroup {
    pub(crate) fn of(info: &ResourceInfo) -> Option<Self> {
        match (
            info.group.as_str(),
            info.version.as_str(),
            info.kind.as_str(),
        ) {
            ("", "v1", "Event") => Some(EventGroup::Core),
            ("events.k8s.io", "v1", "Event") => Some(EventGroup::EventsV1),
            _ => None,
        }
    }

    /// The other representation's `(group, version, plural)`.
    pub(crate) fn twin(self) -> (&'static str, &'static str, &'static str) {
        match self {
            EventGroup::Core => ("events.k8s.io", "v1", "events"),
            EventGroup::EventsV1 => ("", "v1", "events"),
        }
    }

    /// `event` (in this representation) converted to the other one.
    pub(crate) fn convert(self, event: &Value) -> Value {
        let mut out = event.clone();
        let Value::Object(map) = &mut out else {
            return out;
        };
        let (api_version, renames): (&str, Vec<(&str, &str)>) = match self {
            EventGroup::Core => ("events.k8s.io/v1", RENAMES.to_vec()),
            EventGroup::EventsV1 => ("v1", RENAMES.iter().map(|(c, v)| (*v, *c)).collect()),
        };
        for (from, to) in renames {
            if let Some(value) = map.remove(from) {
                map.insert(to.to_owned(), value);
            }
        }
        if map.contains_key("apiVersion") {
            map.insert(
                "apiVersion".to_owned(),
                Value::String(api_version.to_owned()),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn conversion_renames_the_fields_both_ways() {
        let core = json!({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "a.1"},
            "involvedObject": {"name": "a"}, "message": "m", "count": 2,
            "reportingComponent": "c", "reason": "R",
        });
        let v1 = EventGroup::Core.convert(&core);
        assert_eq!(
            v1,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "a.1"},
                "regarding": {"name": "a"}, "note": "m", "deprecatedCount": 2,
                "reportingController": "c", "reason": "R",
            })
        );
        assert_eq!(EventGroup::EventsV1.convert(&v1), core);
    }
}
