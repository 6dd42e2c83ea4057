//! What the server registers for each hook: the kind it serves, the path it is
//! served on (derived from the kind, never typed by a user), and the function that
//! answers a review.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use kube::Resource;

use super::Denial;

/// What a hook answers to a review's body.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A review (the response filled in), sent with 200.
    Review(serde_json::Value),
    /// The body is not a review this hook can answer: 400 with the message.
    BadRequest(String),
}

/// Answers a review's body.
pub(crate) type Handler = Arc<dyn Fn(&[u8]) -> Answer + Send + Sync>;

/// A kind as a webhook configuration's rules and a CRD name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct HookKind {
    /// The API group (`""` for the core group).
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    /// The resource, as in the URL (`widgets`).
    pub(crate) plural: String,
}

impl HookKind {
    /// `K`'s group, version, kind and resource.
    pub(crate) fn of<K: Resource<DynamicType = ()>>() -> Self {
        HookKind {
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
        }
    }

    /// `group/version`, or `version` in the core group.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The group in a path or a name: `core` for the core group.
    fn group_segment(&self) -> &str {
        if self.group.is_empty() {
            "core"
        } else {
            &self.group
        }
    }

    /// The CRD's name, `<plural>.<group>`.
    pub(crate) fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }
}

/// What a hook does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Defaulting: a mutating webhook.
    Mutate,
    /// Validating; `delete`: deletes are validated too.
    Validate { delete: bool },
}

/// A defaulting or validating hook of one kind.
#[derive(Clone)]
pub(crate) struct AdmissionHook {
    pub(crate) kind: HookKind,
    pub(crate) purpose: Purpose,
    pub(crate) handler: Handler,
}

impl AdmissionHook {
    /// `/mutate/<group>/<version>/<plural>` or `/validate/…` (`core` for the core
    /// group).
    pub(crate) fn path(&self) -> String {
        let verb = match self.purpose {
            Purpose::Mutate => "mutate",
            Purpose::Validate { .. } => "validate",
        };
        let k = &self.kind;
        format!("/{verb}/{}/{}/{}", k.group_segment(), k.version, k.plural)
    }

    /// The webhook's name in its configuration, a qualified name unique to the
    /// kind: `<verb>.<plural>.<group>` (`core` for the core group).
    pub(crate) fn webhook_name(&self) -> String {
        let verb = match self.purpose {
            Purpose::Mutate => "default",
            Purpose::Validate { .. } => "validate",
        };
        let k = &self.kind;
        format!("{verb}.{}.{}.{}", k.version, k.plural, k.group_segment())
    }
}

impl std::fmt::Debug for AdmissionHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionHook")
            .field("kind", &self.kind)
            .field("purpose", &self.purpose)
            .finish_non_exhaustive()
    }
}

/// The conversion path of the CRD of `kind`: `/convert/<group>/<plural>`.
pub(crate) fn conversion_path(kind: &HookKind) -> String {
    format!("/convert/{}/{}", kind.group_segment(), kind.plural)
}

/// Runs a user's hook; a panic becomes a 500 denial (the request is refused, the
/// server goes on).
pub(crate) fn guarded<T>(hook: impl FnOnce() -> T) -> Result<T, Denial> {
    catch_unwind(AssertUnwindSafe(hook))
        .map_err(|_| Denial::new("the webhook's hook panicked").code(500))
}
