//! Resync periods: the informer's check period, each handler's own period, and
//! which deltas are resyncs (client-go's shared_informer_test.go).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::fifo::QueueMode;
use crate::informer::*;
use crate::listwatch::FakeSource;

use crate::test_support::*;

each_queue!(
    #[tokio::test(start_paused = true)]
    listener_resync_periods
);

/// TestListenerResyncPeriods: handlers with resync 0, 2 s and 3 s on an informer
/// whose default is 1 s: all get the initial list; at 2 s only the 2 s handler
/// resyncs; at 3 s only the 3 s handler.
async fn listener_resync_periods(queue: QueueMode) {
    let (_source, informer) = resyncing_informer(queue, &["pod1", "pod2"]);
    let listeners: Vec<TestListener> = (0..3).map(|_| TestListener::default()).collect();
    for (l, period) in listeners.iter().zip([0, 2, 3]) {
        informer
            .add_event_handler_with_resync(l.clone(), Duration::from_secs(period))
            .unwrap();
    }
    // What each listener saw since the last look.
    let seen = || -> Vec<BTreeSet<String>> {
        listeners
            .iter()
            .map(|l| {
                let names = l.names();
                l.reset();
                names
            })
            .collect()
    };
    let (both, none) = (set(&["pod1", "pod2"]), set(&[]));
    let running = start(&informer);
    for (wait, want, phase) in [
        (0, [&both, &both, &both], "initial list"),
        (
            2,
            [&none, &both, &none],
            "at 2 s only the 2 s listener resynced",
        ),
        (
            1,
            [&none, &none, &both],
            "at 3 s only the 3 s listener resynced",
        ),
    ] {
        tokio::time::sleep(Duration::from_secs(wait)).await;
        settle().await;
        assert_eq!(seen(), want.map(Clone::clone), "{phase}");
    }
    running.stop().await;
}

each_queue!(
    #[tokio::test(start_paused = true)]
    resync_check_period
);

/// TestResyncCheckPeriod: the informer checks at the smallest period asked for
/// before start, and each handler keeps its own period.
async fn resync_check_period(queue: QueueMode) {
    let source = FakeSource::<Pod>::new();
    let informer = SharedIndexInformer::with_options(
        source,
        InformerOptions::default()
            .queue(queue)
            .resync(Duration::from_secs(12 * 3600)),
    );
    let check = |i: &SharedIndexInformer<Pod>| i.lock_state_for_tests().0;
    let add = |period: Duration| {
        informer
            .add_event_handler_with_resync(TestListener::default(), period)
            .unwrap()
    };
    let periods = |regs: &[&Registration]| -> Vec<Option<Duration>> {
        regs.iter()
            .map(|r| informer.listener_resync_period(r))
            .collect()
    };
    let (zero, m1, s55, s5) = (
        Duration::ZERO,
        Duration::from_secs(60),
        Duration::from_secs(55),
        Duration::from_secs(5),
    );
    let h1 = add(zero);
    assert_eq!(check(&informer), Duration::from_secs(12 * 3600));
    assert_eq!(periods(&[&h1]), [Some(zero)]);
    let h2 = add(m1);
    assert_eq!(check(&informer), m1);
    assert_eq!(periods(&[&h2]), [Some(m1)]);
    let h3 = add(s55);
    assert_eq!(check(&informer), s55);
    assert_eq!(periods(&[&h2, &h3]), [Some(m1), Some(s55)]);
    let h4 = add(s5);
    assert_eq!(check(&informer), s5);
    assert_eq!(
        periods(&[&h1, &h2, &h3, &h4]),
        [Some(zero), Some(m1), Some(s55), Some(s5)]
    );
    // Below the minimum: raised to 1 s.
    let h5 = add(Duration::from_millis(10));
    assert_eq!(periods(&[&h5]), [Some(Duration::from_secs(1))]);
}

each_queue!(
    #[tokio::test(start_paused = true)]
    shared_informer_watch_disruption
);

