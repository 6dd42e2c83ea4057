//! Fans notifications out to every listener, as client-go's `sharedProcessor`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::notification::{Batch, Notification};
use super::processor_listener::ProcessorListener;

/// Guarded by `SharedProcessor::state`.
struct ProcessorState<K> {
    /// Every listener and whether it is resyncing in the current resync round.
    listeners: Vec<(Arc<ProcessorListener<K>>, bool)>,
    started: bool,
    /// Tasks of started listeners, awaited on stop.
    tasks: Vec<JoinHandle<()>>,
}

pub(crate) struct SharedProcessor<K> {
    /// One lock for the listener set; never held across an await.
    state: Mutex<ProcessorState<K>>,
}

impl<K: Send + Sync + 'static> SharedProcessor<K> {
    pub(crate) fn new() -> Self {
        SharedProcessor {
            state: Mutex::new(ProcessorState {
                listeners: Vec::new(),
                started: false,
                tasks: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ProcessorState<K>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a listener, starting its task if the processor runs.
    pub(crate) fn add_listener(&self, listener: Arc<ProcessorListener<K>>) {
        let mut st = self.lock();
        if st.started
            && let Some(task) = listener.spawn()
        {
            st.tasks.push(task);
        }
        st.listeners.push((listener, false));
    }

    /// Removes the listener `id` and stops its task; unknown ids are ignored.
    pub(crate) fn remove_listener(&self, id: u64) {
        let mut st = self.lock();
        if let Some(pos) = st.listeners.iter().position(|(l, _)| l.id == id) {
            let (listener, _) = st.listeners.remove(pos);
            listener.halt();
        }
    }

    /// Whether listener `id` is registered.
    pub(crate) fn has_listener(&self, id: u64) -> bool {
        self.lock().listeners.iter().any(|(l, _)| l.id == id)
    }

    /// Sends a batch to every listener: all of it to listeners due for a resync, the
    /// entries that are not resyncs to the others (a listener with nothing to take
    /// is skipped).
    pub(crate) fn distribute_batch(&self, items: &Batch<K>) {
        let all_sync = items.iter().all(Notification::is_sync);
        let st = self.lock();
        for (listener, syncing) in &st.listeners {
            if *syncing || !all_sync {
                listener.add_batch(std::sync::Arc::clone(items), *syncing);
            }
        }
    }

    /// Starts every listener's task.
    pub(crate) fn run(&self) {
        let mut st = self.lock();
        st.started = true;
        let new_tasks: Vec<_> = st.listeners.iter().filter_map(|(l, _)| l.spawn()).collect();
        st.tasks.extend(new_tasks);
    }

    /// Stops every listener and returns their tasks, to be awaited.
    pub(crate) fn stop(&self) -> Vec<JoinHandle<()>> {
        let mut st = self.lock();
        for (l, _) in &st.listeners {
            l.halt();
        }
        std::mem::take(&mut st.tasks)
    }

    /// Marks which listeners are due for a resync now; true if any is.
    pub(crate) fn should_resync(&self) -> bool {
        let now = Instant::now();
        let mut st = self.lock();
        let mut needed = false;
        for (listener, syncing) in &mut st.listeners {
            *syncing = listener.should_resync(now);
            if *syncing {
                needed = true;
                listener.determine_next_resync(now);
            }
        }
        needed
    }

    /// Re-derives every listener's effective period from a new check period.
    pub(crate) fn resync_check_period_changed(&self, check: Duration) {
        let st = self.lock();
        for (listener, _) in &st.listeners {
            listener.set_resync_period(determine_resync_period(
                listener.requested_resync_period,
                check,
            ));
        }
    }
}

#[cfg(test)]
impl<K: Send + Sync + 'static> SharedProcessor<K> {
    pub(crate) fn listener_resync_period(&self, id: u64) -> Option<Duration> {
        self.lock()
            .listeners
            .iter()
            .find(|(l, _)| l.id == id)
            .map(|(l, _)| l.resync_period())
    }

    pub(crate) fn listener_count(&self) -> usize {
        self.lock().listeners.len()
    }
}

/// The effective resync period of a handler that asked for `desired` on an informer
/// that checks every `check`, as client-go's `determineResyncPeriod`.
pub(crate) fn determine_resync_period(desired: Duration, check: Duration) -> Duration {
    if desired.is_zero() {
        return desired;
    }
    if check.is_zero() {
        tracing::warn!(
            ?desired,
            "this informer does not resync; ignoring the handler's resync period"
        );
        return Duration::ZERO;
    }
    if desired < check {
        tracing::warn!(
            ?desired,
            ?check,
            "resync period raised to the informer's check period"
        );
        return check;
    }
    desired
}
