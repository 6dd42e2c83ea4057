//! [`StoreVersion`]: the resource version a cache has reached, and the waits for it
//! (client-go's `LastStoreSyncResourceVersion`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// `numeric` before any version: a version of 0 is never an object's.
const NONE: u64 = 0;
/// `numeric` once the version is not an integer (then in `opaque`).
const OPAQUE: u64 = u64::MAX;

/// Called once when the version reaches a waiter's target (or never).
pub(crate) type Wake = Box<dyn FnOnce() + Send>;

/// Where a cache stands against a resource version, compared as integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reached {
    /// The cache has seen everything through the version (or later).
    Yes,
    /// Not yet (or the cache has no version yet).
    No,
    /// A version is not an integer, so cannot be compared: counts as reached (a
    /// wait on it never blocks, as client-go's comparison fails open).
    Incomparable,
}

impl Reached {
    /// Whether a wait for the version is over.
    pub(crate) fn is_over(self) -> bool {
        self != Reached::No
    }
}

/// The resource version a cache has reached: every list, event and bookmark the
/// reflector handed over through it is applied. Read lock-free ([`reached`]); set
/// after each applied batch; waiters registered with [`wake_at`] are called when it
/// reaches their target — woken, never polled.
///
/// [`reached`]: StoreVersion::reached
/// [`wake_at`]: StoreVersion::wake_at
pub(crate) struct StoreVersion {
    /// The version when it is an integer; [`NONE`] before the first, [`OPAQUE`] when
    /// the last was not an integer. Stored after the cache holds what it stands for
    /// (so a reader that sees it sees that state too).
    numeric: AtomicU64,
    /// The last version, when it was not an integer. Guarded by its own mutex, held
    /// only to read or write it.
    opaque: Mutex<String>,
    /// The smallest target in `waiters` (`u64::MAX` when none): a set that does not
    /// reach it skips the waiters' lock.
    min_target: AtomicU64,
    /// Guarded by its own mutex, never held while a waiter is called.
    waiters: Mutex<Waiters>,
}

/// The waits, by target. Guarded by `StoreVersion::waiters`.
#[derive(Default)]
struct Waiters {
    by_target: BTreeMap<u64, Vec<Wake>>,
    /// Set by `close`: no wait is registered any more.
    closed: bool,
}

impl Default for StoreVersion {
    fn default() -> Self {
        StoreVersion {
            numeric: AtomicU64::new(NONE),
            opaque: Mutex::new(String::new()),
            min_target: AtomicU64::new(u64::MAX),
            waiters: Mutex::new(Waiters::default()),
        }
    }
}

impl fmt::Debug for StoreVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StoreVersion").field(&self.get()).finish()
    }
}

impl StoreVersion {
    fn lock_waiters(&self) -> MutexGuard<'_, Waiters> {
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The version, `None` before the first.
    pub(crate) fn get(&self) -> Option<String> {
        match self.numeric.load(Ordering::Acquire) {
            NONE => None,
            OPAQUE => Some(
                self.opaque
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone(),
            ),
            n => Some(n.to_string()),
        }
    }

    /// The version as an integer: `None` before the first or when it is not one.
    pub(crate) fn numeric(&self) -> Option<u64> {
        match self.numeric.load(Ordering::Acquire) {
            NONE | OPAQUE => None,
            n => Some(n),
        }
    }

    /// Whether the cache has reached `target` (a lock-free read).
    pub(crate) fn reached(&self, target: u64) -> Reached {
        match self.numeric.load(Ordering::Acquire) {
            NONE => Reached::No,
            OPAQUE => Reached::Incomparable,
            n if n >= target => Reached::Yes,
            _ => Reached::No,
        }
    }

    /// Sets the version (call once the cache holds everything through it) and calls
    /// the waiters it reached. An empty version changes nothing.
    pub(crate) fn set(&self, resource_version: &str) {
        if resource_version.is_empty() {
            return;
        }
        let n = match resource_version.parse::<u64>() {
            Ok(n) if n != OPAQUE => n,
            _ => {
                resource_version
                    .clone_into(&mut self.opaque.lock().unwrap_or_else(PoisonError::into_inner));
                OPAQUE
            }
        };
        // SeqCst with `wake_at`'s store of `min_target` and its load here: of a
        // set and a registration racing, at least one sees the other.
        self.numeric.store(n, Ordering::SeqCst);
        if n >= self.min_target.load(Ordering::SeqCst) {
            self.wake_reached(n);
        }
    }

