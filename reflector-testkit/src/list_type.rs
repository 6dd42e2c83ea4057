//! How server-side apply (and strategic merge patch, by the first key) treats each list:
//! the `x-kubernetes-list-type` of the built-in types this server serves, a workload's
//! Pod template included. Lists not named here are atomic (replaced whole), which is
//! also what a CRD's lists are unless its schema says otherwise (not read here).

/// A list's merge strategy (`x-kubernetes-list-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListType {
    /// Replaced as a whole; owned as one field.
    Atomic,
    /// Items merged by these key fields (`x-kubernetes-list-map-keys`), each owned apart.
    Map(&'static [KeyField]),
    /// Scalar items, each owned apart (`x-kubernetes-list-type: set`).
    Set,
}

/// One key field of an associative list, with the default the schema gives it when an
/// item omits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyField {
    /// The field's name.
    pub name: &'static str,
    /// Its schema default, if any (`protocol: TCP` for container ports).
    pub default: Option<&'static str>,
}

const fn key(name: &'static str) -> KeyField {
    KeyField {
        name,
        default: None,
    }
}

const NAME: &[KeyField] = &[key("name")];
const TYPE: &[KeyField] = &[key("type")];
const IP: &[KeyField] = &[key("ip")];
const UID: &[KeyField] = &[key("uid")];
const MOUNT_PATH: &[KeyField] = &[key("mountPath")];
const DEVICE_PATH: &[KeyField] = &[key("devicePath")];
const SPREAD: &[KeyField] = &[key("topologyKey"), key("whenUnsatisfiable")];
const PORTS: &[KeyField] = &[
    key("containerPort"),
    KeyField {
        name: "protocol",
        default: Some("TCP"),
    },
];

/// The list type of the list at `fields` (the path's field names, list keys left out) in
/// an object of `group`/`kind`.
pub(crate) fn list_type(group: &str, kind: &str, fields: &[&str]) -> ListType {
    match fields {
        ["metadata", "finalizers"] => return ListType::Set,
        ["metadata", "ownerReferences"] => return ListType::Map(UID),
        _ => {}
    }
    // A workload's Pod template has a Pod's lists.
    let (kind, fields) = match (group, kind, fields) {
        (
            "apps",
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet",
            ["spec", "template", rest @ ..],
        )
        | ("batch", "Job", ["spec", "template", rest @ ..])
        | ("", "ReplicationController", ["spec", "template", rest @ ..])
        | ("batch", "CronJob", ["spec", "jobTemplate", "spec", "template", rest @ ..])
        | ("", "PodTemplate", ["template", rest @ ..])
            if rest.first() == Some(&"spec") =>
        {
            ("Pod", rest)
        }
        ("", kind, fields) => (kind, fields),
        _ => return ListType::Atomic,
    };
    let containers = ["containers", "initContainers", "ephemeralContainers"];
    match (kind, fields) {
        ("Pod", ["spec", c]) if containers.contains(c) => ListType::Map(NAME),
        ("Pod", ["spec", c, "ports"]) if containers.contains(c) => ListType::Map(PORTS),
        ("Pod", ["spec", c, "env"]) if containers.contains(c) => ListType::Map(NAME),
        ("Pod", ["spec", c, "volumeMounts"]) if containers.contains(c) => ListType::Map(MOUNT_PATH),
        ("Pod", ["spec", c, "volumeDevices"]) if containers.contains(c) => {
            ListType::Map(DEVICE_PATH)
        }
        (
            "Pod",
            [
                "spec",
                "volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates",
            ],
        ) => ListType::Map(NAME),
        ("Pod", ["spec", "hostAliases"]) | ("Pod", ["status", "podIPs" | "hostIPs"]) => {
            ListType::Map(IP)
        }
        ("Pod", ["spec", "topologySpreadConstraints"]) => ListType::Map(SPREAD),
        ("Pod" | "Node" | "Namespace", ["status", "conditions"])
        | ("Node", ["status", "addresses"]) => ListType::Map(TYPE),
        ("Node", ["spec", "podCIDRs"]) => ListType::Set,
        _ => ListType::Atomic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_lists_of_the_served_built_ins() {
        assert_eq!(
            list_type("", "Pod", &["spec", "containers"]),
            ListType::Map(NAME)
        );
        assert_eq!(
            list_type("", "Pod", &["spec", "initContainers", "ports"]),
            ListType::Map(PORTS)
        );
        assert_eq!(
            list_type("example.com", "W", &["metadata", "finalizers"]),
            ListType::Set
        );
        assert_eq!(
            list_type("example.com", "W", &["spec", "items"]),
            ListType::Atomic
        );
        assert_eq!(
            list_type("", "Pod", &["spec", "tolerations"]),
            ListType::Atomic
        );
        assert_eq!(
            list_type(
                "apps",
                "Deployment",
                &["spec", "template", "spec", "containers"]
            ),
            ListType::Map(NAME)
        );
        assert_eq!(
            list_type(
                "batch",
                "CronJob",
                &["spec", "jobTemplate", "spec", "template", "spec", "volumes"]
            ),
            ListType::Map(NAME)
        );
    }
}
