//! The correlator's state: events with the same series key within the window are one
//! Event object whose `series` grows, as client-go's `tools/events` broadcaster keeps
//! them.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as EventObject, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::Event;
use super::event::EventType;
use super::object_id::ReferenceKey;

/// What makes two events one series, as client-go's `tools/events` `eventKey`: the
/// type, reason and action, and the regarding and related references, every field
/// compared (`resourceVersion` and `fieldPath` included). Not the note: a repeat with
/// another note joins the series, whose Event keeps the first note. (The reporting
/// controller and instance, also in client-go's key, are the recorder's own.)
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SeriesKey {
    regarding: ReferenceKey,
    /// No related object keys as an empty reference, as in client-go.
    related: ReferenceKey,
    type_: EventType,
    reason: String,
    action: String,
}

/// Whether and how far the API server has the Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// Not created yet (or to be created again: it was gone on the server).
    No,
    /// Created, with `series.count` (1 without a series) as last written.
    Count(i32),
}

/// One Event object and the occurrences it stands for.
#[derive(Debug)]
pub(crate) struct Series {
    /// The object as first created (without `series`).
    pub(crate) object: EventObject,
    /// Occurrences seen.
    pub(crate) count: i32,
    /// When the last one was seen (wall clock, for `series.lastObservedTime`).
    pub(crate) last_observed_time: Timestamp,
    /// When the last one was seen (tokio clock, for the window).
    last_seen: Instant,
    /// What the server has.
    pub(crate) written: Written,
    /// Failed write attempts since the last success.
    pub(crate) attempts: u32,
}

impl Series {
    /// Whether the server lacks something: the object, or occurrences since the
    /// last write.
    pub(crate) fn is_dirty(&self) -> bool {
        self.written != Written::Count(self.count)
    }

    /// Occurrences the server does not know about yet.
    pub(crate) fn unwritten(&self) -> u64 {
        let written = match self.written {
            Written::No => 0,
            Written::Count(n) => n,
        };
        u64::try_from(self.count.saturating_sub(written)).unwrap_or(0)
    }

    /// The `series` to write: none for a single occurrence.
    pub(crate) fn series(&self) -> Option<EventSeries> {
        (self.count > 1).then_some(EventSeries {
            count: self.count,
            last_observed_time: MicroTime(self.last_observed_time),
        })
    }

    /// The whole object to create, `series` included.
    pub(crate) fn to_create(&self) -> EventObject {
        EventObject {
            series: self.series(),
            ..self.object.clone()
        }
    }
}

/// The Events a recorder has written (or is about to), by [`SeriesKey`]. Lives in the
/// writer task only, so it needs no lock.
#[derive(Debug)]
pub(crate) struct SeriesCache {
    window: Duration,
    capacity: usize,
    reporting_controller: String,
    reporting_instance: String,
    series: HashMap<SeriesKey, Series>,
    /// The last name suffix handed out (Unix nanoseconds), so two Events made in the
    /// same nanosecond still get distinct names.
    last_suffix: i128,
}

impl SeriesCache {
    pub(crate) fn new(
        window: Duration,
        capacity: usize,
        reporting_controller: String,
        reporting_instance: String,
    ) -> Self {
        SeriesCache {
            window,
            capacity: capacity.max(1),
            reporting_controller,
            reporting_instance,
            series: HashMap::new(),
            last_suffix: 0,
        }
    }

    /// Records one occurrence: the series of an event with the same [`SeriesKey`] seen
    /// within the window grows (its Event keeps its first note); otherwise a new Event
    /// object starts.
    pub(crate) fn observe(
        &mut self,
        event: Event,
        regarding: ObjectReference,
        now: Instant,
        wall: Timestamp,
    ) {
        let key = SeriesKey {
            regarding: ReferenceKey::of(&regarding),
            related: ReferenceKey::of(
                event
                    .related
                    .as_ref()
                    .unwrap_or(&ObjectReference::default()),
            ),
            type_: event.type_,
            reason: event.reason.clone(),
            action: event.action.clone(),
        };
        if let Some(series) = self.series.get_mut(&key)
            && now.saturating_duration_since(series.last_seen) <= self.window
        {
            series.count = series.count.saturating_add(1);
            series.last_seen = now;
            series.last_observed_time = wall;
            return;
        }
        let object = self.new_object(event, regarding, wall);
        self.series.insert(
            key,
            Series {
                object,
                count: 1,
                last_observed_time: wall,
                last_seen: now,
                written: Written::No,
                attempts: 0,
            },
        );
        if self.series.len() > self.capacity {
            self.evict(now);
        }
    }

