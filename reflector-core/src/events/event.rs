//! [`Event`]: what a controller reports about an object.

use k8s_openapi::api::core::v1::ObjectReference;

use super::EventError;

/// The longest `reason` and `action` the API server accepts (128 characters).
const REASON_LIMIT: usize = 128;
/// The longest `note` the API server accepts (1 kB).
const NOTE_LIMIT: usize = 1024;

/// What is wrong with a name-like field the API server limits to `limit` characters
/// and requires: `None` when it is fine.
pub(crate) fn length_problem(value: &str, limit: usize) -> Option<String> {
    if value.is_empty() {
        Some("must not be empty".to_owned())
    } else if value.chars().count() > limit {
        Some(format!("must have at most {limit} characters"))
    } else {
        None
    }
}

/// Normal or Warning: the `type` of an Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One occurrence of something a controller wants people to see in
/// `kubectl describe` / `kubectl events`: a type (Normal or Warning), a `reason`
/// (`PascalCase`, shown as *Reason*), the `action` taken (`PascalCase`, e.g.
/// `Reconcile`), an optional human-readable `note` (shown as *Message*) and an optional
/// `related` object. The object it is about (`regarding`), the time, the reporting
/// controller and instance are filled by the [`Recorder`](super::Recorder).
///
/// # Example
/// ```
/// use reflector::events::Event;
///
/// let ok = Event::normal("Reconciled", "Reconcile").note("ConfigMap widget-a is current");
/// let failed = Event::warning("ReconcileFailed", "Reconcile").note("the API server answered 500");
/// # let _ = (ok, failed);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub(crate) type_: EventType,
    pub(crate) reason: String,
    pub(crate) action: String,
    pub(crate) note: Option<String>,
    pub(crate) related: Option<ObjectReference>,
}

impl Event {
    fn new(type_: EventType, reason: impl Into<String>, action: impl Into<String>) -> Self {
        Event {
            type_,
            reason: reason.into(),
            action: action.into(),
            note: None,
            related: None,
        }
    }

    /// A `Normal` event: something happened as it should.
    ///
    /// ```
    /// let e = reflector::events::Event::normal("Created", "Reconcile");
    /// # let _ = e;
    /// ```
    #[must_use]
    pub fn normal(reason: impl Into<String>, action: impl Into<String>) -> Self {
        Self::new(EventType::Normal, reason, action)
    }

    /// A `Warning` event: something went wrong or needs attention.
    ///
    /// ```
    /// let e = reflector::events::Event::warning("Failed", "Reconcile");
    /// # let _ = e;
    /// ```
    #[must_use]
    pub fn warning(reason: impl Into<String>, action: impl Into<String>) -> Self {
        Self::new(EventType::Warning, reason, action)
    }

    /// The human-readable description (at most 1 kB). Unset by default.
    ///
    /// ```
    /// let e = reflector::events::Event::normal("Scaled", "Reconcile").note("3 replicas");
    /// # let _ = e;
    /// ```
    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// A second object the event concerns (e.g. the ConfigMap a Widget's reconcile
    /// wrote). Unset by default.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ObjectReference;
    /// let child = ObjectReference { kind: Some("ConfigMap".into()), name: Some("c".into()), ..Default::default() };
    /// let e = reflector::events::Event::normal("Created", "Reconcile").related(child);
    /// # let _ = e;
    /// ```
    #[must_use]
    pub fn related(mut self, related: ObjectReference) -> Self {
        self.related = Some(related);
        self
    }

    /// Checks what the API server's Event validation would reject.
    pub(crate) fn validate(&self, regarding: &ObjectReference) -> Result<(), EventError> {
        for (field, value) in [("reason", &self.reason), ("action", &self.action)] {
            if let Some(problem) = length_problem(value, REASON_LIMIT) {
                return Err(EventError::invalid_event(field, problem));
            }
        }
        if let Some(note) = &self.note
            && note.len() > NOTE_LIMIT
        {
            return Err(EventError::invalid_event(
                "note",
                format!("must have at most {NOTE_LIMIT} bytes, has {}", note.len()),
            ));
        }
        if regarding.name.as_deref().unwrap_or_default().is_empty() {
            return Err(EventError::invalid_event(
                "regarding.name",
                "must be set: an Event is about a named object",
            ));
        }
        Ok(())
    }
}
