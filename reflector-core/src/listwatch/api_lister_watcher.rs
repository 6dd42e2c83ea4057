//! [`ApiListerWatcher`]: list and watch over a [`kube::Api`].

use std::fmt::Debug;

use futures::TryStreamExt;
use http_body_util::BodyExt;
use kube::api::{Api, ListParams, ObjectList, WatchParams};
use kube::core::{Request, Status};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use super::{ListWatchError, ListerWatcher, WatchDecoder, WatchStream};

/// Lists and watches `K` through a [`kube::Api`], namespaced or cluster-wide, with
/// optional label and field selectors applied to both lists and watches.
///
/// Watch responses are decoded by [`WatchDecoder`]: each line once, straight into `K`.
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use reflector_core::listwatch::ApiListerWatcher;
/// # async fn f(client: kube::Client) {
/// let lw = ApiListerWatcher::new(Api::<ConfigMap>::namespaced(client, "default"))
///     .labels("app=web")
///     .fields("metadata.name!=skip-me");
/// # }
/// ```
pub struct ApiListerWatcher<K: Resource> {
    client: Client,
    dyntype: K::DynamicType,
    /// The collection URL: `/api/v1/namespaces/{ns}/configmaps` or cluster-wide.
    url: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    decoder: WatchDecoder<K>,
}

impl<K: Resource> Clone for ApiListerWatcher<K>
where
    K::DynamicType: Clone,
{
    fn clone(&self) -> Self {
        ApiListerWatcher {
            client: self.client.clone(),
            dyntype: self.dyntype.clone(),
            url: self.url.clone(),
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            decoder: self.decoder.clone(),
        }
    }
}

impl<K: Resource> Debug for ApiListerWatcher<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiListerWatcher")
            .field("url", &self.url)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .finish()
    }
}

impl<K> ApiListerWatcher<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    K::DynamicType: Default + Clone,
{
    /// Lists and watches through `api` (built with `Api::all` or `Api::namespaced`).
    #[must_use]
    pub fn new(api: Api<K>) -> Self {
        Self::new_with(api, &K::DynamicType::default())
    }
}

impl<K> ApiListerWatcher<K>
where
    K: Resource + Clone + DeserializeOwned + Debug,
    K::DynamicType: Clone,
{
    /// As [`ApiListerWatcher::new`], for types with a runtime type description
    /// (`DynamicObject`).
    #[must_use]
    pub fn new_with(api: Api<K>, dyntype: &K::DynamicType) -> Self {
        let decoder = WatchDecoder::new(K::api_version(dyntype), K::kind(dyntype));
        ApiListerWatcher {
            url: api.resource_url().to_owned(),
            client: api.into_client(),
            dyntype: dyntype.clone(),
            label_selector: None,
            field_selector: None,
            decoder,
        }
    }

    /// Restricts lists and watches to objects matching a label selector
    /// (`app=web,tier!=db`).
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// Restricts lists and watches to objects matching a field selector
    /// (`metadata.name=a`).
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }

    /// Lists and watches one namespace (`Some`) or all (`None`). Only meaningful for
    /// namespaced kinds: a cluster-scoped kind has no namespaced URL and the server
    /// answers 404.
    #[must_use]
    pub fn in_namespace(mut self, namespace: Option<&str>) -> Self {
        self.url = K::url_path(&self.dyntype, namespace);
        self
    }

    /// Lists and watches one namespace of a namespaced kind.
    #[must_use]
    pub fn namespace(self, namespace: &str) -> Self
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope>,
    {
        self.in_namespace(Some(namespace))
    }

    /// The collection URL requests go to.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl<K> ListerWatcher<K> for ApiListerWatcher<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Send + Sync + 'static,
{
    async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, ListWatchError> {
        let mut lp = params.clone();
        if lp.label_selector.is_none() {
            lp.label_selector.clone_from(&self.label_selector);
        }
        if lp.field_selector.is_none() {
            lp.field_selector.clone_from(&self.field_selector);
        }
        let mut req = super::list_request::list_request(&self.url, &lp)
            .map_err(|e| ListWatchError::Transport(kube::Error::HttpError(e)))?;
        req.extensions_mut().insert("list");
        Ok(self.client.request::<ObjectList<K>>(req).await?)
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError> {
        let mut wp = params.clone();
        if wp.label_selector.is_none() {
            wp.label_selector.clone_from(&self.label_selector);
        }
        if wp.field_selector.is_none() {
            wp.field_selector.clone_from(&self.field_selector);
        }
        let mut req = Request::new(&self.url)
            .watch(&wp, resource_version)
            .map_err(|e| ListWatchError::Transport(kube::Error::BuildRequest(e)))?;
        req.headers_mut().insert(
            http::header::ACCEPT_ENCODING,
            http::HeaderValue::from_static("identity"),
        );
        req.extensions_mut().insert("watch");
        let res = self
            .client
            .send(req.map(kube::client::Body::from))
            .await
            .map_err(ListWatchError::Transport)?;
        let status = res.status();
        if status.is_client_error() || status.is_server_error() {
            return Err(status_error(status, res.into_body()).await);
        }
        let body = res
            .into_body()
            .into_data_stream()
            .map_err(ListWatchError::from);
        Ok(self.decoder.clone().decode_body(body))
    }
}

/// The error an HTTP error response carries: its `Status` body, or one made from its
/// code and text when the body is not a Status (as the real server's plain-text 429).
async fn status_error(code: http::StatusCode, body: kube::client::Body) -> ListWatchError {
    let bytes = match body.collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) => return ListWatchError::Transport(e),
    };
    match serde_json::from_slice::<Status>(&bytes) {
        Ok(s) => ListWatchError::Api(Box::new(s)),
        Err(_) => {
            let text = String::from_utf8_lossy(&bytes);
            ListWatchError::Api(Box::new(
                Status::failure(text.trim(), "").with_code(code.as_u16()),
            ))
        }
    }
}
