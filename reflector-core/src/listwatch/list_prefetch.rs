//! Read-ahead of the next list page while the current one is decoded.
//!
//! A paginated list is a chain: page N's `metadata.continue` names page N+1. The API
//! server writes `metadata` before `items`, so the token can be read from the first
//! bytes of page N's body, and page N+1 requested right away. The request for page
//! N+1 runs in its own task, which also decodes that page once its bytes arrive and
//! publishes the token of page N+2 as soon as it has read it: so while one page is
//! decoded, the next is served, sent and decoded too, on the other core. At most
//! the page being taken and the one after it are in flight. Each request is exactly
//! the one the pager sends next (same URL, same query); it is used only if the pager
//! asks for that very URL, and dropped (its task aborted) otherwise.

use std::sync::{Mutex, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ObjectList, TypeMeta};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::ListWatchError;

/// A decoded page, as [`ObjectList`] without its `K: Clone` bound.
pub(crate) struct Page<K> {
    types: TypeMeta,
    metadata: ListMeta,
    items: Vec<K>,
}

impl<K> Page<K> {
    /// The page's `apiVersion` and `kind`, metadata and items.
    pub(crate) fn into_parts(self) -> (TypeMeta, ListMeta, Vec<K>) {
        (self.types, self.metadata, self.items)
    }
}

impl<K: Clone> From<ObjectList<K>> for Page<K> {
    fn from(list: ObjectList<K>) -> Self {
        Page {
            types: list.types,
            metadata: list.metadata,
            items: list.items,
        }
    }
}

impl<K: Clone> From<Page<K>> for ObjectList<K> {
    fn from(page: Page<K>) -> Self {
        ObjectList {
            types: page.types,
            metadata: page.metadata,
            items: page.items,
        }
    }
}

/// One page requested ahead. Its task is aborted when this is dropped, so a list
/// cancelled while it waits for the answer leaves nothing running.
pub(crate) struct Prefetch<K> {
    /// The request's path and query.
    uri: String,
    /// The token of the page after this one, sent as soon as this page's bytes
    /// arrived (`None`: the last page, or the request failed).
    next: Option<oneshot::Receiver<Option<String>>>,
    /// Fetches and decodes the page. `None` once handed out.
    task: Option<JoinHandle<Result<Page<K>, ListWatchError>>>,
}

impl<K> Prefetch<K> {
    /// The continue token of the page after this one, as soon as this page's body
    /// has arrived; `None` for the last page or a failed request.
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future keeps `self`, whose drop aborts the task.
    pub(crate) async fn next_token(&mut self) -> Option<String> {
        let rx = self.next.take()?;
        rx.await.ok().flatten()
    }

    /// The decoded page, or `None` if the task did not finish (it panicked).
    ///
    /// # Cancel safety
    /// Cancel-safe, as [`Prefetch::next_token`].
    pub(crate) async fn wait(&mut self) -> Option<Result<Page<K>, ListWatchError>> {
        let task = self.task.as_mut()?;
        let result = task.await.ok();
        self.task = None;
        result
    }
}

impl<K> Drop for Prefetch<K> {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// At most one page requested ahead, owned by one lister-watcher.
pub(crate) struct PrefetchSlot<K> {
    /// Guarded by its own mutex; never held across an await.
    next: Mutex<Option<Prefetch<K>>>,
}

impl<K> Default for PrefetchSlot<K> {
    fn default() -> Self {
        PrefetchSlot {
            next: Mutex::new(None),
        }
    }
}

impl<K> PrefetchSlot<K> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Prefetch<K>>> {
        self.next.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The page requested ahead for `uri`, if that is the one waiting; any other
    /// waiting request is dropped (its task aborted).
    pub(crate) fn take(&self, uri: &str) -> Option<Prefetch<K>> {
        let waiting = self.lock().take()?;
        (waiting.uri == uri).then_some(waiting)
    }

