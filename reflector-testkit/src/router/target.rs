//! What a request's path names: discovery, a collection, an object or one of its
//! subresources, resolved against the served resources.

use crate::server::Shared;
use crate::state::ResourceId;

/// What a path names.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/version`
    Version,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1`, `/apis/{group}/{version}`
    ResourceList { group: String, version: String },
    /// `/openapi/v2`, `/openapi/v3[/...]`: the path after `/openapi/`.
    OpenApi(String),
    /// A collection, optionally in a namespace.
    Collection {
        rid: ResourceId,
        plural: String,
        namespace: Option<String>,
    },
    /// One object, optionally its status subresource.
    Object {
        rid: ResourceId,
        plural: String,
        namespace: Option<String>,
        name: String,
        status: bool,
    },
    /// The `scale` subresource of a custom object whose CRD version has one.
    Scale {
        rid: ResourceId,
        plural: String,
        namespace: Option<String>,
        name: String,
    },
    /// The `binding` subresource of a core Pod (how a scheduler assigns its node).
    Binding {
        rid: ResourceId,
        plural: String,
        /// Always set (Pods are namespaced).
        namespace: Option<String>,
        name: String,
    },
    /// Nothing we serve.
    NotFound,
}

/// What a request for a resource names: the resource, its plural, and the namespace
/// and object name when the path has them.
pub(super) struct Named<'a> {
    pub(super) rid: ResourceId,
    pub(super) plural: &'a str,
    pub(super) namespace: Option<&'a str>,
    pub(super) name: Option<&'a str>,
}

impl Target {
    /// The resource this path names, for collections, objects and subresources.
    pub(super) fn named(&self) -> Option<Named<'_>> {
        match self {
            Self::Collection {
                rid,
                plural,
                namespace,
            } => Some(Named {
                rid: *rid,
                plural,
                namespace: namespace.as_deref(),
                name: None,
            }),
            Self::Object {
                rid,
                plural,
                namespace,
                name,
                ..
            }
            | Self::Scale {
                rid,
                plural,
                namespace,
                name,
            }
            | Self::Binding {
                rid,
                plural,
                namespace,
                name,
            } => Some(Named {
                rid: *rid,
                plural,
                namespace: namespace.as_deref(),
                name: Some(name),
            }),
            _ => None,
        }
    }

    pub(super) fn resource(&self) -> Option<&str> {
        self.named().map(|n| n.plural)
    }

    pub(super) fn subresource(&self) -> Option<&str> {
        match self {
            Self::Object { status: true, .. } => Some("status"),
            Self::Scale { .. } => Some("scale"),
            Self::Binding { .. } => Some("binding"),
            _ => None,
        }
    }
}

pub(super) fn parse_target(shared: &Shared, path: &str) -> Target {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api"] => return Target::CoreVersions,
        ["apis"] => return Target::Groups,
        ["version"] => return Target::Version,
        ["apis", group] => {
            let served = shared.state().served().any(|(_, r)| r.group == *group);
            return if served {
                Target::Group((*group).to_owned())
            } else {
                Target::NotFound
            };
        }
        ["openapi", rest @ ..] if !rest.is_empty() => return Target::OpenApi(rest.join("/")),
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Target::NotFound,
    };
    let state = shared.state();
    let lookup = |plural: &str| {
        state
            .find(group, version, plural)
            .map(|rid| (rid, state.resources[rid].namespaced))
    };
    let collection = |plural: &str, namespace: Option<&str>| match lookup(plural) {
        Some((rid, namespaced)) if namespaced || namespace.is_none() => Target::Collection {
            rid,
            plural: plural.to_owned(),
            namespace: namespace.map(str::to_owned),
        },
        _ => Target::NotFound,
    };
    let object =
        |plural: &str, namespace: Option<&str>, name: &str, sub: Option<&str>| match lookup(plural)
        {
            Some((rid, namespaced))
                if namespaced == namespace.is_some()
                    && !name.is_empty()
                    && (sub.is_none()
                        || (sub == Some("status") && state.resources[rid].status_subresource)) =>
            {
                Target::Object {
                    rid,
                    plural: plural.to_owned(),
                    namespace: namespace.map(str::to_owned),
                    name: name.to_owned(),
                    status: sub.is_some(),
                }
            }
            _ => Target::NotFound,
        };
    let scale = |plural: &str, namespace: Option<&str>, name: &str| match lookup(plural) {
        Some((rid, namespaced))
            if namespaced == namespace.is_some() && state.custom.scale(rid).is_some() =>
        {
            Target::Scale {
                rid,
                plural: plural.to_owned(),
                namespace: namespace.map(str::to_owned),
                name: name.to_owned(),
            }
        }
        _ => Target::NotFound,
    };
    match rest {
        [] => {
            if state
                .served()
                .any(|(_, r)| r.group == group && r.version == version)
            {
                Target::ResourceList {
                    group: group.to_owned(),
                    version: version.to_owned(),
                }
            } else {
                Target::NotFound
            }
        }
        ["namespaces", ns, plural] if lookup(plural).is_some() => collection(plural, Some(ns)),
        ["namespaces", ns, plural, name] if lookup(plural).is_some() => {
            object(plural, Some(ns), name, None)
        }
        ["namespaces", ns, plural, name, "scale"] if lookup(plural).is_some() => {
            scale(plural, Some(ns), name)
        }
        ["namespaces", ns, "pods", name, "binding"] if group.is_empty() => match lookup("pods") {
            Some((rid, true)) => Target::Binding {
                rid,
                plural: "pods".to_owned(),
                namespace: Some((*ns).to_owned()),
                name: (*name).to_owned(),
            },
            _ => Target::NotFound,
        },
        ["namespaces", ns, plural, name, sub] if lookup(plural).is_some() => {
            object(plural, Some(ns), name, Some(sub))
        }
        [plural] => collection(plural, None),
        [plural, name] => object(plural, None, name, None),
        [plural, name, "scale"] => scale(plural, None, name),
        [plural, name, sub] => object(plural, None, name, Some(sub)),
        _ => Target::NotFound,
    }
}
