//! How a write is run around its admission webhooks.
//!
//! The server's writes are synchronous functions under the state lock, and webhooks are
//! HTTP calls that must not hold it. So a write that may call webhooks runs its
//! synchronous handler up to three times, each time with a [`Capture`] that the state
//! consults at two points:
//!
//! * the **admission point**, where the real server runs mutating admission (a create's
//!   or an update's submitted object, a delete's stored object): the first pass records
//!   what it sees ([`Seen`]); later passes put the mutating webhooks' result there;
//! * the **commit**, where the object would be stored: the first two passes record it
//!   ([`Pending`]) and store nothing; the last stores exactly what the validating webhooks
//!   were shown, provided the stored object has not moved meanwhile.
//!
//! A pass that finds the state moved (another write in between) is marked stale and the
//! whole sequence starts again, as the real server's update retries admission on a
//! conflict.
//!
//! The capture reaches the handler through a thread-local slot: the handler runs on the
//! calling thread without awaiting, and `Shared::write_state` moves the capture into the
//! locked state and back out when the guard drops.

use std::cell::RefCell;
use std::sync::Arc;

use kube::core::admission::Operation;
use serde_json::{Map, Value};

use crate::state::{EventType, ResourceId};

/// Which pass of a webhook-admitted write is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Records what reaches the admission point; stores nothing.
    Record,
    /// Puts the mutating webhooks' object at the admission point; records what the write
    /// would store; stores nothing.
    Replay,
    /// Puts the mutated object at the admission point and stores what `Replay` recorded.
    Commit,
}

/// What reached the admission point: the attributes the webhooks are matched against and
/// sent.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// CREATE, UPDATE or DELETE.
    pub operation: Operation,
    /// The resource written.
    pub rid: ResourceId,
    /// `status` or `scale`; empty for the object itself.
    pub subresource: &'static str,
    /// The object's name (empty for a create by `generateName`).
    pub name: String,
    /// The object's namespace, for namespaced resources.
    pub namespace: Option<String>,
    /// The object submitted (None on DELETE).
    pub object: Option<Value>,
    /// The stored object (UPDATE and DELETE).
    pub old_object: Option<Value>,
    /// The labels of the object's namespace (of the object itself for a Namespace); None
    /// for cluster-scoped objects.
    pub namespace_labels: Option<Map<String, Value>>,
    /// `group`, `version` and `kind` of the object sent, when it is not the resource's own
    /// (`autoscaling/v1` `Scale` for the `scale` subresource).
    pub kind: Option<[&'static str; 3]>,
    /// For the `scale` subresource: where the object keeps its Scale, so the validating
    /// webhooks are shown the Scale of what would be stored.
    pub scale: Option<crate::crd::ScalePaths>,
}

/// A write as the commit was about to store it.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub rid: ResourceId,
    pub key: Arc<str>,
    pub value: Value,
    pub event_type: EventType,
    /// The resourceVersion stored under `key` then (None: nothing was).
    pub base_rv: Option<u64>,
}

/// One pass's instructions and findings; lives in `State::admission` while the pass holds
/// the lock.
#[derive(Debug, Clone)]
pub(crate) struct Capture {
    pub pass: Pass,
    /// Record: filled at the admission point. Replay and Commit: what the first pass saw,
    /// to check that the state has not moved.
    pub seen: Option<Seen>,
    /// Replay and Commit: the object the mutating webhooks left (None: unchanged).
    pub mutated: Option<Value>,
    /// Record and Replay: filled at the commit. Commit: what to store.
    pub pending: Option<Pending>,
    /// Whether the admission point was passed (only the first one of a request counts).
    pub point_done: bool,
    /// Whether the commit was passed (only the first one of a request counts).
    pub commit_done: bool,
    /// Whether this pass found the state moved since the first one.
    pub stale: bool,
}

impl Capture {
    pub(crate) fn record() -> Self {
        Self {
            pass: Pass::Record,
            seen: None,
            mutated: None,
            pending: None,
            point_done: false,
            commit_done: false,
            stale: false,
        }
    }

    pub(crate) fn replay(seen: Seen, mutated: Option<Value>) -> Self {
        Self {
            pass: Pass::Replay,
            seen: Some(seen),
            mutated,
            ..Self::record()
        }
    }

    pub(crate) fn commit(seen: Seen, mutated: Option<Value>, pending: Option<Pending>) -> Self {
        Self {
            pass: Pass::Commit,
            seen: Some(seen),
            mutated,
            pending,
            ..Self::record()
        }
    }

    /// Whether this pass must store nothing.
    pub(crate) fn dry(&self) -> bool {
        self.pass != Pass::Commit
    }
}

thread_local! {
    /// The capture of the pass running on this thread, between [`run`] and the handler's
    /// `Shared::write_state`.
    static CURRENT: RefCell<Option<Capture>> = const { RefCell::new(None) };
}

/// Runs one pass of a write's handler with `capture`; returns the handler's result and
/// the capture as the pass left it.
pub(crate) fn run<R>(capture: Capture, handler: impl FnOnce() -> R) -> (R, Capture) {
    /// Empties the slot however the handler ends (a panic included), so no later request
    /// on this thread finds a capture that is not its own.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            CURRENT.with(|slot| slot.borrow_mut().take());
        }
    }
    CURRENT.with(|slot| *slot.borrow_mut() = Some(capture.clone()));
    let clear = Clear;
    let result = handler();
    let after = CURRENT.with(|slot| slot.borrow_mut().take());
    drop(clear);
    (result, after.unwrap_or(capture))
}

/// The capture of the pass running on this thread, moved out (for the locked state).
pub(crate) fn take() -> Option<Capture> {
    CURRENT.with(|slot| slot.borrow_mut().take())
}

/// Gives the capture back once the handler drops the lock.
pub(crate) fn restore(capture: Option<Capture>) {
    if capture.is_some() {
        CURRENT.with(|slot| *slot.borrow_mut() = capture);
    }
}
