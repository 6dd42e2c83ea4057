//! What a child's reconciles record: when each change's reconcile started, relative to
//! the change's stamp, and which objects were reconciled at least once.
//!
//! Two latencies: `samples`, one per change a reconcile saw (a change overwritten by a
//! later one before its reconcile started is not among them), and `every_change`, one
//! per change written, counted until a reconcile saw it or a later change of its
//! object; a controller that coalesces a backlog's changes looks better by the first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

/// The data key the writer stamps each change in, and the reconcile reads.
pub const STAMP: &str = "stamp";

/// Nanoseconds since the epoch on the system clock (both processes read the same one).
pub fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// What the reconciles saw (`std` mutex: never held across an await).
#[derive(Default)]
pub struct Record {
    /// Guarded by its mutex: the state below.
    state: Mutex<State>,
    /// Woken on every reconcile.
    pub changed: Notify,
}

#[derive(Default)]
struct State {
    /// Per object: the latest stamp a reconcile saw.
    last: HashMap<String, u64>,
    /// Start latencies of the changes seen since `take`, in nanoseconds.
    samples: Vec<u64>,
    /// Reconciles since `take`.
    reconciles: u64,
    /// Per object, since `take`: each reconcile's start and the stamp it saw, in the
    /// order they started.
    starts: HashMap<String, Vec<(u64, u64)>>,
    /// Per object, the stamp a reconcile has yet to see (`expect_seen`); removed when
    /// one sees it or a later one.
    unseen: HashMap<String, u64>,
}

impl Record {
    /// A reconcile of `name` started, seeing `stamp` (0: the object was never changed).
    pub fn started(&self, name: &str, stamp: u64) {
        let now = now_nanos();
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.reconciles += 1;
            let starts = state.starts.entry(name.to_owned()).or_default();
            starts.push((now, stamp));
            if state.unseen.get(name).is_some_and(|s| stamp >= *s) {
                state.unseen.remove(name);
            }
            let last = state.last.entry(name.to_owned()).or_insert(0);
            if stamp > *last {
                *last = stamp;
                state.samples.push(now.saturating_sub(stamp));
            }
        }
        self.changed.notify_waiters();
    }

    /// From now on [`unseen`](Self::unseen) counts the objects of `changes` (object,
    /// stamp) whose last change no reconcile has seen yet.
    pub fn expect_seen(&self, changes: &[(String, u64)]) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut unseen = HashMap::new();
        for (name, stamp) in changes {
            if state.last.get(name).is_none_or(|last| last < stamp) {
                let latest = unseen.entry(name.clone()).or_insert(*stamp);
                *latest = (*latest).max(*stamp);
            }
        }
        state.unseen = unseen;
    }

    /// Objects of the last [`expect_seen`](Self::expect_seen) whose last change no
    /// reconcile has seen yet.
    pub fn unseen(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unseen
            .len()
    }

    /// Objects reconciled at least once.
    pub fn objects(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last
            .len()
    }

    /// The latest stamp a reconcile of `name` saw.
    pub fn last(&self, name: &str) -> u64 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.last.get(name).copied().unwrap_or(0)
    }

    /// Reconciles since the last `take`.
    pub fn reconciles(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reconciles
    }

    /// The samples and the reconcile count since the last call, and starts over.
    pub fn take(&self) -> (Vec<u64>, u64) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let reconciles = std::mem::take(&mut state.reconciles);
        state.starts.clear();
        (std::mem::take(&mut state.samples), reconciles)
    }

    /// For every change of `changes` (object, stamp), written since the last `take`:
    /// how long until the start of the first reconcile that saw it or a later change of
    /// its object, in nanoseconds, sorted (a change a reconcile never saw itself, because
    /// a later one came before its reconcile, counts until that reconcile); and how
    /// many no reconcile saw.
    pub fn every_change(&self, changes: &[(String, u64)]) -> (Vec<u64>, usize) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut latencies = Vec::with_capacity(changes.len());
        let mut unseen = 0;
        for (name, stamp) in changes {
            let starts = state.starts.get(name).map_or(&[][..], Vec::as_slice);
            match starts.iter().find(|(_, seen)| seen >= stamp) {
                Some((start, _)) => latencies.push(start.saturating_sub(*stamp)),
                None => unseen += 1,
            }
        }
        latencies.sort_unstable();
        (latencies, unseen)
    }

    /// Waits until `done` holds, woken by reconciles; false after `timeout`.
    ///
    /// # Cancel safety
    /// Cancel safe: it only waits.
    pub async fn wait_until(
        &self,
        timeout: std::time::Duration,
        mut done: impl FnMut(&Self) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.changed.notified();
            if done(self) {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return done(self);
            }
        }
    }
}

/// The `q` quantile (0..=1) of `sorted` nanoseconds, in milliseconds.
pub fn quantile_ms(sorted: &[u64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1] as f64 / 1e6)
}
