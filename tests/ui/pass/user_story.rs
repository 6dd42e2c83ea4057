//! The user story, as written, with every warning denied in the generated code.
#![deny(warnings, missing_docs)]

use kube::CustomResource;
use reflector::Reflect;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Status.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema)]
pub struct WidgetStatus {
    ready: bool,
}

/// Spec.
#[derive(CustomResource, Reflect, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus")]
#[reflect(index(name = "by_app", label = "app"))]
pub struct WidgetSpec {
    #[reflect(index)]          // → by_owner
    owner: String,
    #[reflect(index)]          // Vec → one index value per element → by_tags
    tags: Vec<String>,
    #[reflect(index)]          // Option → no value when None → by_parent
    parent: Option<String>,
    size: u32,
}

fn queries(lister: &reflector::lister::Lister<Widget>) -> Result<usize, reflector::store::StoreError> {
    let keys: Vec<reflector::object::ObjectRef<Widget>> = lister.by_owner_keys("alice")?;
    Ok(lister.by_owner("alice")?.len()
        + lister.by_tags("blue")?.len()
        + lister.by_parent("p")?.len()
        + lister.by_app("web")?.len()
        + keys.len())
}

fn plumbing(client: kube::Client, factory: &reflector::informer::InformerFactory) {
    let _lw = Widget::lister_watcher(client.clone()).namespace("ns").labels("app=web").fields("metadata.name=a");
    let informer = Widget::informer(client);
    let shared = factory.reflected::<Widget>();
    let _ = informer.add_event_fn(|ev: reflector::informer::Change<Widget>| {
        let _ = ev.object().spec.size;
    });
    let _ = shared.by_owner(42);
    let _ = queries(&informer.lister());
    let _: reflector::store::Indexers<Widget> = Widget::indexers();
}

fn main() {
    let _ = plumbing;
}
