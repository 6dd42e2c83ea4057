//! [`WebhookServer`]: the builder — its settings and the hooks it serves (its run is
//! in `serve.rs`, its manifests in `manifests.rs`).

use std::net::SocketAddr;
use std::sync::Arc;

use kube::Client;
use kube::core::CustomResourceExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::certs::Served;
use super::conversion::ConversionRoute;
use super::hook::{AdmissionHook, HookKind, Purpose};
use super::{Certificates, Conversion, Defaulter, Validator, WebhookError, admission};

/// The port the server listens on when not [`bind`](WebhookServer::bind)-ed: 9443,
/// controller-runtime's default webhook port.
pub(crate) const DEFAULT_PORT: u16 = 9443;

/// An HTTPS server for the admission and conversion webhooks of custom resources:
/// defaulting ([`Defaulter`]), validating ([`Validator`]) and CRD conversion through a
/// hub ([`Convertible`](super::Convertible)), each registered by type.
///
/// - **Paths come from the types**: `/mutate/<group>/<version>/<plural>`,
///   `/validate/<group>/<version>/<plural>`, `/convert/<group>/<plural>` (`core`
///   for the core group); the manager's
///   [`manifests`](crate::manager::Manager::manifests) name them in the webhook
///   configurations and CRDs, so no path is ever typed.
/// - **The envelope is the library's**: the request's `uid` is echoed, a denial's
///   message and code go in the response's `status`, warnings are passed on, a
///   defaulting hook's JSON Patch is computed from the typed object before and after
///   the hook, a conversion review is converted whole or failed with the reason. A
///   body that is not a review gets 400 with a message; a review of another kind,
///   or with an object that does not decode, is refused with code 400.
/// - **Certificates** ([`Certificates`]): self-signed by default, for the Service
///   `service` in its namespace, renewed before they expire; or mounted files,
///   read again when they change. Either way a new certificate is served from the
///   next TLS handshake on, without a restart.
/// - **caBundle** ([`keep_ca_bundle`](Self::keep_ca_bundle), opt-in): keeps the
///   CA in the webhook configurations and CRDs the manifests name.
///
/// Give it to a [`Manager`](crate::manager::Manager) with
/// [`add_webhooks`](crate::manager::Manager::add_webhooks): it serves on every
/// replica (not only the leader) from the start, and stops last in the manager's
/// shutdown. Or [`run`](Self::run) it alone.
///
/// # Example
/// ```
/// use kube::CustomResource;
/// use reflector::webhooks::{AdmissionContext, Defaulter, Denial, Validator, WebhookServer};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
/// #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
/// pub struct WidgetSpec {
///     replicas: Option<u32>,
/// }
///
/// impl Defaulter for Widget {
///     fn set_defaults(&mut self, _: &AdmissionContext) {
///         self.spec.replicas.get_or_insert(1);
///     }
/// }
///
/// impl Validator for Widget {
///     fn validate_create(&self, _: &AdmissionContext) -> Result<Vec<String>, Denial> {
///         match self.spec.replicas {
///             Some(n) if n > 10 => Err(Denial::new("at most 10 replicas").code(422)),
///             _ => Ok(Vec::new()),
///         }
///     }
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut webhooks = WebhookServer::new("widget-webhooks").bind("127.0.0.1:0".parse()?)?;
/// webhooks.defaulting::<Widget>().validating::<Widget>();
/// // manager.add_webhooks(webhooks); or, alone: webhooks.run(stop).await
/// # Ok(()) }
/// ```
pub struct WebhookServer {
    pub(super) service: String,
    pub(super) namespace: Option<String>,
    pub(super) certificates: Certificates,
    pub(super) listener: Option<std::net::TcpListener>,
    pub(super) hooks: Vec<AdmissionHook>,
    pub(super) conversions: Vec<ConversionRoute>,
    /// The client of the caBundle keeper, if it is on.
    pub(super) keeper: Option<Client>,
    pub(super) served: Arc<Served>,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("service", &self.service)
            .field("namespace", &self.namespace)
            .field("certificates", &self.certificates)
            .field("addr", &self.local_addr())
            .field("hooks", &self.hooks)
            .field("conversions", &self.conversions)
            .field("keeps_ca_bundle", &self.keeper.is_some())
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// A server reached through the Service `service` (its name is in the
    /// certificate and the manifests), with self-signed [`Certificates`], listening on
    /// `0.0.0.0:9443` (controller-runtime's default port) unless
    /// [`bind`](Self::bind)-ed, no caBundle keeper, and no hooks yet.
    #[must_use]
    pub fn new(service: impl Into<String>) -> Self {
        WebhookServer {
            service: service.into(),
            namespace: None,
            certificates: Certificates::default(),
            listener: None,
            hooks: Vec::new(),
            conversions: Vec::new(),
            keeper: None,
            served: Arc::new(Served::new()),
        }
    }

