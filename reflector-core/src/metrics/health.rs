//! [`Health`]: the readiness checks behind `/readyz`.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use crate::informer::SharedIndexInformer;
use crate::leader_election::{LeaderElection, LeaderState};
use crate::object::Object;

/// A check: whether it passes, and a detail for its line of the body (may be empty).
type Check = Arc<dyn Fn() -> (bool, String) + Send + Sync>;

/// Named readiness checks, as the kubelet's readiness probe reads them from
/// `GET /readyz` on the `MetricsServer` (feature
/// `metrics-server`): ready once every check passes, typically once every informer
/// has synced. `GET /healthz` answers 200 whenever the process serves HTTP (it is
/// alive).
///
/// The body lists each check as the API server's own health endpoints do:
/// `[+]informer ConfigMap ok` or `[-]informer ConfigMap failed`, then
/// `readyz check passed` or `readyz check failed`. Cloning gives another handle to
/// the same checks.
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use reflector::informer::InformerFactory;
/// use reflector::metrics::Health;
/// # fn f(client: kube::Client) {
/// let factory = InformerFactory::new(client);
/// let health = Health::new();
/// health.informer("configmaps", &factory.informer::<ConfigMap>());
/// let (ready, body) = health.readiness();
/// assert!(!ready, "not synced: not started");
/// assert!(body.contains("[-]informer configmaps failed"));
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Health {
    /// Guarded by its own mutex; held only to add a check or copy the list.
    checks: Arc<Mutex<Vec<(String, Check)>>>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.lock().iter().map(|(n, _)| n.clone()).collect();
        f.debug_struct("Health").field("checks", &names).finish()
    }
}

impl Health {
    /// No checks: ready.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(String, Check)>> {
        self.checks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ready only once `informer` has synced (check `informer <name>`). Holds the
    /// informer's handle, not the informer alive: a dropped informer fails.
    pub fn informer<K: Object>(&self, name: &str, informer: &SharedIndexInformer<K>) {
        let informer = informer.downgrade();
        self.check(&format!("informer {name}"), move || {
            informer.upgrade().is_some_and(|i| i.has_synced())
        });
    }

    /// Ready only while `check` answers true.
    pub fn check(&self, name: &str, check: impl Fn() -> bool + Send + Sync + 'static) {
        self.lock()
            .push((name.to_owned(), Arc::new(move || (check(), String::new()))));
    }

    /// Check `leader-election <lease>`: passes while `election` runs, as a
    /// follower as well as the leader (a follower is ready: it serves its warm
    /// caches and takes over when the leader goes), fails once it has stopped. The
    /// line says where this replica stands:
    /// `[+]leader-election widgets ok (leading as pod-a_1f)` or
    /// `[+]leader-election widgets ok (following pod-b_7c)`.
    ///
    /// ```
    /// use k8s_openapi::api::coordination::v1::Lease;
    /// use reflector::leader_election::{LeaderElection, LeaderElectionConfig};
    /// use reflector::metrics::Health;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
    /// let api = kube::Api::<Lease>::namespaced(client, "default");
    /// let election = LeaderElection::new(api, "widgets", LeaderElectionConfig::default()).unwrap();
    /// let health = Health::new();
    /// health.leader_election(&election);
    /// let (ready, body) = health.readiness();
    /// assert!(!ready, "not running yet");
    /// assert!(body.contains("[-]leader-election widgets failed (stopped)"));
    /// # }
    /// ```
    pub fn leader_election(&self, election: &LeaderElection) {
        let name = format!("leader-election {}", election.name());
        let election = election.clone();
        let check = move || match election.state() {
            LeaderState::Leading => (true, format!("leading as {}", election.identity())),
            state @ LeaderState::Following { .. } => (true, state.to_string()),
            state => (false, state.to_string()),
        };
        self.lock().push((name, Arc::new(check)));
    }

    /// Whether every check passes, and the `/readyz` body that says which do.
    #[must_use]
    pub fn readiness(&self) -> (bool, String) {
        let checks: Vec<(String, Check)> = self.lock().clone();
        let mut body = String::new();
        let mut ready = true;
        for (name, check) in checks {
            let (ok, detail) = check();
            ready &= ok;
            let _ = write!(
                body,
                "[{}]{name} {}",
                if ok { '+' } else { '-' },
                if ok { "ok" } else { "failed" }
            );
            if !detail.is_empty() {
                let _ = write!(body, " ({detail})");
            }
            body.push('\n');
        }
        body.push_str(if ready {
            "readyz check passed\n"
        } else {
            "readyz check failed\n"
        });
        (ready, body)
    }
}
