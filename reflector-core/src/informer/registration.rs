//! [`Registration`]: the handle of one event handler on one informer.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Says whether the informer itself has synced.
pub(crate) type UpstreamSynced = Arc<dyn Fn() -> bool + Send + Sync>;

/// Returned by `add_event_handler`: removes the handler and tells whether it has
/// seen the informer's initial state, as client-go's
/// `ResourceEventHandlerRegistration`.
///
/// # Example
/// ```no_run
/// # use reflector_core::informer::{SharedIndexInformer, EventHandlerFns};
/// # use k8s_openapi::api::core::v1::Pod;
/// # fn f(informer: SharedIndexInformer<Pod>) {
/// let reg = informer.add_event_handler(EventHandlerFns::new()).unwrap();
/// if reg.has_synced() { /* the handler has seen every object of the initial list */ }
/// informer.remove_event_handler(&reg);
/// # }
/// ```
#[derive(Clone)]
pub struct Registration {
    pub(crate) informer_id: u64,
    pub(crate) listener_id: u64,
    pending_initial: Arc<AtomicUsize>,
    upstream_synced: UpstreamSynced,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("informer_id", &self.informer_id)
            .field("listener_id", &self.listener_id)
            .field("has_synced", &self.has_synced())
            .finish()
    }
}

impl Registration {
    pub(crate) fn new(
        informer_id: u64,
        listener_id: u64,
        pending_initial: Arc<AtomicUsize>,
        upstream_synced: UpstreamSynced,
    ) -> Self {
        Registration {
            informer_id,
            listener_id,
            pending_initial,
            upstream_synced,
        }
    }

    /// True once the informer has synced and this handler has handled every object
    /// of the initial state (for a handler added late: every synthetic add).
    #[must_use]
    pub fn has_synced(&self) -> bool {
        (self.upstream_synced)() && self.pending_initial.load(Ordering::SeqCst) == 0
    }
}
