//! The RBAC a `Manager` derives from what it runs, checked against what it does: the
//! operator example (`examples/operator.rs`, two controllers, one Lease, Events) runs
//! its whole demo on the embedded server, and no request it made would be denied by
//! the ClusterRole and Role it prints. And the manifests it prints deploy it.

#[allow(dead_code)]
#[path = "../../examples/operator.rs"]
mod operator;

use k8s_openapi::api::rbac::v1::PolicyRule;
use reflector::manager::{DeployOptions, Rbac};
use reflector_testkit::{RequestLogEntry, Verb};

/// Whether `rule` grants `verb` on `resource` (`plural` or `plural/subresource`) of
/// `group`, for the object `name` if the request names one, as the RBAC authorizer
/// decides.
fn grants(rule: &PolicyRule, group: &str, resource: &str, verb: &str, name: Option<&str>) -> bool {
    let has = |list: &Option<Vec<String>>, item: &str| {
        list.as_ref()
            .is_some_and(|l| l.iter().any(|x| x == item || x == "*"))
    };
    let named = match rule.resource_names.as_deref() {
        None | Some([]) => true,
        Some(names) => name.is_some_and(|n| names.iter().any(|x| x == n)),
    };
    has(&rule.api_groups, group)
        && has(&rule.resources, resource)
        && rule.verbs.iter().any(|v| v == verb || v == "*")
        && named
}

/// Whether `rbac` allows the request `entry`, as the API server's RBAC authorizer
/// would. Discovery (non-resource requests) is allowed to every authenticated user
/// by the default `system:discovery` role.
fn allowed(rbac: &Rbac, entry: &RequestLogEntry) -> bool {
    let verb = match entry.verb {
        Verb::Get => "get",
        Verb::List => "list",
        Verb::Watch => "watch",
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Patch => "patch",
        Verb::Delete => "delete",
        Verb::DeleteCollection => "deletecollection",
        Verb::Other => return true,
        _ => return false,
    };
    let path: Vec<&str> = entry.path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match path.as_slice() {
        ["api", _, rest @ ..] => ("", rest),
        ["apis", group, _, rest @ ..] => (*group, rest),
        _ => return false,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(*ns), rest),
        _ => (None, rest),
    };
    let resource = match rest {
        [plural, _, subresource] => format!("{plural}/{subresource}"),
        [plural, ..] => (*plural).to_owned(),
        [] => return false,
    };
    // A named request, or a list/watch selecting one name (RBAC's resourceNames
    // apply to those).
    let name = match rest {
        [_, name, ..] => Some((*name).to_owned()),
        _ => entry
            .param("fieldSelector")
            .and_then(|f| f.strip_prefix("metadata.name="))
            .map(str::to_owned),
    };
    let by = |rules: &Option<Vec<PolicyRule>>| {
        let rules = rules.as_deref().unwrap_or_default();
        rules
            .iter()
            .any(|r| grants(r, group, &resource, verb, name.as_deref()))
    };
    let in_role = rbac
        .role
        .as_ref()
        .is_some_and(|role| role.metadata.namespace.as_deref() == namespace && by(&role.rules));
    by(&rbac.cluster_role.rules) || in_role
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manager_rbac_allows_every_request_of_the_operator_demo() {
    let mut demo = operator::demo::Demo::start().await.unwrap();
    let manager = operator::operator(demo.client()).unwrap();
    let rbac = manager.rbac("widget-operator");
    let manager = manager
        .metrics_server("127.0.0.1:0".parse().unwrap())
        .unwrap();
    let addr = manager.metrics_addr().unwrap();
    manager
        .graceful_shutdown_on(demo.story(addr))
        .run()
        .await
        .unwrap();
    let requests = demo.operator_requests();
    demo.outcome().await.unwrap();

    let denied: Vec<&RequestLogEntry> = requests.iter().filter(|r| !allowed(&rbac, r)).collect();
    assert!(denied.is_empty(), "denied by the printed RBAC: {denied:#?}");
    // The demo made every kind of request the RBAC is for.
    let made = |verb: Verb, resource: &str, subresource: Option<&str>| {
        requests.iter().any(|r| {
            r.verb == verb
                && r.resource.as_deref() == Some(resource)
                && r.subresource.as_deref() == subresource
        })
    };
    for (verb, resource, subresource) in [
        (Verb::List, "widgetsets", None),
        (Verb::Watch, "widgets", None),
        (Verb::Watch, "configmaps", None),
        (Verb::Patch, "widgets", None),
        (Verb::Delete, "widgets", None),
        (Verb::Patch, "widgetsets", Some("status")),
        (Verb::Delete, "configmaps", None),
        (Verb::Create, "events", None),
        (Verb::Create, "leases", None),
        (Verb::Update, "leases", None),
    ] {
        assert!(
            made(verb, resource, subresource),
            "no {verb:?} of {resource} {subresource:?}"
        );
    }
}

#[tokio::test]
async fn manager_manifests_deploy_the_operator() {
    let client = operator::demo::offline_client().unwrap();
    let manager = operator::operator(client).unwrap();
    let options = DeployOptions::new("widget-operator", "example/widget-operator:1")
        .namespace("widgets")
        .args(["--cluster"])
        .replicas(2);
    let manifests = manager.manifests(&options);
    let kinds: Vec<String> = manifests
        .objects()
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        kinds,
        [
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment"
        ]
    );
    let role = manifests.role.as_ref().unwrap();
    assert_eq!(
        role.metadata.namespace.as_deref(),
        Some("widgets"),
        "a Lease in the client's default namespace is the pods' own"
    );
    let binding = manifests.cluster_role_binding.subjects.as_ref().unwrap();
    assert_eq!(binding[0].namespace.as_deref(), Some("widgets"));
    let deployment = &manifests.deployment;
    assert_eq!(deployment.spec.replicas, Some(2));
    let pod = deployment.spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some("widget-operator"));
    let container = &pod.containers[0];
    assert_eq!(
        container.args.as_deref(),
        Some(&["--cluster".to_owned()][..])
    );
    let port = &container.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.container_port),
        (Some("metrics"), 8080)
    );
    let path = |probe: &Option<k8s_openapi::api::core::v1::Probe>| {
        probe
            .as_ref()
            .and_then(|p| p.http_get.as_ref()?.path.clone())
    };
    assert_eq!(path(&container.liveness_probe).as_deref(), Some("/healthz"));
    assert_eq!(path(&container.readiness_probe).as_deref(), Some("/readyz"));
    assert!(pod.termination_grace_period_seconds.unwrap() > 30);
    // It all serializes to YAML, as `--print-manifests` prints it.
    for object in manifests.objects() {
        serde_norway::to_string(&object).unwrap();
    }
}
