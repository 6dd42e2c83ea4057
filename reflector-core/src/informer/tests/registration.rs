//! Adding and removing handlers, before, during and after a run (client-go's
//! shared_informer_test.go).

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Pod;

use crate::fifo::QueueMode;
use crate::informer::*;
use crate::listwatch::FakeSource;

use crate::test_support::*;

/// With two registrations on `informer`, removes `first` (only it goes), then
/// `second`.
fn assert_removes_one_at_a_time(
    informer: &SharedIndexInformer<Pod>,
    first: &Registration,
    second: &Registration,
) {
    assert_eq!(informer.handler_count(), 2);
    informer.remove_event_handler(first);
    assert!(!informer.is_registered(first));
    assert!(informer.is_registered(second));
    assert_eq!(informer.handler_count(), 1);
    informer.remove_event_handler(second);
    assert_eq!(informer.handler_count(), 0);
}

each_queue!(
    #[tokio::test(start_paused = true)]
    shared_informer_remove_handler
);

/// TestSharedInformerRemoveHandler: a removed handler is no longer registered;
/// removing it again is harmless.
async fn shared_informer_remove_handler(queue: QueueMode) {
    let informer = SharedIndexInformer::with_options(
        FakeSource::<Pod>::new(),
        InformerOptions::default().queue(queue),
    );
    let reg1 = informer.add_event_fn(|_| {}).unwrap();
    let reg2 = informer.add_event_fn(|_| {}).unwrap();
    assert_removes_one_at_a_time(&informer, &reg2, &reg1);
}

each_queue!(
    #[tokio::test(start_paused = true)]
    shared_informer_remove_foreign_handler
);

/// TestSharedInformerRemoveForeignHandler: removing another informer's registration
/// is a no-op.
async fn shared_informer_remove_foreign_handler(queue: QueueMode) {
    let a = SharedIndexInformer::with_options(
        FakeSource::<Pod>::new(),
        InformerOptions::default().queue(queue),
    );
    let b = SharedIndexInformer::with_options(
        FakeSource::<Pod>::new(),
        InformerOptions::default().queue(queue),
    );
    let reg_a = a.add_event_fn(|_| {}).unwrap();
    let reg_b = b.add_event_fn(|_| {}).unwrap();
    a.remove_event_handler(&reg_b);
    b.remove_event_handler(&reg_a);
    assert!(a.is_registered(&reg_a));
    assert!(b.is_registered(&reg_b));
    assert!(!a.is_registered(&reg_b));
    assert_eq!((a.handler_count(), b.handler_count()), (1, 1));
}

each_queue!(
    #[tokio::test(start_paused = true)]
    shared_informer_multiple_registration
);

/// TestSharedInformerMultipleRegistration: the same handler registered twice gets
/// two registrations, removable one at a time.
async fn shared_informer_multiple_registration(queue: QueueMode) {
    let informer = SharedIndexInformer::with_options(
        FakeSource::<Pod>::new(),
        InformerOptions::default().queue(queue),
    );
    let shared = TestListener::default();
    let reg1 = informer.add_event_handler(shared.clone()).unwrap();
    let reg2 = informer.add_event_handler(shared).unwrap();
    assert_removes_one_at_a_time(&informer, &reg1, &reg2);
}

each_queue!(
    #[tokio::test(start_paused = true)]
    removing_removed_shared_informer
);

/// TestRemovingRemovedSharedInformer: removing twice is fine.
async fn removing_removed_shared_informer(queue: QueueMode) {
    let informer = SharedIndexInformer::with_options(
        FakeSource::<Pod>::new(),
        InformerOptions::default().queue(queue),
    );
    let reg = informer.add_event_fn(|_| {}).unwrap();
    informer.remove_event_handler(&reg);
    informer.remove_event_handler(&reg);
    assert!(!informer.is_registered(&reg));
    assert_eq!(informer.handler_count(), 0);
}

each_queue!(
    #[tokio::test(start_paused = true)]
    add_on_stopped_shared_informer
);

/// TestAddOnStoppedSharedInformer: adding to a stopped informer is an error.
async fn add_on_stopped_shared_informer(queue: QueueMode) {
    let informer = SharedIndexInformer::with_options(
        FakeSource::<Pod>::new(),
        InformerOptions::default().queue(queue),
    );
    let running = start(&informer);
    settle().await;
    running.stop().await;
    assert!(informer.is_stopped());
    assert_eq!(
        informer.add_event_fn(|_| {}).unwrap_err(),
        InformerError::Stopped
    );
}

each_queue!(
    #[tokio::test(start_paused = true)]
    remove_on_stopped_shared_informer
);

/// TestRemoveOnStoppedSharedInformer: removing from a stopped informer works.
async fn remove_on_stopped_shared_informer(queue: QueueMode) {
    let (_source, informer) = resyncing_informer(queue, &["pod1"]);
    let reg = informer.add_event_handler(TestListener::default()).unwrap();
    let running = start(&informer);
    settle().await;
    running.stop().await;
    assert!(informer.is_stopped());
    informer.remove_event_handler(&reg);
    assert!(!informer.is_registered(&reg));
}

each_queue!(
    #[tokio::test(start_paused = true)]
    remove_while_active
);

/// TestRemoveWhileActive: after removal the handler gets no more events.
async fn remove_while_active(queue: QueueMode) {
    let (source, informer, l, reg) = listened_informer(queue);
    let running = start(&informer);
    settle().await;
    source.add(ns_pod("pod1"));
    eventually(|| l.names() == set(&["pod1"])).await;
    informer.remove_event_handler(&reg);
    assert!(!informer.is_registered(&reg));
    source.add(ns_pod("pod2"));
    eventually(|| informer.indexer().len() == 2).await;
    settle().await;
    assert_eq!(l.names(), set(&["pod1"]), "no event after removal");
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    add_while_active
);

/// TestAddWhileActive: a handler added after start first gets the cached objects as
/// initial adds; its `has_synced` turns true only once it has handled them.
async fn add_while_active(queue: QueueMode) {
    let (source, informer, l1, reg1) = listened_informer(queue);
    assert!(!reg1.has_synced(), "synced before run");
    let running = start(&informer);
    source.add(ns_pod("pod1"));
    eventually(|| l1.names() == set(&["pod1"])).await;
    eventually(|| reg1.has_synced()).await;

    let initial = Arc::new(Mutex::new(Vec::<(String, bool)>::new()));
    let i = initial.clone();
    let reg2 = informer
        .add_event_fn(move |ev: Change<Pod>| {
            if let Change::Added {
                obj,
                is_in_initial_list,
            } = ev
            {
                i.lock()
                    .unwrap()
                    .push((obj.metadata.name.clone().unwrap(), is_in_initial_list));
            }
        })
        .unwrap();
    assert!(
        !reg2.has_synced(),
        "synced before handling the synthetic adds"
    );
    source.add(ns_pod("pod2"));
    eventually(|| initial.lock().unwrap().len() == 2).await;
    assert_eq!(
        *initial.lock().unwrap(),
        [("pod1".to_owned(), true), ("pod2".to_owned(), false)]
    );
    assert!(reg2.has_synced());
    running.stop().await;
}
