use k8s_openapi::api::core::v1::Pod;
use reflector::informer::InformerFactory;

fn informer(factory: &InformerFactory) {
    let _ = factory.reflected::<Pod>();
}

fn main() {}
