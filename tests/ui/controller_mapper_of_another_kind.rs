// A `watches` mapper of a Deployment controller returns ConfigMap keys: rejected
// at compile time, so no key of another kind can reach the queue.
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use reflector::prelude::*;

fn build(client: kube::Client) {
    let factory = InformerFactory::new(client);
    let _controller = Controller::new(factory.informer::<Deployment>())
        .watches(factory.informer::<Secret>(), |s: &Secret| {
            let name = s.metadata.name.as_deref().unwrap_or_default();
            Some(ObjectRef::<ConfigMap>::new(s.metadata.namespace.as_deref(), name))
        });
}

fn main() {}
