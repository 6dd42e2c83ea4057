//! `reflector-testkit`: run the embedded API server standalone.
//!
//! ```text
//! reflector-testkit [--port PORT] [--demo]
//! ```
//!
//! It prints its URL on stdout and runs until Ctrl+C or SIGTERM, then shuts down
//! gracefully: open watches end with their final chunk and the process exits 0.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use reflector_testkit::ApiServer;
use serde_json::json;

const USAGE: &str = "usage: reflector-testkit [--port PORT] [--demo]\n  --port PORT  listen on 127.0.0.1:PORT (default: an ephemeral port)\n  --demo       preload a `demo` namespace with a few ConfigMaps and Pods";

struct Args {
    port: u16,
    demo: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        port: 0,
        demo: false,
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
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
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
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
        }))?;
        server.insert(&pod)?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("error: {message}");
            }
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    };
    let server = ApiServer::builder().port(args.port).start().await?;
    if args.demo {
        demo_objects(&server)?;
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
