//! `reflector-testkit`: run the embedded API server standalone.
//!
//! ```text
//! reflector-testkit [--port PORT] [--demo] [--crd FILE]... [--admin] [--webhook-service NS/NAME=ADDR]...
//!                   [--kubeconfig FILE]
//! ```
//!
//! It prints its URL as the first line on stdout (logs go to stderr, coloured only when
//! stderr is a terminal) and runs until Ctrl+C or SIGTERM, then shuts down
//! gracefully: open watches end with their final chunk and the process exits 0.
//! `--crd FILE` creates the CustomResourceDefinitions in FILE (YAML, several documents
//! allowed, or JSON) through the API before the URL is printed; a file that cannot be read,
//! parsed or is rejected by the API's CRD validation is an error message and exit code 2.
//! `--admin` serves the admin API under `/testkit/admin/` (see the crate docs).
//! `--webhook-service NS/NAME=ADDR` calls the webhooks whose `clientConfig.service` is
//! `NAME` in `NS` at the local address `ADDR` (`ApiServerBuilder::webhook_service`).
//! `--kubeconfig FILE` writes a kubeconfig for the server (its current context's
//! namespace `default`) to FILE before the URL is printed, for clients that read one.
//! Besides the library's resources it serves ServiceAccounts, Services, Deployments and
//! RBAC's four kinds, stored as sent, so that an operator's manifests apply.
//! `--help` prints the usage on stdout and exits 0; a bad argument prints it on stderr
//! and exits 2.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use reflector_testkit::ApiServer;
use serde_json::{Value, json};

const USAGE: &str = "usage: reflector-testkit [--port PORT] [--demo] [--crd FILE]... [--admin]
                         [--webhook-service NS/NAME=ADDR]... [--kubeconfig FILE]
Serves the library's resources and, stored as sent for manifests to apply, ServiceAccounts,
Services, Deployments, ClusterRoles, ClusterRoleBindings, Roles and RoleBindings.
  --port PORT  listen on 127.0.0.1:PORT (default: an ephemeral port)
  --demo       preload a `demo` namespace with a few ConfigMaps and Pods
  --crd FILE   create the CustomResourceDefinitions in FILE (YAML, multi-document allowed,
               or JSON) at start; repeatable. A bad file exits with code 2.
  --admin      serve the admin JSON API (loopback only, like everything else):
                 GET    /testkit/admin/faults                 list faults and their hits
                 POST   /testkit/admin/faults                 {\"matcher\": {\"verb\": \"watch\", \"resource\": \"configmaps\",
                                                               \"userAgent\": \"kubectl\", \"skip\": 0, \"times\": 1},
                                                               \"fault\": \"InternalError\"}
                                                              -> 201 {\"id\": N}
                 GET    /testkit/admin/faults/ID              one fault and its hits
                 DELETE /testkit/admin/faults[/ID]            remove all faults (or one)
                 POST   /testkit/admin/watches/drop           end every open watch cleanly
                 POST   /testkit/admin/watches/inject-line    {\"line\": \"Malformed\"|\"Truncated\"|\"NonEvent\"}
                 POST   /testkit/admin/compact                {} or {\"resourceVersion\": N}
               Faults: \"Gone\", \"WatchGone\", \"ContinueExpired\", \"InternalError\", \"Forbidden\",
               \"Conflict\",
               \"ServiceUnavailable\", \"GatewayTimeout\", \"SilentWatch\",
               {\"TooManyRequests\": {\"retry_after_secs\": 1, \"plain_text\": false}},
               {\"LatencyBeforeHeaders\": MS}, {\"LatencyBetweenEvents\": MS},
               {\"AbortWatch\": {\"after_events\": N}},
               {\"BadLine\": {\"after_events\": N, \"line\": \"Malformed\"}}.
               Without --admin those paths are 404.
  --webhook-service NS/NAME=ADDR
               call the admission and conversion webhooks whose clientConfig.service is
               NAME in namespace NS at ADDR (e.g. 127.0.0.1:8443); repeatable.
  --kubeconfig FILE
               write a kubeconfig for this server to FILE (context `reflector-testkit`,
               namespace `default`) before printing the URL; an unwritable FILE exits 2.";

/// What the command line asks for.
enum Command {
    /// Serve with these settings.
    Serve(Args),
    /// Print the usage and exit 0.
    Help,
}

struct Args {
    port: u16,
    demo: bool,
    admin: bool,
    crd_files: Vec<String>,
    /// `(namespace, name, address)` of each `--webhook-service`.
    webhook_services: Vec<(String, String, std::net::SocketAddr)>,
    /// Where `--kubeconfig` writes one.
    kubeconfig: Option<String>,
}

fn parse_args() -> Result<Command, String> {
    let mut args = Args {
        port: 0,
        demo: false,
        admin: false,
        crd_files: Vec::new(),
        webhook_services: Vec::new(),
        kubeconfig: None,
    };
    let mut iter = std::env::args().skip(1);
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--port" => {
                let value = iter.next().ok_or("--port needs a value")?;
                args.port = value
                    .parse()
                    .map_err(|_| format!("invalid port {value:?}"))?;
            }
            "--demo" => args.demo = true,
            "--admin" => args.admin = true,
            "--crd" => args
                .crd_files
                .push(iter.next().ok_or("--crd needs a file")?),
            "--webhook-service" => {
                let value = iter.next().ok_or("--webhook-service needs NS/NAME=ADDR")?;
                args.webhook_services.push(webhook_service(&value)?);
            }
            "--kubeconfig" => {
                args.kubeconfig = Some(iter.next().ok_or("--kubeconfig needs a file")?);
            }
            "-h" | "--help" => return Ok(Command::Help),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Command::Serve(args))
}

/// `NS/NAME=ADDR`.
fn webhook_service(value: &str) -> Result<(String, String, std::net::SocketAddr), String> {
    let bad = || format!("invalid --webhook-service {value:?}: expected NS/NAME=ADDR");
    let (service, addr) = value.split_once('=').ok_or_else(bad)?;
    let (namespace, name) = service.split_once('/').ok_or_else(bad)?;
    let addr = addr.parse().map_err(|_| bad())?;
    Ok((namespace.to_owned(), name.to_owned(), addr))
}

fn demo_objects(server: &ApiServer) -> Result<(), Box<dyn std::error::Error>> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "demo"}}))?;
    server.insert(&ns)?;
    for i in 0..3 {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("config-{i}"), "namespace": "demo", "labels": {"app": "demo"}},
            "data": {"index": i.to_string()}
        }))?;
        server.insert(&cm)?;
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("web-{i}"), "namespace": "demo", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            "status": {"phase": "Pending", "qosClass": "BestEffort"}
        }))?;
        server.insert(&pod)?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = match parse_args() {
        Ok(Command::Serve(args)) => args,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return Ok(());
        }
        Err(message) => {
            eprintln!("error: {message}");
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    // Logs go to stderr, so stdout's first line is the URL; colours only on a terminal.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let mut builder = ApiServer::builder().port(args.port).admin(args.admin);
    for (namespace, name, addr) in &args.webhook_services {
        builder = builder.webhook_service(namespace, name, *addr);
    }
    let server = builder.start().await?;
    register_manifest_kinds(&server);
    if args.demo {
        demo_objects(&server)?;
    }
    for file in &args.crd_files {
        if let Err(message) = create_crds(&server, file).await {
            eprintln!("error: --crd {file}: {message}");
            server.shutdown().await;
            std::process::exit(2);
        }
    }
    if let Some(file) = &args.kubeconfig
        && let Err(e) = std::fs::write(file, kubeconfig(&server.url()))
    {
        eprintln!("error: --kubeconfig {file}: {e}");
        server.shutdown().await;
        std::process::exit(2);
    }
    tracing::info!(url = %server.url(), demo = args.demo, "reflector-testkit API server running; Ctrl+C or SIGTERM to stop");
    // Handlers are installed before the URL is printed, so a SIGTERM sent by whoever
    // read it is always handled.
    let stop = stop_signal()?;
    println!("{}", server.url());
    stop.await;
    // Ends every open watch (each stream gets its final chunk) and waits for the
    // connections to finish, then exits 0.
    server.shutdown().await;
    Ok(())
}

