//! What each watch error makes the reflector do (client-go's reflector_test.go):
//! back off and watch again, relist, or retry until a deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::listwatch::ListWatchError;
use crate::reflector::ReflectorOptions;
use crate::test_support::*;

/// TestNoRelistOnTooManyRequests: 429s when starting the watch back off and watch
/// again without relisting: 1 list, 5 watches.
#[tokio::test(start_paused = true)]
async fn no_relist_on_too_many_requests() {
    let (watches, watch) = counted_watch(|n| {
        if n + 1 < 5 {
            Err(too_many_requests())
        } else {
            Ok(closed_watch())
        }
    });
    let (lists, list) = recorded_list(empty_list("1"));
    let lw = scripted(list, watch);
    let (r, _) = recording(lw, ReflectorOptions::default());
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(*lists.lock().unwrap(), ["rv=0 limit=500"], "one list");
    assert_eq!(watches.load(Ordering::SeqCst), 5);
    assert_eq!(r.stats().errors_too_many_requests, 4);
}

/// TestBackoffOnTooManyRequests: a 429 when starting a watch and a 429 ERROR event
/// each back off once (2 backoff delays), with no relist.
#[tokio::test(start_paused = true)]
async fn backoff_on_too_many_requests() {
    let (calls, watch) = counted_watch(|n| match n {
        0 => Err(too_many_requests()),
        1 => Ok(watch_of([error_event(too_many_requests())])),
        _ => Ok(closed_watch()),
    });
    let (r, _) = recording(
        scripted(empty_list("1"), watch),
        ReflectorOptions::default()
            .backoff_jitter(0.0)
            .backoff(Duration::from_secs(1), Duration::from_secs(30)),
    );
    let start = Instant::now();
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(3),
        "two backoffs: 1 s then 2 s"
    );
    assert_eq!(r.stats().lists, 1);
}

/// TestRetryInternalError: 500 ERROR events are retried without relisting until
/// the deadline: 0 retries when off, 31 over 30 s at one error per second, and 40
/// when a quiet minute in the middle resets the run.
#[tokio::test(start_paused = true)]
async fn retry_internal_error() {
    for (max, rewind_at, want_retries) in [
        (Duration::ZERO, 0, 0),
        (Duration::from_secs(30), 0, 31),
        (Duration::from_secs(30), 10, 40),
    ] {
        let counter = Arc::new(AtomicUsize::new(0));
        let c = counter.clone();
        let lw = Scripted {
            list: Box::new(|_| futures::future::ready(Ok(pod_list("1", None, vec![]))).boxed()),
            watch: Box::new(move |_, _| {
                let n = c.fetch_add(1, Ordering::SeqCst) + 1;
                async move {
                    if n == rewind_at {
                        tokio::time::advance(Duration::from_secs(60)).await;
                    }
                    tokio::time::advance(Duration::from_secs(1)).await;
                    Ok(watch_of([error_event(internal_error())]))
                }
                .boxed()
            }),
        };
        let (r, _) = recording(
            lw,
            ReflectorOptions::default().max_internal_error_retry_duration(max),
        );
        r.list_and_watch(&CancellationToken::new()).await.unwrap();
        assert_eq!(
            counter.load(Ordering::SeqCst) - 1,
            want_retries,
            "max {max:?} rewind at {rewind_at}"
        );
    }
}

/// TestCloseWatchChannelOnError: an ERROR event ends the watch, which is dropped
/// (its channel closed).
#[tokio::test(start_paused = true)]
async fn close_watch_channel_on_error() {
    let (tx, r, _) = driven(empty_list("1"), ReflectorOptions::default());
    send(&tx, [error_event(expired())]);
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert!(tx.is_closed(), "the watch was dropped");
    assert_eq!(r.stats().errors_expired, 1);
}

/// A malformed line ends the watch; the run loop relists from the last RV and
/// nothing is lost.
#[tokio::test(start_paused = true)]
async fn malformed_line_ends_the_watch_and_the_loop_recovers() {
    let (watches, watch) = counted_watch(|n| {
        if n > 0 {
            return Ok(pending_watch());
        }
        let (tx, stream) = fake_watch();
        send(&tx, [added("b", "2")]);
        tx.unbounded_send(Err(ListWatchError::Decode {
            what: "watch event",
            source: serde_json::from_str::<u8>("{oops").unwrap_err(),
        }))
        .unwrap();
        // `tx` dropped: but the decode error already ends the watch.
        Ok(stream)
    });
    let (lists, list) = recorded_list(|p| {
        Ok(if rv_of(p) == "0" {
            pod_list("1", None, vec![pod("a", "1")])
        } else {
            pod_list("3", None, vec![pod("a", "1"), pod("b", "3")])
        })
    });
    let lw = scripted(list, watch);
    let (r, store) = recording(lw, ReflectorOptions::default().backoff_jitter(0.0));
    run_until(&r, || watches.load(Ordering::SeqCst) == 2).await;
    assert_eq!(
        *lists.lock().unwrap(),
        ["rv=0 limit=500", "rv=2"],
        "relisted from the last RV"
    );
    assert_eq!(r.stats().errors_decode, 1);
    assert_eq!(store.names_and_rvs(), owned(&[("a", "1"), ("b", "3")]));
}

/// A 410 ERROR event ends the watch; the next round relists from the last RV seen
/// (not from "").
#[tokio::test(start_paused = true)]
async fn expired_watch_relists_from_last_resource_version() {
    let (watches, watch) = counted_watch(|n| {
        Ok(if n == 0 {
            watch_of([added("x", "5"), error_event(expired())])
        } else {
            pending_watch()
        })
    });
    let (lists, list) = recorded_list(empty_list("7"));
    let lw = scripted(list, watch);
    let (r, _) = recording(lw, ReflectorOptions::default().backoff_jitter(0.0));
    run_until(&r, || watches.load(Ordering::SeqCst) == 2).await;
    assert_eq!(*lists.lock().unwrap(), ["rv=0 limit=500", "rv=5"]);
    assert_eq!(r.stats().relists, 1);
}

/// Errors that end a round reach the watch-error handler (client-go's
/// TestSharedInformerErrorHandling shape, at the reflector level).
#[tokio::test(start_paused = true)]
async fn list_errors_reach_the_watch_error_handler() {
    let seen = recorder();
    let s = seen.clone();
    let lw = scripted(
        |_| Err(api_error(403, "Forbidden", "configmaps is forbidden")),
        never_send,
    );
    let (r, _) = recording(
        lw,
        ReflectorOptions::default()
            .backoff_jitter(0.0)
            .watch_error_handler(move |e| s.lock().unwrap().push(e.to_string())),
    );
    run_until(&r, || seen.lock().unwrap().len() >= 2).await;
    assert!(seen.lock().unwrap()[0].starts_with("failed to list Pod"));
}
