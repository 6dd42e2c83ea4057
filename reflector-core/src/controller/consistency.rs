//! [`ConsistencyStore`]: the resource versions a controller wrote, per primary, so a
//! reconcile never runs on a cache older than the controller's own last write to it
//! (client-go's `ConsistencyStore`: `WroteAt`, `EnsureReady`, `Clear`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::time::Instant;

use crate::object::ObjectKey;
use crate::store::resource_version::StoreVersion;

use super::kind_key::KindKey;

/// How long a reconcile is deferred at most for the cache to reach a recorded
/// write: 10 s. A key still waiting then is queued again and reconciled whatever its
/// cache shows (its record is dropped), so a cache that never gets there (a write
/// its informer does not see, and no bookmark) costs a delay, never a stuck key.
pub(crate) const MAX_STALE_WAIT: Duration = Duration::from_secs(10);

/// One cache writes are recorded against: the primary informer's, or an owned
/// informer's.
pub(crate) struct Cache {
    /// What the cache holds: a write of it is recorded against this cache.
    pub(crate) kind: KindKey,
    pub(crate) version: Arc<StoreVersion>,
}

/// What one primary's reconcile waits for.
struct Record {
    /// The primary's uid when the writes were recorded: another object under the
    /// same key (deleted and created again) drops the record.
    uid: String,
    /// Per cache (its index in `caches`), the highest resource version written.
    targets: Vec<(usize, u64)>,
    /// When the last write was recorded: the wait is bounded from here.
    since: Instant,
    /// The cache and version a waiter is registered for: another deferral of the
    /// key for the same target registers no second one.
    parked: Option<(usize, u64)>,
}

/// Whether a primary's reconcile may run.
pub(crate) enum Readiness {
    /// Every cache has reached what was written (or nothing was).
    Ready,
    /// `version` has not reached `target` yet. `park`: no waiter is registered for
    /// it yet, so the caller registers one (and the fallback requeue).
    Wait {
        version: Arc<StoreVersion>,
        target: u64,
        park: bool,
    },
}

/// The resource versions one controller wrote, per primary key, against the caches
/// it reads (the primary informer's first, then each owned informer's).
///
/// Semantics (client-go's): per primary (key and uid) the highest version written
/// per cache; ready once every such cache's version is at least as large; a cache
/// with no version yet is not; a version that is not an integer (the write's or the
/// cache's) counts as reached; the record is dropped once ready, when the primary
/// is gone, or after [`MAX_STALE_WAIT`].
pub(crate) struct ConsistencyStore {
    caches: Vec<Cache>,
    /// How many primaries have a record: while none has, `ensure_ready` is one
    /// atomic load. Written under the `records` lock.
    pending: AtomicUsize,
    /// Guarded by its own mutex, never held across an await nor while a waiter is
    /// registered.
    records: Mutex<HashMap<ObjectKey, Record>>,
}

impl ConsistencyStore {
    /// A store recording writes against `caches` (the primary's first).
    pub(crate) fn new(caches: Vec<Cache>) -> Self {
        ConsistencyStore {
            caches,
            pending: AtomicUsize::new(0),
            records: Mutex::new(HashMap::new()),
        }
    }

    fn records(&self) -> MutexGuard<'_, HashMap<ObjectKey, Record>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts the records (call with the lock held, after a change).
    fn count_locked(&self, records: &HashMap<ObjectKey, Record>) {
        self.pending.store(records.len(), Ordering::Release);
    }

    /// Records that the controller wrote an object of kind `written` at
    /// `resource_version` for the primary under `key` (uid `uid`), against every
    /// cache holding that kind. Not recorded: a kind the controller has no informer
    /// for, a version that is not an integer.
    #[doc(alias = "WroteAt")]
    pub(crate) fn wrote_at(
        &self,
        key: &ObjectKey,
        uid: &str,
        written: &KindKey,
        resource_version: &str,
    ) {
        let Ok(rv) = resource_version.parse::<u64>() else {
            return;
        };
        let mut holding = (self.caches.iter().enumerate())
            .filter(|(_, c)| c.kind.holds(written))
            .map(|(i, _)| i)
            .peekable();
        if holding.peek().is_none() {
            return;
        }
        let mut records = self.records();
        let record = records.entry(key.clone()).or_insert_with(|| Record {
            uid: uid.to_owned(),
            targets: Vec::new(),
            since: Instant::now(),
            parked: None,
        });
        if record.uid != uid {
            record.uid = uid.to_owned();
            record.targets.clear();
            record.parked = None;
        }
        record.since = Instant::now();
        for cache in holding {
            match record.targets.iter_mut().find(|(c, _)| *c == cache) {
                Some((_, target)) => *target = (*target).max(rv),
                None => record.targets.push((cache, rv)),
            }
        }
        self.count_locked(&records);
    }

    /// Whether a reconcile of `key` may run: every cache it wrote to has reached
    /// the write (the record is then dropped). A record older than
    /// [`MAX_STALE_WAIT`] is dropped as ready.
    #[doc(alias = "EnsureReady")]
    pub(crate) fn ensure_ready(&self, key: &ObjectKey) -> Readiness {
        if self.pending.load(Ordering::Acquire) == 0 {
            return Readiness::Ready;
        }
        let mut records = self.records();
        let Some(record) = records.get_mut(key) else {
            return Readiness::Ready;
        };
        let behind = record
            .targets
            .iter()
            .find(|(c, target)| !self.caches[*c].version.reached(*target).is_over());
        if let Some(&(cache, target)) = behind {
            if record.since.elapsed() < MAX_STALE_WAIT {
                let park = record.parked != Some((cache, target));
                record.parked = Some((cache, target));
                return Readiness::Wait {
                    version: Arc::clone(&self.caches[cache].version),
                    target,
                    park,
                };
            }
            tracing::warn!(%key, target, wait = ?MAX_STALE_WAIT,
                "the cache did not reach the controller's last write in time; reconciling anyway");
        }
        records.remove(key);
        self.count_locked(&records);
        Readiness::Ready
    }

    /// The primary under `key` is cached as `uid` (`None`: gone): a record of
    /// another object under the key, or of one that is gone, is dropped.
    #[doc(alias = "Clear")]
    pub(crate) fn clear(&self, key: &ObjectKey, uid: Option<&str>) {
        if self.pending.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut records = self.records();
        if records
            .get(key)
            .is_some_and(|r| uid.is_none_or(|uid| r.uid != uid))
        {
            records.remove(key);
            self.count_locked(&records);
        }
    }
}

/// Where one reconcile's writes are recorded: the controller's store, under the
/// primary's key and uid.
#[derive(Clone)]
pub(crate) struct WriteLog {
    store: Arc<ConsistencyStore>,
    key: ObjectKey,
    uid: String,
}

impl WriteLog {
    /// Records the writes made for the primary under `key`, cached as `uid`, in
    /// `store`.
    pub(crate) fn new(store: Arc<ConsistencyStore>, key: ObjectKey, uid: String) -> Self {
        WriteLog { store, key, uid }
    }

    /// Records a write of `kind` whose answer carried `meta` (its resourceVersion;
    /// none: nothing to wait for).
    pub(crate) fn wrote(&self, kind: &KindKey, meta: &ObjectMeta) {
        if let Some(rv) = meta.resource_version.as_deref() {
            self.store.wrote_at(&self.key, &self.uid, kind, rv);
        }
    }
}

#[cfg(test)]
mod tests;
