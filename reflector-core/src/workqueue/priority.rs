//! [`Priority`]: which queued item a worker takes first.

use std::fmt;

/// How soon a queued item is handed to a worker: the highest priority first, items
/// of one priority in the order they were queued (controller-runtime's priority
/// queue, its default since v0.23).
///
/// A controller queues the keys of an informer's initial list, of updates that
/// changed no resourceVersion (resyncs, a relist's unchanged objects) and of a new
/// leadership term's catch-up at [`Priority::LOW`], and every live change at
/// [`Priority::DEFAULT`], so a change made while a backlog drains is reconciled
/// before the rest of the backlog. A requeue keeps the item's priority; adding an
/// item already queued can raise its priority, never lower it.
///
/// # Example
/// ```
/// use reflector::workqueue::{Priority, WorkQueue};
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let queue = WorkQueue::new();
/// queue.add_with_priority("backlog-1", Priority::LOW);
/// queue.add_with_priority("backlog-2", Priority::LOW);
/// queue.add("live"); // Priority::DEFAULT
/// assert_eq!(queue.get().await, Some("live"));
/// assert_eq!(queue.get().await, Some("backlog-1"));
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(pub i32);

impl Priority {
    /// What [`WorkQueue::add`](super::WorkQueue::add) queues at: 0, as
    /// controller-runtime's default.
    pub const DEFAULT: Priority = Priority(0);
    /// A backlog's priority: -100, as controller-runtime's `LowPriority`.
    pub const LOW: Priority = Priority(-100);
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