    fn new_object(
        &mut self,
        event: Event,
        regarding: ObjectReference,
        wall: Timestamp,
    ) -> EventObject {
        let suffix = wall.as_nanosecond().max(self.last_suffix + 1);
        self.last_suffix = suffix;
        let name = format!(
            "{}.{suffix:x}",
            regarding.name.as_deref().unwrap_or_default()
        );
        let namespace = regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        EventObject {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(wall)),
            type_: Some(event.type_.as_str().to_owned()),
            reason: Some(event.reason),
            action: Some(event.action),
            note: event.note,
            regarding: Some(regarding),
            related: event.related,
            reporting_controller: Some(self.reporting_controller.clone()),
            reporting_instance: Some(self.reporting_instance.clone()),
            ..EventObject::default()
        }
    }

    /// Forgets series whose window has passed and that the server has in full; if
    /// still over capacity, the least recently seen of those written in full.
    fn evict(&mut self, now: Instant) {
        let window = self.window;
        self.series
            .retain(|_, s| s.is_dirty() || now.saturating_duration_since(s.last_seen) <= window);
        while self.series.len() > self.capacity {
            let oldest = self
                .series
                .iter()
                .filter(|(_, s)| !s.is_dirty())
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(key) => {
                    self.series.remove(&key);
                }
                None => break,
            }
        }
    }

    /// The keys of the series the server lacks something of.
    pub(crate) fn dirty(&self) -> Vec<SeriesKey> {
        self.series
            .iter()
            .filter(|(_, s)| s.is_dirty())
            .map(|(k, _)| k.clone())
            .collect()
    }

    pub(crate) fn get_mut(&mut self, key: &SeriesKey) -> Option<&mut Series> {
        self.series.get_mut(key)
    }

    pub(crate) fn remove(&mut self, key: &SeriesKey) {
        self.series.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regarding(name: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("ConfigMap".into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn identical_events_grow_one_series_until_the_window_passes() {
        let window = Duration::from_secs(360);
        let mut cache = SeriesCache::new(window, 10, "c".into(), "c-0".into());
        let event = || Event::normal("Reconciled", "Reconcile");
        for _ in 0..3 {
            cache.observe(event(), regarding("a"), Instant::now(), Timestamp::now());
        }
        let dirty = cache.dirty();
        assert_eq!(dirty.len(), 1);
        let series = cache.get_mut(&dirty[0]).unwrap();
        assert_eq!(series.count, 3);
        assert_eq!(series.to_create().series.map(|s| s.count), Some(3));
        // Other objects, and the same object at another resourceVersion (client-go's
        // key holds the whole reference), are other Events; cluster-scoped ones go
        // to `default`.
        cache.observe(event(), regarding("b"), Instant::now(), Timestamp::now());
        let mut newer = regarding("a");
        newer.resource_version = Some("8".into());
        cache.observe(event(), newer, Instant::now(), Timestamp::now());
        assert_eq!(cache.dirty().len(), 3);
        tokio::time::advance(window + Duration::from_secs(1)).await;
        cache.observe(event(), regarding("a"), Instant::now(), Timestamp::now());
        let counts: Vec<i32> = cache
            .dirty()
            .iter()
            .map(|k| cache.series[k].count)
            .collect();
        assert_eq!(
            counts.iter().sum::<i32>(),
            3,
            "the late one starts anew: {counts:?}"
        );
        assert!(
            cache
                .series
                .values()
                .all(|s| s.object.metadata.namespace.as_deref() == Some("default"))
        );
    }

    /// client-go's series key has no note: a repeat about the same object with the
    /// same type, reason and action but another note joins the series (count 2), and
    /// the Event keeps the note it was created with. Another reason, action or type,
    /// or another related object, is another series.
    #[tokio::test(start_paused = true)]
    async fn a_repeat_with_another_note_joins_the_series_and_keeps_the_first_note() {
        let mut cache = SeriesCache::new(Duration::from_secs(360), 10, "c".into(), "c-0".into());
        let first = Event::warning("ReconcileFailed", "Reconcile").note("500 from the API");
        let second = Event::warning("ReconcileFailed", "Reconcile").note("409 conflict");
        cache.observe(first, regarding("a"), Instant::now(), Timestamp::now());
        tokio::time::advance(Duration::from_secs(10)).await;
        cache.observe(second, regarding("a"), Instant::now(), Timestamp::now());
        let dirty = cache.dirty();
        assert_eq!(dirty.len(), 1, "one series");
        let created = cache.series[&dirty[0]].to_create();
        assert_eq!(created.series.map(|s| s.count), Some(2));
        assert_eq!(created.note.as_deref(), Some("500 from the API"));

        let others = [
            Event::warning("ReconcileFailed", "Delete"),
            Event::warning("Failed", "Reconcile"),
            Event::normal("ReconcileFailed", "Reconcile"),
            Event::warning("ReconcileFailed", "Reconcile").related(regarding("b")),
        ];
        for other in others {
            cache.observe(other, regarding("a"), Instant::now(), Timestamp::now());
        }
        assert_eq!(cache.dirty().len(), 5);
    }
}