    /// Calls `wake` once the version reaches `target`: at once (on this thread) if it
    /// already has, or cannot be compared; else on the thread that sets a version
    /// reaching it, or [`close`](Self::close)s. Answers false (and drops `wake`)
    /// once closed.
    pub(crate) fn wake_at(&self, target: u64, wake: Wake) -> bool {
        {
            let mut waiters = self.lock_waiters();
            if waiters.closed {
                return false;
            }
            waiters.by_target.entry(target).or_default().push(wake);
            self.min_target.fetch_min(target, Ordering::SeqCst);
        }
        let now = self.numeric.load(Ordering::SeqCst);
        if now != NONE && now >= target {
            self.wake_reached(now);
        }
        true
    }

    /// Calls every waiter and refuses new ones: the cache will not move any more.
    pub(crate) fn close(&self) {
        let woken = {
            let mut waiters = self.lock_waiters();
            waiters.closed = true;
            self.min_target.store(u64::MAX, Ordering::SeqCst);
            std::mem::take(&mut waiters.by_target)
        };
        woken.into_values().flatten().for_each(|wake| wake());
    }

    /// Calls the waiters whose target is at most `n` ([`OPAQUE`]: every one).
    fn wake_reached(&self, n: u64) {
        let woken = {
            let mut waiters = self.lock_waiters();
            let later = match n.checked_add(1) {
                Some(next) => waiters.by_target.split_off(&next),
                None => BTreeMap::new(),
            };
            let woken = std::mem::replace(&mut waiters.by_target, later);
            let min = waiters.by_target.keys().next().copied().unwrap_or(u64::MAX);
            self.min_target.store(min, Ordering::SeqCst);
            woken
        };
        woken.into_values().flatten().for_each(|wake| wake());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn counter(count: &Arc<AtomicUsize>) -> Wake {
        let count = Arc::clone(count);
        Box::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        })
    }

    /// Versions compare as integers; none yet is not reached; a version that is
    /// not an integer fails open.
    #[test]
    fn stale_store_version_compares_integers_and_fails_open() {
        let v = StoreVersion::default();
        assert_eq!(v.get(), None);
        assert_eq!(v.reached(1), Reached::No, "no version yet");
        v.set("99");
        assert_eq!(v.reached(100), Reached::No);
        v.set("100");
        assert_eq!(v.reached(100), Reached::Yes);
        assert_eq!(v.reached(99), Reached::Yes);
        assert_eq!(v.numeric(), Some(100));
        v.set("");
        assert_eq!(
            v.get().as_deref(),
            Some("100"),
            "an empty version is ignored"
        );
        v.set("abc");
        assert_eq!(v.get().as_deref(), Some("abc"));
        assert_eq!(v.numeric(), None);
        assert_eq!(v.reached(u64::MAX - 1), Reached::Incomparable);
        assert!(v.reached(7).is_over());
    }

    /// Waiters are called once, when a set reaches their target (at once if it
    /// already has); those beyond it wait on; `close` calls the rest and refuses
    /// new ones.
    #[test]
    fn stale_store_version_wakes_waiters_at_their_target() {
        let v = StoreVersion::default();
        let (at_5, at_9, early) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        assert!(v.wake_at(5, counter(&at_5)));
        assert!(v.wake_at(9, counter(&at_9)));
        v.set("4");
        assert_eq!(at_5.load(Ordering::SeqCst), 0);
        v.set("7");
        assert_eq!(at_5.load(Ordering::SeqCst), 1);
        assert_eq!(at_9.load(Ordering::SeqCst), 0);
        v.set("8");
        assert_eq!(at_5.load(Ordering::SeqCst), 1, "called once");
        assert!(v.wake_at(6, counter(&early)));
        assert_eq!(early.load(Ordering::SeqCst), 1, "already reached: at once");
        v.close();
        assert_eq!(at_9.load(Ordering::SeqCst), 1, "close calls the rest");
        assert!(!v.wake_at(20, counter(&early)));
        assert_eq!(early.load(Ordering::SeqCst), 1);
    }

    /// A version that is not an integer calls every waiter (fails open).
    #[test]
    fn stale_store_version_not_an_integer_wakes_everyone() {
        let v = StoreVersion::default();
        let woken = Arc::new(AtomicUsize::new(0));
        assert!(v.wake_at(u64::MAX - 1, counter(&woken)));
        v.set("not-a-number");
        assert_eq!(woken.load(Ordering::SeqCst), 1);
        assert!(v.wake_at(3, counter(&woken)));
        assert_eq!(woken.load(Ordering::SeqCst), 2, "at once");
    }
}
