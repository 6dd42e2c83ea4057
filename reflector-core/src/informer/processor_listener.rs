//! One handler's listener: its own unbounded buffer and its own task, so a slow
//! handler never delays another (client-go's `processorListener`).

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::EventHandler;
use super::notification::{Batch, Message, Notification};
use super::registration::PendingInitial;

/// How long a listener pauses after its handler panicked, as client-go's
/// `processorListener.run` (one second).
pub(crate) const SLEEP_AFTER_PANIC: Duration = Duration::from_secs(1);

/// The resync schedule of one listener. Guarded by `ProcessorListener::resync`.
#[derive(Debug)]
struct ResyncSchedule {
    /// The effective period (0: never resync).
    period: Duration,
    next: Instant,
}

/// How a listener's task calls its handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandlerCalls {
    /// Through [`may_block`]: a user's handler is synchronous and may block.
    MayBlock,
    /// Straight on the listener's task: a handler of this crate that never blocks
    /// (it only queues keys), so it does not pay for `block_in_place`, which hands
    /// the worker thread's other tasks to another thread on each call.
    NonBlocking,
}

pub(crate) struct ProcessorListener<K> {
    pub(crate) id: u64,
    handler: Arc<dyn EventHandler<K>>,
    calls: HandlerCalls,
    /// The buffer's sending side; the receiving side is owned by the listener's task.
    tx: mpsc::UnboundedSender<Message<K>>,
    /// Taken once, when the listener's task starts. Guarded by its own mutex.
    rx: Mutex<Option<mpsc::UnboundedReceiver<Message<K>>>>,
    /// The period the handler asked for.
    pub(crate) requested_resync_period: Duration,
    /// Guarded by its own mutex; read by the reflector's resync check.
    resync: Mutex<ResyncSchedule>,
    /// Initial-list adds queued but not yet handled.
    pub(crate) pending_initial: Arc<PendingInitial>,
    /// The informer's count of handler calls that panicked.
    panics: Arc<AtomicU64>,
    /// Wakes the listener's task to stop (on removal or informer stop).
    stop: CancellationToken,
    /// Set before `stop` fires; checked before each notification so none is handled
    /// after `halt` returned, without polling the token per notification.
    halted: AtomicBool,
}

