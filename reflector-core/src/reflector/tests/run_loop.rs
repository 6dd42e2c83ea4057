//! The reflector's run loop: backoff between rounds, cancellation, and the resync
//! timer (client-go's reflector_test.go).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::reflector::ReflectorOptions;
use crate::test_support::*;

/// TestReflectorResync: the resync timer calls `store.resync()`; a resync error
/// ends the current watch.
#[tokio::test(start_paused = true)]
async fn reflector_resync() {
    let store = Arc::new(RecordingStore {
        fail_resync: true,
        ..RecordingStore::default()
    });
    let r = crate::reflector::Reflector::new(
        scripted(empty_list("1"), never_send),
        store.clone(),
        ReflectorOptions::default().resync_period(Duration::from_millis(10)),
    );
    let start = Instant::now();
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(store.resyncs.load(Ordering::SeqCst), 1);
    assert_eq!(start.elapsed(), Duration::from_millis(10));
}

/// `should_resync` gates each firing of the resync timer.
#[tokio::test(start_paused = true)]
async fn should_resync_gates_the_timer() {
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let (r, store) = recording(
        scripted(empty_list("1"), never_send),
        ReflectorOptions::default()
            .resync_period(Duration::from_secs(1))
            .should_resync(move || a.fetch_add(1, Ordering::SeqCst) % 2 == 1),
    );
    let (cancel, task) = spawn_list_and_watch(&r);
    tokio::time::sleep(Duration::from_millis(4500)).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 4, "asked at 1, 2, 3 and 4 s");
    assert_eq!(store.resyncs.load(Ordering::SeqCst), 2, "every other time");
}

/// The run loop backs off between failing rounds: 800 ms, 1.6 s, 3.2 s, ... capped
/// at 30 s (jitter off to make the sequence exact).
#[tokio::test(start_paused = true)]
async fn run_backs_off_exponentially_between_rounds() {
    let times = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let start = Instant::now();
    let t = times.clone();
    let lw = scripted(
        move |_| {
            t.lock().unwrap().push(start.elapsed());
            Err(api_error(500, "InternalError", "boom"))
        },
        never_send,
    );
    let (r, _) = recording(lw, ReflectorOptions::default().backoff_jitter(0.0));
    run_until(&r, || times.lock().unwrap().len() >= 9).await;
    let gaps: Vec<u128> = times
        .lock()
        .unwrap()
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    assert_eq!(
        gaps[..8],
        [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]
    );
}

/// Cancellation stops `run` within one poll, and nothing it started stays alive
/// (the open watch is dropped).
#[tokio::test(start_paused = true)]
async fn cancellation_stops_run_and_drops_the_watch() {
    let (tx, r, _) = driven(empty_list("1"), ReflectorOptions::default());
    let (cancel, mut task) = spawn_run(&r);
    eventually(|| r.stats().watches == 1).await;
    assert!(!tx.is_closed());
    cancel.cancel();
    // One poll: the task completes without any time passing.
    let done = futures::poll!(&mut task);
    let done = match done {
        std::task::Poll::Ready(r) => r,
        std::task::Poll::Pending => {
            tokio::task::yield_now().await;
            (&mut task).await
        }
    };
    done.unwrap();
    assert!(tx.is_closed(), "the watch stream was dropped");
    assert_eq!(Arc::strong_count(&r), 1, "the task released the reflector");
}
