//! Read-ahead of the next list page while the current one is decoded.
//!
//! A paginated list is a chain: page N's `metadata.continue` names page N+1. The API
//! server writes `metadata` before `items`, so the token can be read from the first
//! bytes of page N's body, and page N+1 requested right away: the server serves it
//! and the bytes cross the socket while this side decodes page N, instead of the
//! two taking turns. The request is exactly the one the pager sends next (same URL,
//! same query); it is used only if the pager asks for that very URL, and dropped
//! (its task aborted) otherwise.

use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use tokio::task::JoinHandle;

use super::ListWatchError;

/// One request sent ahead. Its task is aborted when this is dropped, so a list
/// cancelled while it waits for the answer leaves nothing running.
pub(crate) struct Prefetch {
    /// The request's path and query.
    uri: String,
    /// `None` once handed out.
    task: Option<JoinHandle<Result<Bytes, ListWatchError>>>,
}

impl Prefetch {
    /// The response body, or `None` if the task did not finish (it panicked).
    ///
    /// # Cancel safety
    /// Cancel-safe: dropping the future keeps `self`, whose drop aborts the task.
    pub(crate) async fn wait(&mut self) -> Option<Result<Bytes, ListWatchError>> {
        let task = self.task.as_mut()?;
        let result = task.await.ok();
        self.task = None;
        result
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// At most one page requested ahead, owned by one lister-watcher.
#[derive(Default)]
pub(crate) struct PrefetchSlot {
    /// Guarded by its own mutex; never held across an await.
    next: Mutex<Option<Prefetch>>,
}

impl PrefetchSlot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Prefetch>> {
        self.next.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The request sent ahead for `uri`, if that is the one waiting; any other
    /// waiting request is dropped (its task aborted).
    pub(crate) fn take(&self, uri: &str) -> Option<Prefetch> {
        let waiting = self.lock().take()?;
        (waiting.uri == uri).then_some(waiting)
    }

    /// Keeps `task` (the request for `uri`) until the pager asks for `uri`.
    pub(crate) fn put(&self, uri: String, task: JoinHandle<Result<Bytes, ListWatchError>>) {
        *self.lock() = Some(Prefetch {
            uri,
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

    #[tokio::test]
    async fn slot_hands_out_only_the_matching_request_and_aborts_others() {
        let slot = PrefetchSlot::default();
        slot.put(
            "/a?continue=1".into(),
            tokio::spawn(async { Ok(Bytes::from("one")) }),
        );
        let mut waiting = slot.take("/a?continue=1").expect("the matching request");
        assert_eq!(waiting.wait().await.unwrap().unwrap(), Bytes::from("one"));
        assert!(slot.take("/a?continue=1").is_none(), "taken once");

        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        slot.put(
            "/a?continue=2".into(),
            tokio::spawn(async move {
                let _keep = tx;
                std::future::pending::<()>().await;
                Ok(Bytes::new())
            }),
        );
        assert!(slot.take("/a?continue=3").is_none(), "another URL");
        // The mismatched request's task was aborted: its sender is dropped.
        assert!(rx.await.is_err());

        // A list cancelled while it waits aborts the request too.
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        slot.put(
            "/a?continue=4".into(),
            tokio::spawn(async move {
                let _keep = tx;
                std::future::pending::<()>().await;
                Ok(Bytes::new())
            }),
        );
        let mut waiting = slot.take("/a?continue=4").unwrap();
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(1), waiting.wait())
                .await
                .is_err()
        );
        drop(waiting);
        assert!(rx.await.is_err());
    }
}
