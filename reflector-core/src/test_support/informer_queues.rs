//! The queue a reflector writes into as an informer builds it, of either kind, and
//! what popping it hands over, shown the same way for both: a suite written against
//! [`QueueUnderTest`] runs once per [`InformerQueue`].

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::fifo::{DeltaFifo, Entry, InOrderFifo};
use crate::informer::InformerQueue;
use crate::listwatch::ListerWatcher;
use crate::object::MaybeTombstone;
use crate::reflector::{Reflector, ReflectorOptions};
use crate::store::{Indexer, Indexers};

/// The queue of an informer (over an empty cache), as the suite under test sees it.
pub(crate) enum QueueUnderTest {
    /// Per-key accumulated deltas.
    Delta(Arc<DeltaFifo<Pod>>),
    /// Every change in order, relists and resyncs atomic.
    InOrder(Arc<InOrderFifo<Pod>>),
}

/// A reflector into a `queue` whose known objects are an (empty) indexer, built as an
/// informer builds it.
pub(crate) fn reflector_into_informer_queue<L: ListerWatcher<Pod> + 'static>(
    queue: InformerQueue,
    lw: L,
    options: ReflectorOptions,
) -> (QueueUnderTest, Arc<Reflector<Pod, L>>) {
    let indexer = Indexer::<Pod>::new(Indexers::new());
    let (queue, store): (_, Arc<dyn crate::store::Store<Pod>>) = match queue {
        InformerQueue::InOrder => {
            let fifo = Arc::new(InOrderFifo::new().cache(indexer));
            (QueueUnderTest::InOrder(fifo.clone()), fifo)
        }
        InformerQueue::DeltaFifo => {
            let fifo = Arc::new(DeltaFifo::new().cache(indexer).emit_replaced(true));
            (QueueUnderTest::Delta(fifo.clone()), fifo)
        }
    };
    let r = Arc::new(Reflector::new(lw, store, options));
    (queue, r)
}

/// `name@rv` of `pod`.
fn name_rv(pod: &Pod) -> String {
    format!(
        "{}@{}",
        pod.metadata.name.as_deref().unwrap_or_default(),
        pod.metadata.resource_version.as_deref().unwrap_or_default()
    )
}

/// A change as `Replaced@1`, a tombstone as `Deleted~@1`.
fn change(delta_type: crate::fifo::DeltaType, object: &MaybeTombstone<Pod>) -> String {
    let mark = if object.is_tombstone() { "~" } else { "" };
    let rv = object.object().metadata.resource_version.as_deref();
    format!("{delta_type:?}{mark}@{}", rv.unwrap_or_default())
}

/// `initial ` for what belongs to the first list, else nothing.
fn initial(is_in_initial_list: bool) -> &'static str {
    if is_in_initial_list { "initial " } else { "" }
}

impl QueueUnderTest {
    /// `delta_fifo` or `in_order`, for this queue: the pops the suite expects of
    /// each where they differ.
    pub(crate) fn per_queue<'a>(
        &self,
        delta_fifo: &'a [&'a str],
        in_order: &'a [&'a str],
    ) -> &'a [&'a str] {
        match self {
            QueueUnderTest::Delta(_) => delta_fifo,
            QueueUnderTest::InOrder(_) => in_order,
        }
    }

    /// Pops one item (within a second of the paused clock), shown as one line:
    /// `[initial ]KEY: CHANGE, CHANGE` for a DeltaFifo's item (every change
    /// accumulated under the key) and for an in-order per-object entry (one change),
    /// each change `TYPE[~]@RV` (`~`: a tombstone); `[initial ]ReplacedAll@RV [a@1
    /// b@2]`, `[initial ]Bookmark@RV` or `[initial ]SyncAll` for an in-order whole
    /// list, bookmark or resync.
    pub(crate) async fn pop_shown(&self) -> String {
        let shown = async {
            match self {
                QueueUnderTest::Delta(f) => {
                    let item = f.pop_item().await.expect("the FIFO is open");
                    let changes: Vec<String> = item
                        .deltas
                        .iter()
                        .map(|d| change(d.delta_type, &d.object))
                        .collect();
                    format!(
                        "{}{}: {}",
                        initial(item.is_in_initial_list),
                        item.key,
                        changes.join(", ")
                    )
                }
                QueueUnderTest::InOrder(f) => f
                    .pop_batch(1, |mut popped, _| {
                        let p = popped.pop().expect("one entry");
                        let shown = match &p.entry {
                            Entry::Delta(d) => {
                                let key = p.key.as_ref().expect("a keyed delta");
                                format!("{key}: {}", change(d.delta_type, &d.object))
                            }
                            Entry::ReplacedAll {
                                objects,
                                resource_version,
                            } => {
                                let objects: Vec<String> =
                                    objects.iter().map(|o| name_rv(o)).collect();
                                format!("ReplacedAll@{resource_version} [{}]", objects.join(" "))
                            }
                            Entry::SyncAll => "SyncAll".to_owned(),
                            Entry::Bookmark { resource_version } => {
                                format!("Bookmark@{resource_version}")
                            }
                        };
                        format!("{}{shown}", initial(p.is_in_initial_list))
                    })
                    .await
                    .expect("the FIFO is open"),
            }
        };
        tokio::time::timeout(Duration::from_secs(1), shown)
            .await
            .expect("an item to pop")
    }

    /// Pops `expected.len()` items in turn and asserts each, shown by
    /// [`pop_shown`](Self::pop_shown), equals the line `expected` has for it.
    pub(crate) async fn assert_pops(&self, expected: &[&str]) {
        let mut popped = Vec::with_capacity(expected.len());
        for _ in expected {
            popped.push(self.pop_shown().await);
        }
        assert_eq!(popped, expected);
    }

    /// Whether the first list has been popped and processed.
    pub(crate) fn has_synced(&self) -> bool {
        match self {
            QueueUnderTest::Delta(f) => f.has_synced(),
            QueueUnderTest::InOrder(f) => f.has_synced(),
        }
    }

    /// Asserts the queue syncs within a second of the paused clock.
    pub(crate) async fn assert_syncs(&self) {
        let synced = async {
            match self {
                QueueUnderTest::Delta(f) => f.wait_synced().await,
                QueueUnderTest::InOrder(f) => f.wait_synced().await,
            }
        };
        tokio::time::timeout(Duration::from_secs(1), synced)
            .await
            .expect("synced once the first list's last item was popped");
    }

    /// How many items are queued (keys of the DeltaFifo, entries of the in-order
    /// queue).
    pub(crate) fn len(&self) -> usize {
        match self {
            QueueUnderTest::Delta(f) => f.len(),
            QueueUnderTest::InOrder(f) => f.len(),
        }
    }
}