impl<K: Send + Sync + 'static> ProcessorListener<K> {
    pub(crate) fn new(
        id: u64,
        handler: Arc<dyn EventHandler<K>>,
        calls: HandlerCalls,
        requested_resync_period: Duration,
        resync_period: Duration,
        progress: Arc<Notify>,
        panics: Arc<AtomicU64>,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        ProcessorListener {
            id,
            handler,
            calls,
            tx,
            rx: Mutex::new(Some(rx)),
            requested_resync_period,
            resync: Mutex::new(ResyncSchedule {
                period: resync_period,
                next: Instant::now() + resync_period,
            }),
            pending_initial: Arc::new(PendingInitial::new(progress)),
            panics,
            stop: CancellationToken::new(),
            halted: AtomicBool::new(false),
        }
    }

    /// Stops the listener: no notification is handled after this returns (one being
    /// handled right now finishes).
    pub(crate) fn halt(&self) {
        self.halted.store(true, Ordering::SeqCst);
        self.stop.cancel();
    }

    /// Queues a notification; never blocks.
    pub(crate) fn add(&self, n: Notification<K>) {
        self.send(Message::One(n));
    }

    /// Queues a shared batch; never blocks. `syncing`: this listener takes the
    /// batch's resync entries.
    pub(crate) fn add_batch(&self, items: Batch<K>, syncing: bool) {
        self.send(Message::Batch { items, syncing });
    }

    /// Queues `message`, counting its initial adds as pending until handled.
    fn send(&self, message: Message<K>) {
        let initial = message.initial_adds();
        if initial > 0 {
            self.pending_initial.add(initial);
        }
        if self.tx.send(message).is_err() && initial > 0 {
            // The task is gone (listener removed or informer stopped).
            self.pending_initial.sub(initial);
        }
    }

    fn lock_resync(&self) -> std::sync::MutexGuard<'_, ResyncSchedule> {
        self.resync.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the listener is due for a resync at `now`.
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let r = self.lock_resync();
        !r.period.is_zero() && now >= r.next
    }

    /// Schedules the next resync one period after `now`.
    pub(crate) fn determine_next_resync(&self, now: Instant) {
        let mut r = self.lock_resync();
        r.next = now + r.period;
    }

    /// The effective period.
    #[cfg(test)]
    pub(crate) fn resync_period(&self) -> Duration {
        self.lock_resync().period
    }

    /// Changes the effective period.
    pub(crate) fn set_resync_period(&self, period: Duration) {
        self.lock_resync().period = period;
    }

    /// Starts the listener's task. Returns `None` if it was started before.
    pub(crate) fn spawn(self: &Arc<Self>) -> Option<tokio::task::JoinHandle<()>> {
        let rx = self
            .rx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        let this = Arc::clone(self);
        Some(tokio::spawn(async move { this.run(rx).await }))
    }

    /// Calls the handler for one notification; false if it panicked (logged).
    fn deliver(&self, n: &Notification<K>) -> bool {
        let handler = self.handler.as_ref();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| n.dispatch(handler)));
        if n.is_initial_add() {
            self.pending_initial.sub(1);
        }
        match outcome {
            Ok(()) => true,
            Err(payload) => {
                self.panics.fetch_add(1, Ordering::Relaxed);
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic".to_owned());
                tracing::error!(listener = self.id, panic = %msg,
                    "event handler panicked; the notification is dropped");
                false
            }
        }
    }

    /// Calls the handler for `notifications` in order, up to and including the
    /// first that panics, until the listener is halted.
    fn deliver_run<'a>(&self, notifications: impl Iterator<Item = &'a Notification<K>>) -> Run
    where
        K: 'a,
    {
        let mut run = Run {
            handled: 0,
            end: RunEnd::Done,
        };
        for n in notifications {
            if self.halted.load(Ordering::SeqCst) {
                run.end = RunEnd::Halted;
                break;
            }
            run.handled += 1;
            if !self.deliver(n) {
                run.end = RunEnd::Panicked;
                break;
            }
        }
        run
    }

    /// Delivers `cursor`'s message from where it stands, then whatever is already
    /// buffered, in one go (one [`may_block`] for many messages), until the buffer is
    /// empty, [`HAND_OVER_LIMIT`] notifications are handled, a handler panics or the
    /// listener is halted.
    fn deliver_buffered(
        &self,
        rx: &mut mpsc::UnboundedReceiver<Message<K>>,
        mut cursor: Cursor<K>,
    ) -> Step<K> {
        let mut handled = 0;
        loop {
            let run = self.deliver_run(cursor.rest());
            handled += run.handled;
            cursor.done += run.handled;
            match run.end {
                RunEnd::Halted => return Step::Halted(cursor),
                RunEnd::Panicked => return Step::Panicked(cursor),
                RunEnd::Done if handled >= HAND_OVER_LIMIT => return Step::Yield,
                RunEnd::Done => match rx.try_recv() {
                    Ok(next) => cursor = Cursor::new(next),
                    Err(_) => return Step::Yield,
                },
            }
        }
    }

    /// Delivers notifications in order until stopped. A panicking handler is caught
    /// and logged; the listener pauses for [`SLEEP_AFTER_PANIC`] and goes on.
    async fn run(&self, mut rx: mpsc::UnboundedReceiver<Message<K>>) {
        // Created once, not per notification.
        let stopped = self.stop.cancelled();
        tokio::pin!(stopped);
        // The rest of a message whose handler call panicked, or that a halt cut
        // short.
        let mut left: Option<Cursor<K>> = None;
        loop {
            let cursor = match left.take() {
                Some(cursor) => cursor,
                None => tokio::select! {
                    biased;
                    () = &mut stopped => break,
                    m = rx.recv() => match m {
                        Some(m) => Cursor::new(m),
                        None => break,
                    },
                },
            };
            let step = match self.calls {
                HandlerCalls::MayBlock => may_block(|| self.deliver_buffered(&mut rx, cursor)),
                HandlerCalls::NonBlocking => self.deliver_buffered(&mut rx, cursor),
            };
            match step {
                Step::Halted(cursor) => {
                    left = Some(cursor);
                    break;
                }
                Step::Panicked(cursor) => {
                    left = Some(cursor);
                    tokio::select! {
                        biased;
                        () = &mut stopped => break,
                        () = tokio::time::sleep(SLEEP_AFTER_PANIC) => {}
                    }
                }
                Step::Yield => {}
            }
            // Yields only once the task's cooperative budget is spent, so a long
            // backlog does not monopolize the worker thread.
            tokio::task::consume_budget().await;
        }
        // Drop what is left; initial adds that will never be handled no longer count.
        rx.close();
        let mut unhandled = left.map_or(0, |cursor| cursor.initial_adds());
        while let Ok(m) = rx.try_recv() {
            unhandled += m.initial_adds();
        }
        if unhandled > 0 {
            self.pending_initial.sub(unhandled);
        }
    }
}

/// How many notifications one [`may_block`] hands to the handler at most before the
/// listener's task goes back to the scheduler (a message is never split for it).
const HAND_OVER_LIMIT: usize = 1024;

/// A message, and how many of the notifications this listener takes from it went
/// to its handler.
struct Cursor<K> {
    message: Message<K>,
    done: usize,
}

impl<K: 'static> Cursor<K> {
    fn new(message: Message<K>) -> Self {
        Cursor { message, done: 0 }
    }

    /// The notifications not handed to the handler yet.
    fn rest(&self) -> impl Iterator<Item = &Notification<K>> {
        self.message.taken().skip(self.done)
    }

    /// How many of the rest are initial-list adds.
    fn initial_adds(&self) -> usize {
        self.rest().filter(|n| n.is_initial_add()).count()
    }
}

/// What one [`ProcessorListener::deliver_run`] did.
struct Run {
    /// Notifications handed to the handler (the panicking one included).
    handled: usize,
    end: RunEnd,
}

/// Why a [`Run`] ended.
enum RunEnd {
    /// Every notification was handled.
    Done,
    /// The last one handled panicked.
    Panicked,
    /// The listener was halted before the rest.
    Halted,
}

/// How one [`ProcessorListener::deliver_buffered`] ended.
enum Step<K> {
    /// The buffer was empty, or the hand-over limit was reached.
    Yield,
    /// A handler call panicked; the rest of its message.
    Panicked(Cursor<K>),
    /// The listener was halted; the rest of the message it was in.
    Halted(Cursor<K>),
}

/// Runs handler calls, which may block their thread (handlers are synchronous and
/// may sleep or do blocking I/O, from their first call on). On a multi-thread
/// runtime this goes through `block_in_place`, which first hands the worker's other
/// queued and deferred tasks to the rest of the pool, so a blocking handler holds up
/// only its own listener: without it, a task the scheduler had left on this worker
/// (the informer's reflector after a yield, the connection of its watch, another
/// listener) would wait for the handler. Elsewhere (a current-thread runtime) `f`
/// just runs.
fn may_block<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
