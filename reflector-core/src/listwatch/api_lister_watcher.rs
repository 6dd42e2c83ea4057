//! [`ApiListerWatcher`]: list and watch over a [`kube::Api`].

use std::fmt::Debug;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use http_body_util::BodyExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{Api, ListParams, ObjectList, WatchParams};
use kube::core::{Request, Status};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use serde_field_filter::FieldFilter;

use super::compact::{compact_meta, decode_object};
use super::list_prefetch::{Page, PrefetchSlot, peek_continue};
use super::list_stream::{ItemDecodeFn, ListStream, OnHead, decode_filtered};
use super::{ListWatchError, ListerWatcher, WatchDecoder, WatchStream};

/// Decodes a whole list body into `K`s, skipping the filter's paths (`items[*].` + the
/// object paths). A plain function, as [`ItemDecodeFn`].
type PageDecodeFn<K> = fn(&[u8], Option<&FieldFilter>) -> Result<Page<K>, ListWatchError>;

/// Lists and watches `K` through a [`kube::Api`], namespaced or cluster-wide, with
/// optional label and field selectors applied to both lists and watches.
///
/// Watch responses are decoded line by line: each line once, straight into `K`. A list
/// body is read as it arrives and each item decoded as soon as its bytes are in, never
/// holding the whole body (a real API server answers an informer's first list in one
/// page of every object): [`ListerWatcher::list`] gathers the items into an
/// [`ObjectList<K>`], and the [`Reflector`](crate::reflector::Reflector) hands them on
/// in batches. Every object comes out with the lists in its metadata (`managedFields`,
/// `ownerReferences`, `finalizers`) shrunk to their length: serde leaves room for four
/// elements, which a cache would keep for as long as it holds the object. When a page names a next one (`metadata.continue`, which the server
/// writes before `items`), the request for it is sent at once, in a task that decodes
/// that page too: two pages are decoded at once, on both cores, while the server
/// serves the next. The pager's next call takes that page (same URL); anything else
/// drops it.
///
/// With `K` = [`PartialObjectMeta<T>`](kube::core::PartialObjectMeta) (kube's
/// `Resource::metadata_api`), lists and watches ask for `meta.k8s.io/v1`
/// `PartialObjectMetadata` (the `Accept` headers of kube's `Api::list_metadata` and
/// `watch_metadata`): names, labels, annotations, owners and versions, no spec, status
/// or data on the wire or in the cache — a metadata-only informer, as
/// controller-runtime's and client-go's `metadatainformer`.
///
/// With [`ApiListerWatcher::field_filter`], both skip the filter's paths while
/// decoding, so dropped fields are never allocated. Default: no filter, every field
/// decoded (as kube's `Api::list`); [`InformerFactory`](crate::informer::InformerFactory)
/// sets `metadata.managedFields`.
///
/// # Example
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
/// use reflector::listwatch::ApiListerWatcher;
/// use serde_field_filter::FieldFilter;
/// # async fn f(client: kube::Client) {
/// let lw = ApiListerWatcher::new(Api::<ConfigMap>::namespaced(client, "default"))
///     .labels("app=web")
///     .fields("metadata.name!=skip-me")
///     .field_filter(FieldFilter::managed_fields());
/// # }
/// ```
pub struct ApiListerWatcher<K: Resource> {
    client: Client,
    dyntype: K::DynamicType,
    /// The collection URL: `/api/v1/namespaces/{ns}/configmaps` or cluster-wide.
    url: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    /// The filter for list bodies (`items[*].` + the object paths); `None`: plain
    /// serde_json.
    list_filter: Option<Arc<FieldFilter>>,
    /// The filter for one listed object (the object paths), as a streamed list
    /// decodes its items.
    item_filter: Option<Arc<FieldFilter>>,
    /// Decodes a whole list body (read-ahead pages, [`ListerWatcher::list`]).
    decode_page: PageDecodeFn<K>,
    /// Decodes one item of a streamed list.
    decode_item: ItemDecodeFn<K>,
    decoder: WatchDecoder<K>,
    /// Whether lists and watches ask for `meta.k8s.io/v1` `PartialObjectMetadata`
    /// instead of whole objects (`K` is a `PartialObjectMeta<_>`).
    metadata_only: bool,
    /// The next page, requested and decoded ahead. Not shared between clones.
    prefetch: PrefetchSlot<K>,
}

