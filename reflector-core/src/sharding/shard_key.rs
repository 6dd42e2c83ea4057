//! [`shard_key`]: the key an object is sharded by.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::object::ObjectKey;

/// The key the [`Sharder`](super::Sharder) hashes to place an object: its controller
/// owner's key (`namespace/owner-name`) if it has a controller owner reference, so
/// children land on their owner's shard and a shard's `owns` relations stay inside
/// it; otherwise its own key (`namespace/name`, or `name` when cluster-scoped). The
/// owner is taken to be in the object's namespace (owner references cannot point
/// across namespaces; a cluster-scoped owner of a namespaced child is keyed in the
/// child's namespace). `None` if the object has no name.
///
/// # Example
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
/// use reflector::sharding::shard_key;
///
/// let web = ObjectMeta {
///     name: Some("web".into()),
///     namespace: Some("prod".into()),
///     ..ObjectMeta::default()
/// };
/// assert_eq!(shard_key(&web).unwrap().as_str(), "prod/web");
///
/// let child = ObjectMeta {
///     name: Some("web-config".into()),
///     namespace: Some("prod".into()),
///     owner_references: Some(vec![OwnerReference {
///         api_version: "example.com/v1".into(),
///         kind: "Widget".into(),
///         name: "web".into(),
///         uid: "1".into(),
///         controller: Some(true),
///         ..OwnerReference::default()
///     }]),
///     ..ObjectMeta::default()
/// };
/// assert_eq!(shard_key(&child).unwrap().as_str(), "prod/web");
/// ```
#[must_use]
pub fn shard_key(meta: &ObjectMeta) -> Option<ObjectKey> {
    let namespace = meta.namespace.as_deref().filter(|n| !n.is_empty());
    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true) && !r.name.is_empty());
    match controller {
        Some(owner) => Some(ObjectKey::new(namespace, &owner.name)),
        None => meta
            .name
            .as_deref()
            .filter(|n| !n.is_empty())
            .map(|name| ObjectKey::new(namespace, name)),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn owner(name: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            uid: "u".into(),
            controller,
            ..OwnerReference::default()
        }
    }

    #[test]
    fn only_a_controller_owner_replaces_the_own_key() {
        let mut meta = ObjectMeta {
            name: Some("child".into()),
            namespace: Some("ns".into()),
            owner_references: Some(vec![owner("plain", None), owner("other", Some(false))]),
            ..ObjectMeta::default()
        };
        assert_eq!(shard_key(&meta).unwrap().as_str(), "ns/child");
        meta.owner_references
            .as_mut()
            .unwrap()
            .push(owner("boss", Some(true)));
        assert_eq!(shard_key(&meta).unwrap().as_str(), "ns/boss");
    }

    #[test]
    fn cluster_scoped_and_nameless() {
        let node = ObjectMeta {
            name: Some("node-1".into()),
            ..ObjectMeta::default()
        };
        assert_eq!(shard_key(&node).unwrap().as_str(), "node-1");
        assert_eq!(shard_key(&ObjectMeta::default()), None);
    }
}
