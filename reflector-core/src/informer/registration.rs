//! [`Registration`]: the handle of one event handler on one informer.

use std::fmt;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

use super::InformerError;

/// Says whether the informer itself has synced, and whether it has stopped.
pub(crate) trait Upstream: Send + Sync {
    fn has_synced(&self) -> bool;
    fn is_stopped(&self) -> bool;
}

/// Initial-list adds queued to one listener but not yet handled. Shared by the
/// listener (which counts) and its registration (which waits for zero).
pub(crate) struct PendingInitial {
    count: AtomicUsize,
    /// The informer's progress signal: woken when the count drops to zero.
    progress: Arc<Notify>,
}

impl PendingInitial {
    pub(crate) fn new(progress: Arc<Notify>) -> Self {
        PendingInitial {
            count: AtomicUsize::new(0),
            progress,
        }
    }

    pub(crate) fn add(&self, n: usize) {
        self.count.fetch_add(n, Ordering::SeqCst);
    }

    /// Counts `n` adds out; the last one wakes whoever waits for the handler to sync.
    pub(crate) fn sub(&self, n: usize) {
        if n > 0 && self.count.fetch_sub(n, Ordering::SeqCst) == n {
            self.progress.notify_waiters();
        }
    }

    pub(crate) fn get(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

/// Returned by `add_event_handler`: removes the handler and tells whether it has
/// seen the informer's initial state, as client-go's
/// `ResourceEventHandlerRegistration`.
///
/// # Example
/// ```no_run
/// # use reflector::informer::SharedIndexInformer;
/// # use k8s_openapi::api::core::v1::Pod;
/// # async fn f(informer: SharedIndexInformer<Pod>) {
/// let reg = informer.add_event_fn(|_| {}).unwrap();
/// reg.wait_synced().await.unwrap(); // the handler has seen every object of the initial list
/// assert!(reg.has_synced());
/// informer.remove_event_handler(&reg);
/// # }
/// ```
#[derive(Clone)]
pub struct Registration {
    pub(crate) informer_id: u64,
    pub(crate) listener_id: u64,
    pending_initial: Arc<PendingInitial>,
    upstream: Arc<dyn Upstream>,
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
        pending_initial: Arc<PendingInitial>,
        upstream: Arc<dyn Upstream>,
    ) -> Self {
        Registration {
            informer_id,
            listener_id,
            pending_initial,
            upstream,
        }
    }

    /// True once the informer has synced and this handler has handled every object
    /// of the initial state (for a handler added late: every synthetic add).
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.upstream.has_synced() && self.pending_initial.get() == 0
    }

    /// Waits until [`has_synced`](Self::has_synced) is true. Woken by the informer
    /// when it syncs and by the handler's task when it handles its last initial add:
    /// no polling.
    ///
    /// # Errors
    /// [`InformerError::StoppedBeforeSync`] if the informer stopped first.
    ///
    /// # Cancel safety
    /// Cancel-safe: it only observes. Put it in a `tokio::time::timeout` for a
    /// deadline.
    pub async fn wait_synced(&self) -> Result<(), InformerError> {
        wait_for_progress(
            &self.pending_initial.progress,
            || self.has_synced(),
            || self.upstream.is_stopped(),
        )
        .await
    }
}

/// Waits until `done()` holds, woken by `progress` (`notify_waiters`): registers for
/// the next wake-up before each check, so none is lost between check and wait.
/// [`InformerError::StoppedBeforeSync`] once `stopped()` holds while `done()` does
/// not.
///
/// # Cancel safety
/// Cancel-safe: it only observes.
pub(crate) async fn wait_for_progress(
    progress: &Notify,
    done: impl Fn() -> bool,
    stopped: impl Fn() -> bool,
) -> Result<(), InformerError> {
    loop {
        let mut woken = pin!(progress.notified());
        woken.as_mut().enable();
        if done() {
            return Ok(());
        }
        if stopped() {
            return Err(InformerError::StoppedBeforeSync);
        }
        woken.await;
    }
}
