//! Clients of the embedded server as one replica of an operator has them: its own
//! `User-Agent` (so a fault can target it) and a default namespace (where a
//! manager's Lease goes, as a pod's own namespace in a cluster).

use reflector_testkit::ApiServer;

/// A client of `server` whose requests carry `User-Agent: <agent>` and whose
/// default namespace is `namespace`.
pub fn replica_client(server: &ApiServer, agent: &str, namespace: &str) -> kube::Client {
    let mut config = kube::Config::new(server.url().parse().expect("the server's URL"));
    config.default_namespace = namespace.to_owned();
    let agent = http::HeaderValue::from_str(agent).expect("a valid User-Agent");
    config.headers.push((http::header::USER_AGENT, agent));
    kube::Client::try_from(config).expect("kube builds a plain-HTTP client")
}
