//! Ports of client-go's `util/workqueue/default_rate_limiters_test.go`.

use std::time::Duration;

use reflector_core::workqueue::{self as wq, RateLimiter};

const MS: Duration = Duration::from_millis(1);

/// client-go's per-item script: item "one" fails five times and waits `one`, item
/// "two" fails twice and starts at the beginning of `one`, each item's count is its
/// failures, and a forgotten "one" starts over.
fn assert_per_item_delays(limiter: &dyn RateLimiter<&'static str>, one: [Duration; 5]) {
    for (i, expected) in one.into_iter().enumerate() {
        assert_eq!(limiter.when(&"one"), expected, "failure #{i} of one");
    }
    assert_eq!(limiter.requeues(&"one"), 5);

    assert_eq!(limiter.when(&"two"), one[0]);
    assert_eq!(limiter.when(&"two"), one[1]);
    assert_eq!(limiter.requeues(&"two"), 2);

    limiter.forget(&"one");
    assert_eq!(limiter.requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), one[0]);
}

#[test]
fn item_exponential_failure_rate_limiter() {
    let limiter = wq::ExponentialBackoff::new(MS, Duration::from_secs(1));
    assert_per_item_delays(&limiter, [1, 2, 4, 8, 16].map(|n| n * MS));
}

#[test]
fn item_exponential_failure_rate_limiter_over_flow() {
    let limiter = wq::ExponentialBackoff::new(MS, Duration::from_secs(1000));
    for _ in 0..5 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), 32 * MS);

    for _ in 0..1000 {
        limiter.when(&"overflow1");
    }
    assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

    let minute = Duration::from_secs(60);
    let hour = Duration::from_secs(3600);
    let limiter = wq::ExponentialBackoff::new(minute, 1000 * hour);
    for _ in 0..2 {
        limiter.when(&"two");
    }
    assert_eq!(limiter.when(&"two"), 4 * minute);

    for _ in 0..1000 {
        limiter.when(&"overflow2");
    }
    assert_eq!(limiter.when(&"overflow2"), 1000 * hour);
}

#[test]
fn item_fast_slow_rate_limiter() {
    let limiter = wq::FastSlowBackoff::new(5 * MS, Duration::from_secs(10), 3);
    let slow = Duration::from_secs(10);
    assert_per_item_delays(&limiter, [5 * MS, 5 * MS, 5 * MS, slow, slow]);
}

#[test]
fn max_of_rate_limiter() {
    let slow = Duration::from_secs(3);
    let limiter = wq::MaxOf::new()
        .with(wq::FastSlowBackoff::new(5 * MS, slow, 3))
        .with(wq::ExponentialBackoff::new(MS, Duration::from_secs(1)));
    assert_per_item_delays(&limiter, [5 * MS, 5 * MS, 5 * MS, slow, slow]);
}

#[tokio::test(start_paused = true)]
async fn with_max_wait_rate_limiter() {
    let limiter = wq::WithMaxWait::new(wq::DefaultRateLimiter::default(), Duration::from_secs(500));
    // The burst of 100: only the per-item backoff (first failure, 5 ms) counts.
    for i in 0..100 {
        assert_eq!(limiter.when(&i), 5 * MS, "item {i}");
    }
    // Then the bucket makes each item wait 100 ms longer than the previous...
    for i in 100..5100 {
        let wait = limiter.when(&i);
        assert!(wait <= Duration::from_secs(500), "item {i}: {wait:?}");
        assert_eq!(wait, (i - 99) * 100 * MS, "item {i}");
    }
    // ...until the cap.
    for i in 5100..5200 {
        assert_eq!(limiter.when(&i), Duration::from_secs(500), "item {i}");
    }
}

#[tokio::test(start_paused = true)]
async fn bucket_rate_limiter_refills_at_qps() {
    let limiter = wq::TokenBucket::new(10.0, 2);
    assert_eq!(limiter.when(&()), Duration::ZERO);
    assert_eq!(limiter.when(&()), Duration::ZERO);
    assert_eq!(limiter.when(&()), 100 * MS);
    assert_eq!(limiter.when(&()), 200 * MS);
    // Waiting 200 ms pays back the two reservations made ahead of time.
    tokio::time::advance(200 * MS).await;
    assert_eq!(limiter.when(&()), 100 * MS);
    // A long idle period refills no more than the burst.
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(limiter.when(&()), Duration::ZERO);
    assert_eq!(limiter.when(&()), Duration::ZERO);
    assert_eq!(limiter.when(&()), 100 * MS);
    assert_eq!(limiter.requeues(&()), 0);
}

#[tokio::test(start_paused = true)]
async fn bucket_rate_limiter_edge_rates() {
    let unlimited = wq::TokenBucket::new(f64::INFINITY, 0);
    for _ in 0..1000 {
        assert_eq!(unlimited.when(&()), Duration::ZERO);
    }
    let never_refills = wq::TokenBucket::new(0.0, 1);
    assert_eq!(never_refills.when(&()), Duration::ZERO);
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(never_refills.when(&()), Duration::MAX);
}
