//! [`GroupResource`]: a kind as RBAC and the API server's URLs name it — its API
//! group and resource (plural), without a version (client-go's
//! `schema.GroupResource`).

use std::fmt;

use kube::Resource;

/// An API group and a resource of it, as in its URLs (`""` and `configmaps`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct GroupResource {
    /// The API group (`""` for the core group).
    pub(crate) group: String,
    /// The resource, as in the URL (`configmaps`).
    pub(crate) resource: String,
}

impl GroupResource {
    /// The group and resource of `K`, described by `dyntype`.
    pub(crate) fn of<K: Resource>(dyntype: &K::DynamicType) -> Self {
        GroupResource {
            group: K::group(dyntype).into_owned(),
            resource: K::plural(dyntype).into_owned(),
        }
    }
}

/// `configmaps`, `deployments.apps`: as `kubectl` and RBAC errors spell it.
impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}
