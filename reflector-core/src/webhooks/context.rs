//! [`AdmissionContext`]: what a defaulting or validating hook is told about the
//! request besides the object.

use k8s_openapi::api::authentication::v1::UserInfo;
use kube::core::admission::Operation;

/// The request a [`Defaulter`](super::Defaulter) or [`Validator`](super::Validator)
/// is called for: the operation, whether it is a dry run, who asks, and where.
///
/// The server fills it from the `AdmissionReview`'s request; tests of a hook make
/// one with [`new`](Self::new) and set the fields they need.
///
/// # Example
/// ```
/// use kube::core::admission::Operation;
/// use reflector::webhooks::AdmissionContext;
///
/// let mut ctx = AdmissionContext::new(Operation::Create);
/// ctx.dry_run = true;
/// ctx.namespace = Some("default".into());
/// assert_eq!(ctx.user_info.username, None);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AdmissionContext {
    /// `CREATE`, `UPDATE` or `DELETE` (a patch that creates is a `CREATE`).
    pub operation: Operation,
    /// `true` when the write will not be persisted (`kubectl --dry-run=server`):
    /// a hook with side effects must not make them.
    pub dry_run: bool,
    /// Who sent the request: user name, uid, groups and extra attributes.
    pub user_info: UserInfo,
    /// The object's namespace; `None` for a cluster-scoped kind.
    pub namespace: Option<String>,
    /// The object's name; empty on a `CREATE` that asks the server to generate it.
    pub name: String,
    /// The subresource written (`status`, `scale`), if any.
    pub sub_resource: Option<String>,
}

impl AdmissionContext {
    /// A context for `operation`: not a dry run, anonymous, no namespace, no name,
    /// no subresource.
    #[must_use]
    pub fn new(operation: Operation) -> Self {
        AdmissionContext {
            operation,
            dry_run: false,
            user_info: UserInfo::default(),
            namespace: None,
            name: String::new(),
            sub_resource: None,
        }
    }
}
