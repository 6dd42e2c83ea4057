//! Not part of any controller: what the examples' demo drivers share. Without
//! `--cluster`, an embedded API server with the example's CRD installed and its
//! namespace created, and a story whose end stops the example's controller; with
//! `--cluster`, only the kubeconfig's client (the controller runs until a signal).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use reflector_testkit::ApiServer;
use tokio::sync::oneshot;

/// What a story fails with.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The client the controller uses and, on the embedded server, the story's outcome.
pub struct Embedded {
    client: kube::Client,
    server: Option<Arc<ApiServer>>,
    done: Option<oneshot::Sender<Result<(), Error>>>,
    outcome: Option<oneshot::Receiver<Result<(), Error>>>,
}

impl Embedded {
    /// The kubeconfig's client with `--cluster`; else an embedded API server with
    /// `crd` installed and established, and `namespace` created.
    pub async fn start(
        crd: CustomResourceDefinition,
        namespace: &str,
    ) -> Result<Self, Box<dyn std::error::Error>> {
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
        let client = server.client();
        let name = crd.metadata.name.clone().unwrap_or_default();
        let crds = Api::<CustomResourceDefinition>::all(client.clone());
        crds.create(&PostParams::default(), &crd).await?;
        let established = await_condition(crds, &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(10), established).await??;
        let mut ns = Namespace::default();
        ns.metadata.name = Some(namespace.into());
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await?;
        println!(
            "embedded API server at {}: CRD {name} established, namespace {namespace}",
            server.url()
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

    /// Runs `story` against the embedded server; resolves once it has ended, which
    /// stops the controller. Never resolves with `--cluster`.
    pub fn story<F, Fut>(&mut self, story: F) -> impl Future<Output = ()> + Send + 'static
    where
        F: FnOnce(kube::Client, Arc<ApiServer>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), Error>> + Send + 'static,
    {
        let client = self.client.clone();
        let server = self.server.clone();
        let done = self.done.take();
        async move {
            let (Some(server), Some(done)) = (server, done) else {
                return std::future::pending().await;
            };
            let outcome = story(client, server).await;
            match &outcome {
                Ok(()) => println!("\nthe story checked out; stopping the controller"),
                Err(e) => println!("\nthe story failed ({e}); stopping the controller"),
            }
            let _ = done.send(outcome);
        }
    }

    /// Shuts the embedded server down; the story's outcome (`Ok` with `--cluster`).
    pub async fn finish(self) -> Result<(), Box<dyn std::error::Error>> {
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
