//! The per-object spam filter: client-go's `EventSourceObjectSpamFilter`, a token
//! bucket per (reporting source, regarding object).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use tokio::time::Instant;

use super::object_id::ObjectId;

/// One object's bucket.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    /// When `tokens` was last brought up to date (also the bucket's last use, for
    /// eviction).
    updated: Instant,
}

/// Token buckets, one per object (the source is the recorder's own, so the object
/// alone is the key): `burst` events at once, then one more every
/// `refill`. At most `capacity` buckets are kept; past that the least recently used is
/// forgotten (and starts full again if its object comes back), as client-go's LRU.
#[derive(Debug)]
pub(crate) struct SpamFilter {
    burst: f64,
    refill: Duration,
    capacity: usize,
    /// Guarded by its own mutex, held only for one bucket update (never across an await).
    buckets: Mutex<HashMap<ObjectId, Bucket>>,
}

impl SpamFilter {
    pub(crate) fn new(burst: u32, refill: Duration, capacity: usize) -> Self {
        SpamFilter {
            burst: f64::from(burst),
            refill,
            capacity: capacity.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a token from `regarding`'s bucket: `true` if the event may pass.
    pub(crate) fn allow(&self, regarding: &ObjectReference, now: Instant) -> bool {
        let id = ObjectId::of(regarding);
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let burst = self.burst;
        let bucket = buckets.entry(id.clone()).or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        let elapsed = now.saturating_duration_since(bucket.updated);
        let refilled = if self.refill.is_zero() {
            burst
        } else {
            elapsed.as_secs_f64() / self.refill.as_secs_f64()
        };
        bucket.tokens = (bucket.tokens + refilled).min(burst);
        bucket.updated = now;
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        if buckets.len() > self.capacity {
            Self::evict_oldest_locked(&mut buckets, &id);
        }
        allowed
    }

    /// Forgets the least recently used bucket other than `keep`'s.
    fn evict_oldest_locked(buckets: &mut HashMap<ObjectId, Bucket>, keep: &ObjectId) {
        let oldest = buckets
            .iter()
            .filter(|(id, _)| *id != keep)
            .min_by_key(|(_, b)| b.updated)
            .map(|(id, _)| id.clone());
        if let Some(id) = oldest {
            buckets.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("ConfigMap".into()),
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectReference::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn burst_then_one_token_per_refill_period() {
        let filter = SpamFilter::new(25, Duration::from_secs(300), 4096);
        let a = object("a");
        let passed = (0..100)
            .filter(|_| filter.allow(&a, Instant::now()))
            .count();
        assert_eq!(passed, 25);
        // Another object has its own bucket.
        assert!(filter.allow(&object("b"), Instant::now()));
        tokio::time::advance(Duration::from_secs(299)).await;
        assert!(!filter.allow(&a, Instant::now()));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(filter.allow(&a, Instant::now()));
        assert!(!filter.allow(&a, Instant::now()));
    }

    #[tokio::test(start_paused = true)]
    async fn the_least_recently_used_bucket_is_forgotten_past_capacity() {
        let filter = SpamFilter::new(1, Duration::from_secs(300), 2);
        assert!(filter.allow(&object("a"), Instant::now()));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(filter.allow(&object("b"), Instant::now()));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(filter.allow(&object("c"), Instant::now()));
        // `a` was evicted, so its bucket starts full again; `c` is still empty.
        assert!(filter.allow(&object("a"), Instant::now()));
        assert!(!filter.allow(&object("c"), Instant::now()));
    }
}