/// The `Accept` header of a metadata-only list, as kube's `Api::list_metadata` sends it.
const ACCEPT_METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// The `Accept` header of a metadata-only watch, as kube's `Api::watch_metadata`.
const ACCEPT_METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

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
            list_filter: self.list_filter.clone(),
            item_filter: self.item_filter.clone(),
            decode_page: self.decode_page,
            decode_item: self.decode_item,
            decoder: self.decoder.clone(),
            metadata_only: self.metadata_only,
            prefetch: PrefetchSlot::default(),
        }
    }
}

impl<K: Resource> Debug for ApiListerWatcher<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiListerWatcher")
            .field("url", &self.url)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("metadata_only", &self.metadata_only)
            .field(
                "skipped_fields",
                &self.list_filter.as_ref().map(|f| f.paths()),
            )
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
        // kube's `Resource::metadata_api`: true for `PartialObjectMeta<_>`, whose
        // requests ask for (and whose watch events carry) `PartialObjectMetadata`.
        let metadata_only = K::metadata_api();
        let decoder = if metadata_only {
            WatchDecoder::new("meta.k8s.io/v1", "PartialObjectMetadata")
        } else {
            WatchDecoder::new(K::api_version(dyntype), K::kind(dyntype))
        }
        .compacting(compact_meta::<K>);
        ApiListerWatcher {
            url: api.resource_url().to_owned(),
            client: api.into_client(),
            dyntype: dyntype.clone(),
            label_selector: None,
            field_selector: None,
            list_filter: None,
            item_filter: None,
            decode_page: decode_list::<K>,
            decode_item: decode_object::<K>,
            decoder,
            metadata_only,
            prefetch: PrefetchSlot::default(),
        }
    }
}

impl<K: Resource + DeserializeOwned> ApiListerWatcher<K> {
    /// Skips `filter`'s paths of every listed or watched object while decoding
    /// (paths relative to the object, e.g. [`FieldFilter::managed_fields`]). The
    /// skipped fields are never allocated; objects come out as if the fields were
    /// absent. An empty filter restores plain decoding.
    #[must_use]
    pub fn field_filter(mut self, filter: FieldFilter) -> Self {
        self.list_filter = (!filter.is_empty()).then(|| Arc::new(filter.for_list_items()));
        self.item_filter = (!filter.is_empty()).then(|| Arc::new(filter.clone()));
        self.decoder = self.decoder.field_filter(&filter);
        self
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
}

impl<K: Resource> ApiListerWatcher<K> {
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
    fn api_lister_watcher(&self) -> Option<&ApiListerWatcher<K>> {
        Some(self)
    }

    /// Adds `filter`'s paths to those [`field_filter`](ApiListerWatcher::field_filter)
    /// skips.
    fn skip_fields(self, filter: &FieldFilter) -> Self {
        let mut merged = self.item_filter.as_deref().cloned().unwrap_or_default();
        merged.merge(filter);
        self.field_filter(merged)
    }

    async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, ListWatchError> {
        self.list_stream(params).await?.into_list().await
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
        if self.metadata_only {
            req.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static(ACCEPT_METADATA),
            );
        }
        req.extensions_mut().insert("watch");
        let body = send(&self.client, req)
            .await?
            .into_data_stream()
            .map_err(ListWatchError::from);
        Ok(self.decoder.clone().decode_body(body))
    }
}