    /// Keeps the page requested ahead for `uri` until the pager asks for `uri`.
    /// `next` receives the token of the page after it; `task` fetches and decodes.
    pub(crate) fn put(
        &self,
        uri: String,
        next: oneshot::Receiver<Option<String>>,
        task: JoinHandle<Result<Page<K>, ListWatchError>>,
    ) {
        *self.lock() = Some(Prefetch {
            uri,
            next: Some(next),
            task: Some(task),
        });
    }
}

/// The `metadata.continue` of a list body, read without decoding `items`: `None`
/// when there is none, when `items` comes first, or when the head is not JSON.
pub(crate) fn peek_continue(body: &[u8]) -> Option<String> {
    let mut found = None;
    let mut de = serde_json::Deserializer::from_slice(body);
    // Stopping early leaves the rest unread, which the deserializer reports as an
    // error; what was found before that point is all that matters.
    let _ = Head { found: &mut found }.deserialize(&mut de);
    found.filter(|token| !token.is_empty())
}

/// Reads a list's top-level keys up to `metadata` (or `items`).
struct Head<'a> {
    found: &'a mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Head<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Head<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "metadata" => {
                    let meta: ListMeta = map.next_value()?;
                    *self.found = meta.continue_;
                    return Ok(());
                }
                "items" => return Ok(()),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn peek_reads_the_token_before_items() {
        let body = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"abc","remainingItemCount":3},"items":[{"broken"#;
        assert_eq!(peek_continue(body).as_deref(), Some("abc"));
    }

    #[test]
    fn peek_finds_nothing_without_a_token_or_after_items() {
        let last = br#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"7"},"items":[]}"#;
        assert_eq!(peek_continue(last), None);
        let empty = br#"{"metadata":{"continue":""},"items":[]}"#;
        assert_eq!(peek_continue(empty), None);
        let items_first = br#"{"items":[],"metadata":{"continue":"abc"}}"#;
        assert_eq!(peek_continue(items_first), None);
        assert_eq!(peek_continue(b"not json"), None);
        assert_eq!(peek_continue(b""), None);
    }

    fn page(rv: &str) -> Page<u8> {
        Page {
            types: TypeMeta::default(),
            metadata: ListMeta {
                resource_version: Some(rv.into()),
                ..ListMeta::default()
            },
            items: Vec::new(),
        }
    }

    /// A task that never finishes; dropping `tx` reports that it was aborted.
    fn stuck(tx: oneshot::Sender<()>) -> JoinHandle<Result<Page<u8>, ListWatchError>> {
        tokio::spawn(async move {
            let _keep = tx;
            std::future::pending::<()>().await;
            Ok(page("0"))
        })
    }

    #[tokio::test]
    async fn slot_hands_out_only_the_matching_request_and_aborts_others() {
        let slot = PrefetchSlot::<u8>::default();
        let (token_tx, token_rx) = oneshot::channel();
        slot.put(
            "/a?continue=1".into(),
            token_rx,
            tokio::spawn(async move {
                let _ = token_tx.send(Some("2".into()));
                Ok(page("7"))
            }),
        );
        let mut waiting = slot.take("/a?continue=1").expect("the matching request");
        assert_eq!(waiting.next_token().await.as_deref(), Some("2"));
        let listed: ObjectList<u8> = waiting.wait().await.unwrap().unwrap().into();
        assert_eq!(listed.metadata.resource_version.as_deref(), Some("7"));
        assert!(slot.take("/a?continue=1").is_none(), "taken once");

        let (tx, rx) = oneshot::channel::<()>();
        let (_token_tx, token_rx) = oneshot::channel();
        slot.put("/a?continue=2".into(), token_rx, stuck(tx));
        assert!(slot.take("/a?continue=3").is_none(), "another URL");
        // The mismatched request's task was aborted: its sender is dropped.
        assert!(rx.await.is_err());

        // A list cancelled while it waits aborts the request too.
        let (tx, rx) = oneshot::channel::<()>();
        let (_token_tx, token_rx) = oneshot::channel();
        slot.put("/a?continue=4".into(), token_rx, stuck(tx));
        let mut waiting = slot.take("/a?continue=4").unwrap();
        assert!(
            waiting.wait().now_or_never().is_none(),
            "the request is stuck"
        );
        drop(waiting);
        assert!(rx.await.is_err());
    }
}
