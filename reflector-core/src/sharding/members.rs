//! The ring's available members, as one replica observes them: a shard is
//! available while its membership Lease names a holder and has not expired by the
//! observer's own clock.
//!
//! Expiry is judged as client-go's leader election judges it: a lease is valid for
//! its `leaseDurationSeconds` after the observer *saw it change*, never from the
//! `renewTime` another machine wrote, so clock skew between replicas does not
//! matter. Seeing the same record again (a relist) does not extend it.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::informer::{Change, SharedIndexInformer};
use crate::leader_election::ObservedLease;
use crate::listwatch::ApiListerWatcher;

use super::labels::RING_LABEL;

/// When a membership lease stops counting its shard as available: its expiry, if it
/// names a holder (a released lease names none).
fn member_expiry(seen: &ObservedLease) -> Option<Instant> {
    seen.holder().map(|_| seen.expiry())
}

/// The membership leases of one ring, by shard name. Owned by the observer task.
pub(crate) struct MemberTable {
    /// `<ring>-`: a member lease's name is this prefix and the shard's name.
    prefix: String,
    leases: HashMap<String, ObservedLease>,
}

impl MemberTable {
    pub(crate) fn new(ring: &str) -> Self {
        MemberTable {
            prefix: format!("{ring}-"),
            leases: HashMap::new(),
        }
    }

    /// The shard a lease named `lease_name` stands for, if it is one of the ring's.
    fn shard_of<'a>(&self, lease_name: &'a str) -> Option<&'a str> {
        lease_name
            .strip_prefix(&self.prefix)
            .filter(|s| !s.is_empty() && *s != super::labels::SHARDER)
    }

    /// Records `lease` as seen at `now`; its observation time moves only when its
    /// spec changed.
    pub(crate) fn observe(&mut self, lease: &Lease, now: Instant) {
        let Some(shard) = lease
            .metadata
            .name
            .as_deref()
            .and_then(|n| self.shard_of(n))
        else {
            return;
        };
        let spec = lease.spec.clone().unwrap_or_default();
        match self.leases.get_mut(shard) {
            Some(seen) => seen.see(spec, now),
            None => {
                self.leases
                    .insert(shard.to_owned(), ObservedLease::new(spec, now));
            }
        }
    }

    /// Forgets a deleted lease.
    pub(crate) fn forget(&mut self, lease: &Lease) {
        if let Some(shard) = lease
            .metadata
            .name
            .as_deref()
            .and_then(|n| self.shard_of(n))
        {
            self.leases.remove(shard);
        }
    }

    /// The shards available at `now`: holder named, not expired.
    pub(crate) fn available(&self, now: Instant) -> BTreeSet<String> {
        self.leases
            .iter()
            .filter(|(_, seen)| member_expiry(seen).is_some_and(|e| e > now))
            .map(|(shard, _)| shard.clone())
            .collect()
    }

    /// The next instant after `now` at which an available shard expires.
    pub(crate) fn next_expiry(&self, now: Instant) -> Option<Instant> {
        self.leases
            .values()
            .filter_map(member_expiry)
            .filter(|e| *e > now)
            .min()
    }
}