impl<K> ApiListerWatcher<K>
where
    K: Resource + Clone + Send + 'static,
{
    /// `params` with this lister-watcher's selectors where `params` has none.
    fn with_selectors(&self, params: &ListParams) -> ListParams {
        let mut lp = params.clone();
        if lp.label_selector.is_none() {
            lp.label_selector.clone_from(&self.label_selector);
        }
        if lp.field_selector.is_none() {
            lp.field_selector.clone_from(&self.field_selector);
        }
        lp
    }

    /// Lists one page as [`ListerWatcher::list`] does, but hands its items out as
    /// they are decoded, while the body is still arriving; the whole body is never
    /// held. A page requested ahead comes out whole, as one batch. The page after this
    /// one (if `params` has a limit and the body names one) is requested as soon as
    /// this body's `metadata` is in.
    ///
    /// # Errors
    /// As [`ListerWatcher::list`], when the response starts with an error; errors of
    /// the body come from [`ListStream::next_batch`].
    ///
    /// # Cancel safety
    /// Dropping the future abandons the request; nothing is lost.
    pub(crate) async fn list_stream(
        &self,
        params: &ListParams,
    ) -> Result<ListStream<'_, K>, ListWatchError> {
        let lp = self.with_selectors(params);
        let req = self.list_request(&lp)?;
        if let Some(result) = self.take_ahead(&lp, &req).await {
            return result.map(ListStream::from_page);
        }
        let body = send(&self.client, req)
            .await?
            .into_data_stream()
            .map_err(ListWatchError::from)
            .boxed();
        let on_head: Option<OnHead<'_>> = if lp.limit.is_some() {
            Some(Box::new(move |meta: &ListMeta| {
                if let Some(token) = meta.continue_.as_ref().filter(|t| !t.is_empty()) {
                    self.request_ahead(&lp, token.clone());
                }
            }))
        } else {
            None
        };
        Ok(ListStream::from_body(
            body,
            self.decode_item,
            self.item_filter.clone(),
            on_head,
        ))
    }

    /// The page requested ahead for `req`, if it is the one waiting: its result once
    /// decoded, after the page after it was requested in turn.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future aborts the request ahead.
    async fn take_ahead(
        &self,
        lp: &ListParams,
        req: &http::Request<Vec<u8>>,
    ) -> Option<Result<Page<K>, ListWatchError>> {
        let mut waiting = self.prefetch.take(&req.uri().to_string())?;
        // Start on the page after this one as soon as this one's body is in, then
        // take this one, decoded meanwhile.
        if let Some(token) = waiting.next_token().await
            && lp.limit.is_some()
        {
            self.request_ahead(lp, token);
        }
        waiting.wait().await
    }

    /// The request for one list page of `lp`, in this lister-watcher's representation.
    fn list_request(&self, lp: &ListParams) -> Result<http::Request<Vec<u8>>, ListWatchError> {
        let mut req = super::list_request::list_request(&self.url, lp)
            .map_err(|e| ListWatchError::Transport(kube::Error::HttpError(e)))?;
        if self.metadata_only {
            req.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static(ACCEPT_METADATA_LIST),
            );
        }
        req.extensions_mut().insert("list");
        Ok(req)
    }

    /// Sends the request the pager will make after a page of `lp` that names
    /// `token` (the same parameters, continuing at `token`, without a resource
    /// version, as the pager's continuation requests), in a task that also decodes
    /// the page and tells the token of the page after it as soon as it has the body.
    fn request_ahead(&self, lp: &ListParams, token: String) {
        let mut next = lp.clone();
        next.continue_token = Some(token);
        next.resource_version = None;
        next.version_match = None;
        let Ok(req) = self.list_request(&next) else {
            return;
        };
        let uri = req.uri().to_string();
        let client = self.client.clone();
        let filter = self.list_filter.clone();
        let decode_page = self.decode_page;
        let (token_tx, token_rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let bytes = match fetch(&client, req).await {
                Ok(bytes) => bytes,
                Err(e) => {
                    let _ = token_tx.send(None);
                    return Err(e);
                }
            };
            let _ = token_tx.send(peek_continue(&bytes));
            // Let the woken pager send the next request before this task decodes:
            // woken from here, it waits in this worker's LIFO slot, which other
            // workers cannot take, until this task yields — it would otherwise ask
            // for the next page only after the decode, and fetching never overlapped
            // decoding.
            tokio::task::yield_now().await;
            decode_page(&bytes, filter.as_deref())
        });
        self.prefetch.put(uri, token_rx, task);
    }
}

/// Decodes a list body, skipping `filter`'s paths while decoding; each item is
/// compacted as a streamed list's are.
fn decode_list<K: Resource + Clone + DeserializeOwned>(
    bytes: &[u8],
    filter: Option<&FieldFilter>,
) -> Result<Page<K>, ListWatchError> {
    decode_filtered::<ObjectList<K>>(bytes, filter)
        .map(|mut list| {
            list.items.iter_mut().for_each(compact_meta);
            Page::from(list)
        })
        .map_err(|source| ListWatchError::Decode {
            what: "list",
            source,
        })
}

/// Sends a list request and reads the whole body.
async fn fetch(
    client: &Client,
    req: http::Request<Vec<u8>>,
) -> Result<bytes::Bytes, ListWatchError> {
    Ok(send(client, req)
        .await?
        .collect()
        .await
        .map_err(ListWatchError::Transport)?
        .to_bytes())
}

/// Sends `req`; an error status becomes the `Status` error it carries.
async fn send(
    client: &Client,
    req: http::Request<Vec<u8>>,
) -> Result<kube::client::Body, ListWatchError> {
    let res = client
        .send(req.map(kube::client::Body::from))
        .await
        .map_err(ListWatchError::Transport)?;
    let status = res.status();
    if status.is_client_error() || status.is_server_error() {
        return Err(status_error(status, res.into_body()).await);
    }
    Ok(res.into_body())
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

#[cfg(test)]
mod tests;
