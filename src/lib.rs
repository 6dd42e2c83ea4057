//! # reflector
//!
//! Kubernetes client-go's informer machinery — Reflector, DeltaFIFO,
//! SharedIndexInformer, Indexer, WorkQueue — for async Rust on [`kube`] and
//! [`k8s_openapi`].
//!
//! This facade re-exports [`reflector_core`]; see its modules, which follow the data
//! path: [`listwatch`] → [`reflector`] → [`store`].
//!
//! [`kube`]: https://docs.rs/kube
//! [`k8s_openapi`]: https://docs.rs/k8s-openapi

pub use reflector_core::*;
pub use reflector_core::reflect::Reflect;
pub use reflector_derive::Reflect;

/// The names most programs need, in one `use reflector::prelude::*;`.
pub mod prelude {
    pub use reflector_core::listwatch::{ApiListerWatcher, ListerWatcher};
    pub use reflector_core::object::{DeletedObject, ObjectKey};
    pub use reflector_core::reflect::{IndexQuery, Reflect};
    pub use reflector_core::reflector::{Reflector, ReflectorOptions};
    pub use reflector_derive::Reflect;
    pub use reflector_core::store::Store;
}