/// Serves, besides the library's resources, the kinds an operator's manifests hold, so
/// that `kubectl apply` of them works: stored and served as sent (no defaulting, no
/// controllers behind them).
fn register_manifest_kinds(server: &ApiServer) {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Service, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    server.register_resource::<ServiceAccount>();
    server.register_resource_with_status::<Service>();
    server.register_resource_with_status::<Deployment>();
    server.register_resource::<ClusterRole>();
    server.register_resource::<ClusterRoleBinding>();
    server.register_resource::<Role>();
    server.register_resource::<RoleBinding>();
}

/// A kubeconfig whose current context is this server, anonymous, in `default`.
fn kubeconfig(url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: reflector-testkit
  cluster:
    server: {url}
users:
- name: reflector-testkit
  user: {{}}
contexts:
- name: reflector-testkit
  context:
    cluster: reflector-testkit
    user: reflector-testkit
    namespace: default
current-context: reflector-testkit
"
    )
}

/// The documents of a YAML (possibly multi-document) or JSON file, empty ones skipped.
fn documents(text: &str) -> Result<Vec<Value>, String> {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text)
            .map(|v| vec![v])
            .map_err(|e| format!("invalid JSON: {e}"));
    }
    let mut docs = Vec::new();
    for (i, doc) in serde_norway::Deserializer::from_str(text).enumerate() {
        let value = <Value as serde::Deserialize>::deserialize(doc)
            .map_err(|e| format!("invalid YAML in document {}: {e}", i + 1))?;
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

/// Creates every CRD in `file` through the API (so the API's validation applies).
async fn create_crds(server: &ApiServer, file: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read it: {e}"))?;
    let docs = documents(&text)?;
    if docs.is_empty() {
        return Err("no documents in it".to_owned());
    }
    let api: Api<CustomResourceDefinition> = Api::all(server.client());
    for (i, doc) in docs.into_iter().enumerate() {
        let n = i + 1;
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
        if kind != "CustomResourceDefinition" {
            return Err(format!(
                "document {n} is {kind:?}, not a CustomResourceDefinition"
            ));
        }
        let crd: CustomResourceDefinition = serde_json::from_value(doc)
            .map_err(|e| format!("document {n} is not a valid CustomResourceDefinition: {e}"))?;
        api.create(&PostParams::default(), &crd)
            .await
            .map_err(|e| match e {
                kube::Error::Api(status) => format!("document {n}: {}", status.message),
                other => format!("document {n}: {other}"),
            })?;
    }
    Ok(())
}

/// Installs the stop-signal handlers now; the future resolves on Ctrl+C (SIGINT) or, on
/// Unix, SIGTERM (what `kill` and container runtimes send).
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}
