//! Not part of any controller: what the examples' demo drivers share. Without
//! `--cluster`, an embedded API server with the example's CRDs installed and its
//! namespace created, and a story whose end stops the example's controller; with
//! `--cluster`, only the kubeconfig's client (the controller runs until a signal).
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use reflector_testkit::{ApiServer, RequestLogEntry};
use tokio::sync::oneshot;

/// What a story fails with.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The `User-Agent` of the controller's requests on the embedded server (the
/// story's carry none), so its requests can be told apart in the request log.
pub const CONTROLLER_AGENT: &str = "example-controller";

/// The client the controller uses and, on the embedded server, the server and the
/// story's outcome.
pub struct Embedded {
    client: kube::Client,
    server: Option<Arc<ApiServer>>,
    done: Option<oneshot::Sender<Result<(), Error>>>,
    outcome: Option<oneshot::Receiver<Result<(), Error>>>,
}

impl Embedded {
    /// The kubeconfig's client with `--cluster`; else an embedded API server with
    /// `crds` installed and established, and `namespace` created.
    pub async fn start(
        crds: impl IntoIterator<Item = CustomResourceDefinition>,
        namespace: &str,
    ) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        if std::env::args().any(|a| a == "--cluster") {
            let client = kube::Client::try_default().await?;
            println!("running against the current kubeconfig; Ctrl+C to stop");
            return Ok(Embedded {
                client,
                server: None,
                done: None,
                outcome: None,
            });
        }
        let server = ApiServer::start().await?;
        let setup = server.client();
        let api = Api::<CustomResourceDefinition>::all(setup.clone());
        let mut names = Vec::new();
        for crd in crds {
            let name = crd.metadata.name.clone().unwrap_or_default();
            api.create(&PostParams::default(), &crd).await?;
            let established = await_condition(api.clone(), &name, conditions::is_crd_established());
            tokio::time::timeout(Duration::from_secs(10), established).await??;
            names.push(name);
        }
        let client = server.client_with_user_agent(CONTROLLER_AGENT)?;
        let mut ns = Namespace::default();
        ns.metadata.name = Some(namespace.into());
        Api::<Namespace>::all(setup)
            .create(&PostParams::default(), &ns)
            .await?;
        println!(
            "embedded API server at {}: CRDs {} established, namespace {namespace}",
            server.url(),
            names.join(", ")
        );
        let (done, outcome) = oneshot::channel();
        Ok(Embedded {
            client,
            server: Some(Arc::new(server)),
            done: Some(done),
            outcome: Some(outcome),
        })
    }

    /// A client of the API server.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Whether this is the embedded server (not `--cluster`).
    pub fn is_embedded(&self) -> bool {
        self.server.is_some()
    }

    /// The controller's requests so far, on the embedded server (none with
    /// `--cluster`).
    pub fn controller_requests(&self) -> Vec<RequestLogEntry> {
        let log = self.server.as_ref().map(|s| s.request_log());
        let ours = |e: &RequestLogEntry| e.user_agent == CONTROLLER_AGENT;
        log.unwrap_or_default().into_iter().filter(ours).collect()
    }

    /// Runs `story` against the embedded server, with a client of its own;
    /// resolves once it has ended, which stops the controller. Never resolves with
    /// `--cluster`.
    pub fn story<F, Fut>(&mut self, story: F) -> impl Future<Output = ()> + Send + 'static
    where
        F: FnOnce(kube::Client, Arc<ApiServer>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), Error>> + Send + 'static,
    {
        let server = self.server.clone();
        let done = self.done.take();
        async move {
            let (Some(server), Some(done)) = (server, done) else {
                return std::future::pending().await;
            };
            let outcome = story(server.client(), server).await;
            match &outcome {
                Ok(()) => println!("\nthe story checked out; stopping the controller"),
                Err(e) => println!("\nthe story failed ({e}); stopping the controller"),
            }
            let _ = done.send(outcome);
        }
    }

    /// Shuts the embedded server down; the story's outcome (`Ok` with `--cluster`).
    pub async fn finish(self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if let Some(server) = self.server.and_then(|s| Arc::try_unwrap(s).ok()) {
            server.shutdown().await;
        }
        match self.outcome {
            None => Ok(()),
            Some(outcome) => match outcome.await {
                Ok(result) => result.map_err(|e| format!("demo failed: {e}").into()),
                Err(_) => Err("the controller stopped before the story ended".into()),
            },
        }
    }
}