    /// The Service's namespace, in the self-signed certificate's DNS names. Default:
    /// under a manager, its client's default namespace (the pod's own); alone,
    /// `default`.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Where the serving certificate comes from. Default:
    /// [`Certificates::self_signed`].
    #[must_use]
    pub fn certificates(mut self, certificates: Certificates) -> Self {
        self.certificates = certificates;
        self
    }

    /// Listens on `addr`, bound now (port 0 picks a free port: see
    /// [`local_addr`](Self::local_addr)). Default: `0.0.0.0:9443`, bound when the
    /// server starts.
    ///
    /// # Errors
    /// [`WebhookError::Bind`] if `addr` cannot be bound.
    pub fn bind(mut self, addr: SocketAddr) -> Result<Self, WebhookError> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|source| WebhookError::Bind { addr, source })?;
        self.listener = Some(listener);
        Ok(self)
    }

    /// The address bound by [`bind`](Self::bind), if it was called.
    #[must_use]
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The port served on: the bound one, or 9443.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.local_addr().map_or(DEFAULT_PORT, |a| a.port())
    }

    /// Keeps the CA the server's certificate is signed by in the `caBundle` of the
    /// webhook configurations and CRDs that [`manifests`](crate::manager::Manager::manifests)
    /// makes for this server (named after the Service; the CRDs by their names),
    /// through `client`: written when the server starts, again when the CA changes,
    /// and checked every minute (a re-applied manifest without a caBundle is
    /// repaired). Objects not created yet are retried with a backoff. Needs `get`
    /// and `patch` on them ([`Manager::rbac`](crate::manager::Manager::rbac) grants
    /// it). Default: off (cert-manager's CA injector, or a `caBundle` in the
    /// manifests, does the job then).
    #[must_use]
    pub fn keep_ca_bundle(mut self, client: Client) -> Self {
        self.keeper = Some(client);
        self
    }

    /// Serves `K`'s [`Defaulter`] on `/mutate/<group>/<version>/<plural>`, as a
    /// mutating webhook called on `CREATE` and `UPDATE`. Registering `K` again
    /// replaces it.
    pub fn defaulting<K: Defaulter>(&mut self) -> &mut Self {
        self.add_hook(AdmissionHook {
            kind: HookKind::of::<K>(),
            purpose: Purpose::Mutate,
            handler: Arc::new(admission::mutate::<K>),
        })
    }

    /// Serves `K`'s [`Validator`] on `/validate/<group>/<version>/<plural>`, as a
    /// validating webhook called on `CREATE` and `UPDATE`, and `DELETE` when
    /// [`Validator::VALIDATES_DELETE`]. Registering `K` again replaces it.
    pub fn validating<K: Validator>(&mut self) -> &mut Self {
        self.add_hook(AdmissionHook {
            kind: HookKind::of::<K>(),
            purpose: Purpose::Validate {
                delete: K::VALIDATES_DELETE,
            },
            handler: Arc::new(admission::validate::<K>),
        })
    }

    /// Serves the conversion of the CRD whose hub version is `H` on
    /// `/convert/<group>/<plural>`: add its spokes to what this returns,
    /// `webhooks.conversion::<v2::Widget>().spoke::<v1::Widget>()`. Every version
    /// converts through `H`. Registering the CRD again replaces it.
    pub fn conversion<H>(&mut self) -> Conversion<'_, H>
    where
        H: kube::Resource<DynamicType = ()> + CustomResourceExt + Serialize + DeserializeOwned,
        H: Send + Sync + 'static,
    {
        Conversion::new(self)
    }

    /// The CA's certificate (PEM) the serving certificate is signed by, once the
    /// server has started (or `None` while it has not, or when mounted files have no
    /// `ca.crt`), and each change: what a `caBundle` holds, base64-encoded.
    #[must_use]
    pub fn ca_bundle(&self) -> watch::Receiver<Option<Arc<str>>> {
        self.served.ca()
    }

    fn add_hook(&mut self, hook: AdmissionHook) -> &mut Self {
        let path = hook.path();
        self.hooks.retain(|h| h.path() != path);
        self.hooks.push(hook);
        self
    }

    pub(super) fn add_conversion(&mut self, route: ConversionRoute) {
        self.conversions
            .retain(|c| (&c.hub.group, &c.hub.plural) != (&route.hub.group, &route.hub.plural));
        self.conversions.push(route);
    }

    /// The Service's namespace: the one set, or `fallback`.
    pub(crate) fn namespace_or<'a>(&'a self, fallback: &'a str) -> &'a str {
        self.namespace.as_deref().unwrap_or(fallback)
    }
}
