//! Waiting on the API server for an object to reach a state: read once, then watch
//! it by name from that version, never polling.

use std::fmt::Debug;

use futures::StreamExt;
use kube::api::{Api, WatchEvent, WatchParams};
use serde::de::DeserializeOwned;

use super::patience::PATIENCE;

/// Returns `name` once `done` holds for it; panics saying `what` after [`PATIENCE`].
pub async fn wait_object<K>(api: &Api<K>, name: &str, what: &str, done: impl Fn(&K) -> bool) -> K
where
    K: kube::Resource + Clone + Debug + DeserializeOwned + Send + 'static,
{
    let current = api.get(name).await.unwrap();
    if done(&current) {
        return current;
    }
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let version = current.meta().resource_version.clone().unwrap();
    let mut events = api.watch(&params, &version).await.unwrap().boxed();
    let found = tokio::time::timeout(PATIENCE, async {
        while let Some(event) = events.next().await {
            match event.unwrap() {
                WatchEvent::Added(object) | WatchEvent::Modified(object) if done(&object) => {
                    return object;
                }
                WatchEvent::Error(e) => panic!("watching {name}: {e:?}"),
                _ => {}
            }
        }
        panic!("the watch of {name} ended");
    })
    .await;
    found.unwrap_or_else(|_| panic!("{what}"))
}
