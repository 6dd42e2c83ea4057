//! [`LeaseLock`]: reads and writes the election's `coordination.k8s.io/v1` Lease,
//! as client-go's `resourcelock.LeaseLock`.

use std::collections::BTreeMap;
use std::future::ready;

use futures::stream::{BoxStream, StreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{PostParams, WatchEvent, WatchParams};

/// How a write of the lease ended.
#[derive(Debug)]
pub(crate) enum Write {
    /// Written; the lease as the server stored it.
    Done(Box<Lease>),
    /// 409: another replica wrote first (the `resourceVersion` precondition failed,
    /// or the lease was created meanwhile). A lost race, not an error.
    LostRace,
    /// Any other failure.
    Failed(kube::Error),
}

/// What a watch of the lease reports.
#[derive(Debug)]
pub(crate) enum LeaseChange {
    /// The lease was created or updated.
    Written(Box<Lease>),
    /// The lease was deleted.
    Deleted,
    /// The watch was refused with 403: the replica's role grants no `watch` on
    /// leases (client-go's election needs only get, create and update).
    Forbidden,
}

/// The Lease of one election.
#[derive(Clone)]
pub(crate) struct LeaseLock {
    pub(crate) api: Api<Lease>,
    pub(crate) name: String,
    /// Labels the lease carries (written on create, restored on update if removed):
    /// none for an election; a ring's membership leases carry the ring label.
    pub(crate) labels: BTreeMap<String, String>,
}

impl LeaseLock {
    /// The lease, or `None` if it does not exist.
    ///
    /// # Cancel safety
    /// Cancel-safe: a read.
    pub(crate) async fn get(&self) -> Result<Option<Lease>, kube::Error> {
        self.api.get_opt(&self.name).await
    }

    /// Creates the lease with `spec`.
    ///
    /// # Cancel safety
    /// Dropping the future may leave the lease created without the caller knowing;
    /// the next read sees it.
    pub(crate) async fn create(&self, spec: LeaseSpec) -> Write {
        let mut lease = Lease::default();
        lease.metadata.name = Some(self.name.clone());
        if !self.labels.is_empty() {
            lease.metadata.labels = Some(self.labels.clone());
        }
        lease.spec = Some(spec);
        classify(self.api.create(&PostParams::default(), &lease).await)
    }

    /// The lease's changes after `resource_version`. The watch is opened when the
    /// stream is first polled (so opening it never holds up the caller's other
    /// branches); the stream ends when the watch fails or the server closes it (the
    /// caller opens another from the resourceVersion it read last), right after
    /// [`LeaseChange::Forbidden`] if the watch is not allowed.
    pub(crate) fn changes(&self, resource_version: String) -> BoxStream<'static, LeaseChange> {
        let api = self.api.clone();
        let params = WatchParams::default().fields(&format!("metadata.name={}", self.name));
        let name = self.name.clone();
        futures::stream::once(async move { api.watch(&params, &resource_version).await })
            .flat_map(move |opened| match opened {
                Ok(events) => events
                    .take_while(|event| {
                        ready(matches!(event, Ok(event) if !matches!(event, WatchEvent::Error(_))))
                    })
                    .filter_map(|event| {
                        ready(match event {
                            Ok(WatchEvent::Added(lease) | WatchEvent::Modified(lease)) => {
                                Some(LeaseChange::Written(Box::new(lease)))
                            }
                            Ok(WatchEvent::Deleted(_)) => Some(LeaseChange::Deleted),
                            _ => None,
                        })
                    })
                    .boxed(),
                Err(kube::Error::Api(status)) if status.code == 403 => {
                    futures::stream::iter([LeaseChange::Forbidden]).boxed()
                }
                Err(error) => {
                    tracing::debug!(lease = %name, %error, "could not watch the lease; polling until the next attempt");
                    futures::stream::empty().boxed()
                }
            })
            .boxed()
    }

    /// Replaces the spec of `observed`, on the condition that the lease is still at
    /// `observed`'s `resourceVersion`.
    ///
    /// # Cancel safety
    /// As [`create`](Self::create).
    pub(crate) async fn update(&self, mut observed: Lease, spec: LeaseSpec) -> Write {
        observed.spec = Some(spec);
        if !self.labels.is_empty() {
            let labels = observed.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(self.labels.clone());
        }
        // The server fills these in; sending them back is noise.
        observed.metadata.managed_fields = None;
        classify(
            self.api
                .replace(&self.name, &PostParams::default(), &observed)
                .await,
        )
    }
}

fn classify(result: Result<Lease, kube::Error>) -> Write {
    match result {
        Ok(lease) => Write::Done(Box::new(lease)),
        Err(kube::Error::Api(status)) if status.code == 409 => Write::LostRace,
        Err(e) => Write::Failed(e),
    }
}

/// The spec client-go writes for a `LeaderElectionRecord`
/// (`LeaderElectionRecordToLeaseSpec`): `holderIdentity` always, `""` for no holder
/// (a release); strategy and preferred holder unset (no coordinated election).
pub(crate) fn record(
    holder: &str,
    lease_duration_seconds: i32,
    acquire_time: Option<MicroTime>,
    renew_time: MicroTime,
    lease_transitions: i32,
) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(holder.to_owned()),
        lease_duration_seconds: Some(lease_duration_seconds),
        acquire_time,
        renew_time: Some(renew_time),
        lease_transitions: Some(lease_transitions),
        ..LeaseSpec::default()
    }
}

/// The holder named by `spec`, if any (an empty identity is no holder).
pub(crate) fn holder(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity.as_deref().filter(|h| !h.is_empty())
}
