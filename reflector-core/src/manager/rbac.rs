//! [`Rbac`]: the least RBAC for what a manager runs, derived from its controllers,
//! its election and its recorders.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::controller::KindUse;

use super::Manager;

/// What every informer does: list and watch, and a reconcile's reads.
const READ: [&str; 3] = ["get", "list", "watch"];
/// A primary is written by the finalizer (patch) and by status updates.
const WRITE_PRIMARY: [&str; 2] = ["patch", "update"];
/// Owned children are made, changed and removed.
const WRITE_OWNED: [&str; 4] = ["create", "delete", "patch", "update"];

/// The least RBAC for what a [`Manager`] runs, as k8s-openapi objects:
///
/// | what | rules |
/// |---|---|
/// | every kind a controller watches (its informers) | `get`, `list`, `watch` |
/// | a controller's primary kind | also `patch`, `update` (finalizers), and `patch`, `update` on its `status` subresource |
/// | a kind a controller [`owns`](crate::controller::Controller::owns) | also `create`, `update`, `patch`, `delete` |
/// | `events.k8s.io` Events, if the manager handed out a [`recorder`](Manager::recorder) | `create`, `patch` |
/// | the webhook server's caBundle keeper (feature `webhooks`) | `get`, `patch` on its webhook configurations and CRDs, by name |
/// | rules added with [`rbac_rule`](Manager::rbac_rule) | as given |
///
/// in the [`ClusterRole`], one rule per API group and set of verbs; and, with a
/// leader election, a [`Role`] in the Lease's namespace: `create` on Leases, and
/// `get`, `update`, `watch` on the election's Lease by name (its watch selects it by
/// name).
///
/// Writes the manager cannot see (a reconcile that creates a kind it does not own,
/// through its own `Api`) need a [`rbac_rule`](Manager::rbac_rule). A sharded
/// controller's ring (its membership Leases, the sharder's label patches) is not
/// included: add its rules the same way.
///
/// # Example
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::controller::Controller;
/// use reflector::manager::Manager;
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
/// # async fn reconcile(_: reflector::controller::Request<ConfigMap>, _: std::sync::Arc<()>) -> Result<reflector::controller::Action, kube::Error> { Ok(reflector::controller::Action::done()) }
/// let mut manager = Manager::new(client);
/// let config_maps = manager.factory().informer::<ConfigMap>();
/// manager.add(Controller::new(config_maps), reconcile, std::sync::Arc::new(()));
/// let rbac = manager.rbac("my-operator");
/// let rules = rbac.cluster_role.rules.unwrap();
/// assert_eq!(rules[0].resources, Some(vec!["configmaps".to_owned()]));
/// assert_eq!(rules[0].verbs, ["get", "list", "patch", "update", "watch"]);
/// assert!(rbac.role.is_none(), "no election, no Lease");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Rbac {
    /// Every kind the controllers read and write, the Events, and the rules added.
    pub cluster_role: ClusterRole,
    /// The election's Lease, in its namespace; `None` without an election.
    pub role: Option<Role>,
}

impl Manager {
    /// The least RBAC for what this manager runs (see [`Rbac`]), its ClusterRole
    /// and Role named `name`.
    #[must_use]
    pub fn rbac(&self, name: &str) -> Rbac {
        let mut verbs: BTreeMap<(String, String), BTreeSet<&'static str>> = BTreeMap::new();
        let mut grant = |group: &str, resource: String, granted: &[&'static str]| {
            verbs
                .entry((group.to_owned(), resource))
                .or_default()
                .extend(granted);
        };
        for (kind, used) in &self.kinds {
            grant(&kind.group, kind.resource.clone(), &READ);
            match used {
                KindUse::Primary => {
                    grant(&kind.group, kind.resource.clone(), &WRITE_PRIMARY);
                    grant(
                        &kind.group,
                        format!("{}/status", kind.resource),
                        &WRITE_PRIMARY,
                    );
                }
                KindUse::Owned => grant(&kind.group, kind.resource.clone(), &WRITE_OWNED),
                KindUse::Watched => {}
            }
        }
        if !self.recorders.is_empty() {
            grant("events.k8s.io", "events".to_owned(), &["create", "patch"]);
        }
        // One rule per group and set of verbs, resources sorted.
        let mut rules: BTreeMap<(String, Vec<String>), Vec<String>> = BTreeMap::new();
        for ((group, resource), granted) in verbs {
            let granted = granted.into_iter().map(str::to_owned).collect();
            rules.entry((group, granted)).or_default().push(resource);
        }
        let mut cluster_rules: Vec<PolicyRule> = rules
            .into_iter()
            .map(|((group, verbs), resources)| rule(&group, resources, None, verbs))
            .collect();
        #[cfg(feature = "webhooks")]
        cluster_rules.extend(self.webhooks.iter().flat_map(|w| w.keeper_rules()));
        cluster_rules.extend(self.extra_rules.iter().cloned());
        let cluster_role = ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            rules: Some(cluster_rules),
            ..ClusterRole::default()
        };
        let role = self.election.as_ref().map(|election| Role {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some(election.namespace().to_owned()),
                ..ObjectMeta::default()
            },
            rules: Some(vec![
                rule(
                    "coordination.k8s.io",
                    vec!["leases".into()],
                    None,
                    vec!["create".into()],
                ),
                rule(
                    "coordination.k8s.io",
                    vec!["leases".into()],
                    Some(vec![election.name().to_owned()]),
                    vec!["get".into(), "update".into(), "watch".into()],
                ),
            ]),
        });
        Rbac { cluster_role, role }
    }
}

/// A rule granting `verbs` on `resources` of `group` (by name, with `names`).
fn rule(
    group: &str,
    resources: Vec<String>,
    names: Option<Vec<String>>,
    verbs: Vec<String>,
) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(resources),
        resource_names: names,
        verbs,
        ..PolicyRule::default()
    }
}
