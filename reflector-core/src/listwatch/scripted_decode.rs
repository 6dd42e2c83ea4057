//! A scripted [`DecodeItem`] for the tests of the decoders that run on the blocking pool
//! ([`ItemDecoder`](super::list_decoder::ItemDecoder) and the watch decoder's line
//! stream): chosen items are held until the test lets them go, and every decode is
//! recorded, so a test can make batches finish in the order it wants and see what ran
//! where.
//!
//! Nothing here spins. A held decode blocks on a condition variable, and the test waits
//! on the same one for the state it needs ([`Announced::wait_for`]), woken by every
//! change. A passing test therefore never depends on how fast a thread is scheduled:
//! the waits' bound ([`PATIENCE`]) only turns a hang into a failure.

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::Instant;

use super::ListWatchError;
use super::list_decoder::DecodeItem;

// The bound of every wait here: the unit tests' `PATIENCE`. What the tests wait for
// (a blocking-pool thread starting and decoding a few hundred lines of ~110 bytes)
// takes milliseconds, so reaching it means a hang, not a slow machine.
use crate::test_support::PATIENCE;

/// What a [`Scripted`] decoder has seen, under its one lock.
#[derive(Debug, Default)]
pub(crate) struct Script {
    /// The items whose decode waits until they are let go.
    held: BTreeSet<usize>,
    /// Decodes begun, held ones included.
    pub(crate) begun: usize,
    /// The items decoded, in the order they were done.
    pub(crate) done: Vec<usize>,
    /// How many were decoded off the thread that made the decoder.
    pub(crate) pooled: usize,
}

impl Script {
    /// Where item `index` is in the order of decodes done, if it is done.
    pub(crate) fn position(&self, index: usize) -> Option<usize> {
        self.done.iter().position(|&i| i == index)
    }
}

/// A value shared between a test and the threads it drives, every change announced:
/// [`Announced::wait_for`] sleeps until the value is as wanted. `const`-constructible,
/// for decode functions that must be plain `fn`s and so can share only statics.
#[derive(Debug)]
pub(crate) struct Announced<T> {
    value: Mutex<T>,
    changed: Condvar,
}

impl<T> Announced<T> {
    pub(crate) const fn new(value: T) -> Self {
        Announced {
            value: Mutex::new(value),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, T> {
        self.value.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the value and wakes every waiter.
    pub(crate) fn update<R>(&self, update: impl FnOnce(&mut T) -> R) -> R {
        let out = update(&mut self.lock());
        self.changed.notify_all();
        out
    }

    /// Reads the value now.
    pub(crate) fn read<R>(&self, read: impl FnOnce(&T) -> R) -> R {
        read(&self.lock())
    }

    /// Sleeps until `done` holds of the value, for at most [`PATIENCE`]; the value then,
    /// locked, and whether `done` held.
    fn sleep_until(&self, done: impl Fn(&T) -> bool) -> (MutexGuard<'_, T>, bool) {
        let deadline = Instant::now() + PATIENCE;
        let mut value = self.lock();
        while !done(&value) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return (value, false);
            }
            value = self
                .changed
                .wait_timeout(value, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        (value, true)
    }

    /// Blocks the calling thread until `done` holds of the value; panics naming `what`
    /// after [`PATIENCE`].
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&T) -> bool) {
        let (value, held) = self.sleep_until(done);
        drop(value);
        assert!(held, "waited {PATIENCE:?} until {what}");
    }

    /// Blocks the calling thread until `done` holds of the value, or at most
    /// [`PATIENCE`] (then goes on: a decode held by a test that failed), and applies
    /// `then` to the value under the same lock.
    pub(crate) fn wait_then<R>(
        &self,
        done: impl Fn(&T) -> bool,
        then: impl FnOnce(&mut T) -> R,
    ) -> R {
        let (mut value, _) = self.sleep_until(done);
        let out = then(&mut value);
        drop(value);
        self.changed.notify_all();
        out
    }
}

/// Decodes with `D`, holding the items the test chooses and recording each decode.
#[derive(Debug)]
pub(crate) struct Scripted<D> {
    inner: D,
    script: Announced<Script>,
    /// The thread that made the decoder (the test's, which polls the stream).
    home: ThreadId,
}

impl<D> Scripted<D> {
    /// Decodes as `inner` does, holding the items in `held`; with a guard that lets
    /// every item go when it is dropped, so a failing test ends instead of waiting on a
    /// held thread.
    pub(crate) fn new(inner: D, held: impl IntoIterator<Item = usize>) -> (Arc<Self>, LetGo<D>) {
        let scripted = Arc::new(Scripted {
            inner,
            script: Announced::new(Script {
                held: held.into_iter().collect(),
                ..Script::default()
            }),
            home: std::thread::current().id(),
        });
        let guard = LetGo(Arc::clone(&scripted));
        (scripted, guard)
    }

    /// Lets item `index` go on.
    pub(crate) fn let_go(&self, index: usize) {
        self.script.update(|s| s.held.remove(&index));
    }

    /// Reads the script now.
    pub(crate) fn read<T>(&self, read: impl FnOnce(&Script) -> T) -> T {
        self.script.read(read)
    }

    /// Blocks the calling thread until `done` holds of the script (woken at every
    /// change); panics naming `what` after [`PATIENCE`].
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&Script) -> bool) {
        self.script.wait_for(what, done);
    }
}

impl<T, D: DecodeItem<T>> DecodeItem<T> for Scripted<D> {
    fn decode(&self, index: usize, bytes: &[u8]) -> Result<T, ListWatchError> {
        self.script.update(|s| s.begun += 1);
        self.script.wait_then(|s| !s.held.contains(&index), |_| ());
        let item = self.inner.decode(index, bytes);
        let pooled = std::thread::current().id() != self.home;
        self.script.update(|s| {
            s.done.push(index);
            s.pooled += usize::from(pooled);
        });
        item
    }

    fn is_last(item: &T) -> bool {
        D::is_last(item)
    }

    const WHAT: &'static str = D::WHAT;
}

/// Lets every held item of a [`Scripted`] decoder go when dropped: however a test
/// ends, no pool thread stays held (the runtime's shutdown waits for them).
#[derive(Debug)]
pub(crate) struct LetGo<D>(Arc<Scripted<D>>);

impl<D> Drop for LetGo<D> {
    fn drop(&mut self) {
        self.0.script.update(|s| s.held.clear());
    }
}

/// Blocks the calling thread until `done` holds, for at most [`PATIENCE`]: for what no
/// script announces (a batch's task letting go of what it shares, just after its last
/// decode). Panics naming `what`.
pub(crate) fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "waited {PATIENCE:?} until {what}"
        );
        std::thread::yield_now();
    }
}
