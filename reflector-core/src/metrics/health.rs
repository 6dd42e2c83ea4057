//! [`Health`]: the readiness checks behind `/readyz`.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use crate::informer::SharedIndexInformer;
use crate::object::Object;

type Check = Arc<dyn Fn() -> bool + Send + Sync>;

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
/// use reflector_core::informer::InformerFactory;
/// use reflector_core::metrics::Health;
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
        self.lock().push((name.to_owned(), Arc::new(check)));
    }

    /// Whether every check passes, and the `/readyz` body that says which do.
    #[must_use]
    pub fn readiness(&self) -> (bool, String) {
        let checks: Vec<(String, Check)> = self.lock().clone();
        let mut body = String::new();
        let mut ready = true;
        for (name, check) in checks {
            let ok = check();
            ready &= ok;
            let _ = writeln!(
                body,
                "[{}]{name} {}",
                if ok { '+' } else { '-' },
                if ok { "ok" } else { "failed" }
            );
        }
        body.push_str(if ready {
            "readyz check passed\n"
        } else {
            "readyz check failed\n"
        });
        (ready, body)
    }
}