/// TestSharedInformerWatchDisruption: after missed events and a dropped watch, the
/// resumed watch delivers the changes; the non-resync listener gets only changed and
/// new objects, the resync listener also the unchanged one.
async fn shared_informer_watch_disruption(queue: QueueMode) {
    let (source, informer) = resyncing_informer(queue, &["pod1", "pod2"]);
    let no_resync = TestListener::default();
    let resync = TestListener::default();
    informer
        .add_event_handler_with_resync(no_resync.clone(), Duration::ZERO)
        .unwrap();
    informer
        .add_event_handler_with_resync(resync.clone(), Duration::from_secs(1))
        .unwrap();
    let running = start(&informer);
    settle().await;
    assert_eq!(no_resync.names(), set(&["pod1", "pod2"]));
    assert_eq!(resync.names(), set(&["pod1", "pod2"]));

    source.add_drop_watch(ns_pod("pod3"));
    let mut p2 = ns_pod("pod2");
    p2.metadata.labels = Some([("changed".to_owned(), "yes".to_owned())].into());
    source.modify_drop_watch(p2);
    settle().await;
    assert_eq!(
        no_resync.names(),
        set(&["pod1", "pod2"]),
        "missed events not seen"
    );
    no_resync.reset();
    resync.reset();

    // The dropped watch delivered nothing in under a second: a "very short watch",
    // so the reflector backs off (0.8–1.6 s), relists and restarts its 1 s resync
    // timer. Three seconds cover a resync round for the resync listener.
    source.break_watches();
    tokio::time::sleep(Duration::from_secs(3)).await;
    settle().await;
    assert_eq!(no_resync.names(), set(&["pod2", "pod3"]));
    assert_eq!(resync.names(), set(&["pod1", "pod2", "pod3"]));
    running.stop().await;
}

/// As client-go's OnUpdate: a Sync delta is a resync; a Replaced one is when the
/// resource version did not change; an Updated one never is, even with the cached
/// resource version (so handlers without resync still get it). (How a popped batch
/// is applied does not depend on the queue's mode.)
#[tokio::test(start_paused = true)]
async fn only_sync_and_unchanged_replaced_deltas_are_resyncs() {
    use crate::fifo::{Delta, DeltaType, Deltas, Entry, Popped};
    use crate::informer::notification::Notification;
    use crate::object::MaybeTombstone;
    let informer = SharedIndexInformer::new(FakeSource::<Pod>::new());
    let change = |delta_type, obj: &Arc<Pod>| Popped {
        key: Some(crate::object::meta_namespace_key(obj.as_ref()).unwrap()),
        entry: Entry::Deltas(Deltas::from(vec![Delta {
            delta_type,
            object: MaybeTombstone::Object(Arc::clone(obj)),
        }])),
        is_in_initial_list: false,
    };
    let mut cached = ns_pod("p");
    cached.metadata.resource_version = Some("5".into());
    let cached = Arc::new(cached);
    informer.apply_for_tests(vec![change(DeltaType::Added, &cached)]);
    let mut newer = ns_pod("p");
    newer.metadata.resource_version = Some("6".into());
    let newer = Arc::new(newer);
    let cases = [
        (DeltaType::Sync, &cached, true),
        (DeltaType::Replaced, &cached, true),
        (DeltaType::Replaced, &newer, false),
        (DeltaType::Updated, &cached, false),
        (DeltaType::Added, &cached, false),
    ];
    for (delta_type, obj, want) in cases {
        let out = informer.apply_for_tests(vec![change(delta_type, obj)]);
        assert_eq!(out.len(), 1);
        assert!(
            matches!(out[0], Notification::Update { .. }),
            "{delta_type:?} of a cached object is an update"
        );
        assert_eq!(
            out[0].is_sync(),
            want,
            "{delta_type:?} at rv {:?}",
            obj.metadata.resource_version
        );
    }
}