/// Watches the ring's membership leases (`reflector.rs/ring=<ring>` in `leases`'
/// namespace) and publishes the available shards into `members` at every change and
/// expiry, until `cancel` fires.
///
/// # Cancel safety
/// Cancelling the token is the clean stop (the informer's tasks end before this
/// returns); dropping the future stops them too, without waiting.
pub(crate) async fn observe(
    leases: Api<Lease>,
    ring: &str,
    members: &watch::Sender<BTreeSet<String>>,
    cancel: &CancellationToken,
) {
    let lw = ApiListerWatcher::new(leases).labels(&format!("{RING_LABEL}={ring}"));
    let informer = SharedIndexInformer::new(lw);
    let (tx, mut rx) = mpsc::unbounded_channel();
    // The informer has not started, so this cannot fail; if it did, the ring would
    // see no members and assign nothing (never wrongly).
    if let Err(error) = informer.add_event_fn(move |ev: Change<Lease>| {
        let _ = tx.send(ev);
    }) {
        tracing::error!(%ring, %error, "cannot observe the ring's leases");
    }
    let mut table = MemberTable::new(ring);
    let publish = |table: &MemberTable| {
        let now = Instant::now();
        let available = table.available(now);
        members.send_if_modified(|m| {
            let changed = *m != available;
            if changed {
                tracing::info!(%ring, members = ?available, "ring membership changed");
                *m = available;
            }
            changed
        });
    };
    let table_loop = async {
        loop {
            let wake = table.next_expiry(Instant::now());
            tokio::select! {
                biased;
                () = cancel.cancelled() => return,
                ev = rx.recv() => match ev {
                    Some(Change::Added { obj, .. }) | Some(Change::Updated { new: obj, .. }) => {
                        table.observe(&obj, Instant::now());
                    }
                    Some(Change::Deleted(d)) => table.forget(d.object()),
                    None => return,
                },
                () = sleep_until_opt(wake) => {}
            }
            publish(&table);
        }
    };
    tokio::join!(informer.run(cancel.clone()), table_loop);
    members.send_if_modified(|m| {
        let changed = !m.is_empty();
        m.clear();
        changed
    });
}

/// Sleeps until `at`, or forever without it.
///
/// # Cancel safety
/// Cancel-safe: a sleep.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    fn lease(name: &str, holder: Option<&str>, seconds: i32, renew: i64) -> Lease {
        let mut l = Lease::default();
        l.metadata.name = Some(name.into());
        l.spec = Some(LeaseSpec {
            holder_identity: holder.map(Into::into),
            lease_duration_seconds: Some(seconds),
            renew_time: Some(MicroTime(Timestamp::from_second(renew).unwrap())),
            ..LeaseSpec::default()
        });
        l
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    /// A member is available for its lease duration after the observer saw its
    /// record change: re-seeing the same record does not extend it, a renewal does,
    /// and a renewTime far in the past (another machine's clock) does not matter.
    #[tokio::test(start_paused = true)]
    async fn expiry_counts_from_the_observed_change() {
        let mut t = MemberTable::new("ring");
        let t0 = Instant::now();
        t.observe(&lease("ring-a", Some("a"), 10, 1), t0);
        t.observe(&lease("ring-b", Some("b"), 10, 1), t0);
        assert_eq!(t.available(t0), set(&["a", "b"]));
        t.observe(&lease("ring-a", Some("a"), 10, 1), t0 + S(5));
        t.observe(&lease("ring-b", Some("b"), 10, 2), t0 + S(5));
        assert_eq!(t.next_expiry(t0), Some(t0 + S(10)));
        assert_eq!(t.available(t0 + S(10)), set(&["b"]), "a was only re-seen");
        assert_eq!(t.next_expiry(t0 + S(10)), Some(t0 + S(15)));
        assert_eq!(t.available(t0 + S(15)), set(&[]));
        assert_eq!(t.next_expiry(t0 + S(15)), None);
    }

    /// A released lease (no holder) and a deleted one are not members; leases of
    /// other rings and the sharder election's lease never are.
    #[tokio::test(start_paused = true)]
    async fn released_deleted_and_foreign_leases_are_not_members() {
        let mut t = MemberTable::new("ring");
        let now = Instant::now();
        for name in ["ring-a", "ring-b", "ring-sharder", "other-c", "ring-"] {
            t.observe(&lease(name, Some("x"), 15, 1), now);
        }
        assert_eq!(t.available(now), set(&["a", "b"]));
        t.observe(&lease("ring-a", None, 1, 2), now);
        t.forget(&lease("ring-b", Some("x"), 15, 1));
        assert_eq!(t.available(now), set(&[]));
        assert_eq!(t.next_expiry(now), None);
    }
}
